import type { Clock } from '../clock.js';
import type { Config } from '../config/schema.js';
import type { Logger } from '../logger.js';
import type { Store } from '../store/database.js';
import type { TokenService } from '../auth/tokens.js';
import type { SessionService } from '../auth/sessions.js';
import type { UserRepository } from '../accounts/users.js';
import type { TeamRepository } from '../accounts/teams.js';
import type { ProjectRepository } from '../accounts/projects.js';
import type { MembershipRepository } from '../accounts/memberships.js';
import type { SettingsStore } from '../accounts/settings.js';
import type { HttpMetrics } from '../metrics.js';
import type { RateLimits } from './rate-limit.js';
import type { LoginThrottle } from '../auth/login-throttle.js';
import type { EventBus } from '../events/bus.js';
import type { Venue } from '../venue/index.js';
import type { AccessEngine } from '../access/engine.js';
import type { ScanService } from '../access/scan-service.js';
import type { ReaderScans } from '../access/reader-scan.js';
import type { VenueIndex } from '../access/venue-index.js';
import type { WebhookGate } from '../webhooks/gate.js';
import type { WebhookSources } from '../webhooks/sources.js';
import type { IncomingWebhookLog } from '../webhooks/request-log.js';
import type { FailureThrottle } from '../webhooks/failure-throttle.js';
import type { UploadImports } from '../webhooks/upload-imports.js';
import type { PusherServer } from '../realtime/server.js';
import type { PusherCredentials } from '../realtime/credentials.js';
import type { ChannelCipher } from '../realtime/encryption.js';
import type { ReaderLogins } from '../devices/reader-logins.js';
import type { DeviceTokens } from '../devices/device-tokens.js';
import type { Gateways } from '../devices/gateways.js';
import type { ReaderStates } from '../devices/reader-state.js';

/** Readers and gateways on the broker (issue 7). */
export interface DeviceDeps {
  logins: ReaderLogins;
  tokens: DeviceTokens;
  gateways: Gateways;
  readerStates: ReaderStates;
  /** The broker's listening ports (0 before it started). */
  mqttPorts(): { tcp: number; tls: number | null };
}

/** What the HTTP layer is given by the composition root. */
export interface HttpDeps {
  config: Readonly<Config>;
  log: Logger;
  clock: Clock;
  store: Store;
  tokens: TokenService;
  sessions: SessionService;
  users: UserRepository;
  teams: TeamRepository;
  projects: ProjectRepository;
  memberships: MembershipRepository;
  settings: SettingsStore;
  metrics: HttpMetrics;
  rateLimits: RateLimits;
  /** Failed logins per account (issue 23 item 11). */
  loginThrottle: LoginThrottle;
  bus: EventBus;
  venue: Venue;
  engine: AccessEngine;
  scans: ScanService;
  venueIndex: VenueIndex;
  /** The reader-scan translation every transport shares (access/reader-scan.ts). */
  readerScans: ReaderScans;
  webhookGate: WebhookGate;
  webhookSources: WebhookSources;
  webhookLog: IncomingWebhookLog;
  webhookThrottle: FailureThrottle;
  uploads: UploadImports;
  realtime: { server: PusherServer; credentials: PusherCredentials; cipher: ChannelCipher };
  devices: DeviceDeps;
  isReady(): boolean;
}
