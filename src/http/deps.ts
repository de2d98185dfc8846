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
import { RateLimits } from './rate-limit.js';
import type { Services } from '../service-map.js';
import type { LoginThrottle } from '../auth/login-throttle.js';
import type { Venue } from '../venue/index.js';
import type { ScanService } from '../access/scan-service.js';
import type { Occupancy } from '../access/occupancy.js';
import type { ReaderScans } from '../access/reader-scan.js';
import type { VenueIndex } from '../access/venue-index.js';
import type { WebhookGate } from '../webhooks/gate.js';
import type { WebhookSources } from '../webhooks/sources.js';
import type { IncomingWebhookLog } from '../webhooks/request-log.js';
import type { FailureThrottle } from '../webhooks/failure-throttle.js';
import type { UploadImports } from '../webhooks/upload-imports.js';
import type { AttendeeSync } from '../webhooks/attendee-sync.js';
import type { RegistrationPartner } from '../webhooks/registration-partner.js';
import type { PusherServer } from '../realtime/server.js';
import type { PusherCredentials } from '../realtime/credentials.js';
import type { ChannelCipher } from '../realtime/encryption.js';
import type { ReaderLogins } from '../devices/reader-logins.js';
import type { DeviceTokens } from '../devices/device-tokens.js';
import type { Gateways } from '../devices/gateways.js';
import type { ReaderStates } from '../devices/reader-state.js';

/** Readers and gateways on the broker (docs/mqtt.md). */
export interface DeviceDeps {
  logins: ReaderLogins;
  tokens: DeviceTokens;
  gateways: Gateways;
  readerStates: ReaderStates;
  /** The broker's listening ports (0 before it started). */
  mqttPorts(): { tcp: number; tls: number | null };
}

/** What the routes and the HTTP middleware need: a narrow view of the services (src/services.ts). */
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
  /** Failed logins per account (docs/security.md, attack 11). */
  loginThrottle: LoginThrottle;
  venue: Venue;
  scans: ScanService;
  /** Zones' live counts. */
  occupancy: Occupancy;
  venueIndex: VenueIndex;
  /** The reader-scan translation every transport shares (access/reader-scan.ts). */
  readerScans: ReaderScans;
  webhookGate: WebhookGate;
  webhookSources: WebhookSources;
  webhookLog: IncomingWebhookLog;
  webhookThrottle: FailureThrottle;
  uploads: UploadImports;
  /** Outgoing webhooks: subscriptions, the delivery log, resends. */
  outgoing: Pick<Services['outgoing'], 'subscriptions' | 'deliveries' | 'dispatcher'>;
  attendeeSync: AttendeeSync;
  registrationPartner: RegistrationPartner;
  realtime: { server: PusherServer; credentials: PusherCredentials; cipher: ChannelCipher };
  devices: DeviceDeps;
  /** Cloud sync: edges, the protocol, status and conflicts (docs/sync.md). */
  sync: Services['sync'];
  /** Whether an edge still stands on its issuer's access (checked at every request of the sync protocol). */
  issuerAccess: Services['issuerAccess'];
  /** Readers plugged into the box: their record and their live state (docs/bridge.md). */
  bridge: { devices: Services['bridge']['devices']; runtime: Services['bridge']['runtime'] };
  isReady(): boolean;
}

/** The routes' view of the services; `mqttPorts` and `isReady` come from the app. */
export function httpDepsOf(
  s: Services,
  app: { mqttPorts(): { tcp: number; tls: number | null }; isReady(): boolean },
): HttpDeps {
  const { accounts, access, webhooks, devices } = s;
  return {
    config: s.config,
    log: s.log.child({ module: 'http' }),
    clock: s.clock,
    store: s.store,
    ...accounts,
    metrics: s.metrics,
    rateLimits: new RateLimits(
      s.config.rateLimit,
      s.redis && { client: s.redis.command, keyPrefix: s.config.redis.keyPrefix },
    ),
    venue: s.venue,
    scans: access.scans,
    occupancy: access.occupancy,
    venueIndex: access.index,
    readerScans: access.readerScans,
    webhookGate: webhooks.gate,
    webhookSources: webhooks.sources,
    webhookLog: webhooks.log,
    webhookThrottle: webhooks.throttle,
    uploads: webhooks.uploads,
    outgoing: s.outgoing,
    attendeeSync: webhooks.attendeeSync,
    registrationPartner: webhooks.partner,
    realtime: { server: s.realtime.server, credentials: s.realtime.credentials, cipher: s.realtime.cipher },
    devices: { ...devices, mqttPorts: app.mqttPorts },
    sync: s.sync,
    issuerAccess: s.issuerAccess,
    bridge: { devices: s.bridge.devices, runtime: s.bridge.runtime },
    isReady: app.isReady,
  };
}
