import type { FirmwareBridgeParts, HidBackend } from '../firmware-bridge/index.js';
import type { AccessEngine } from './access/engine.js';
import type { Journal } from './journal/event-journal.js';
import type { AccessEventLog } from './journal/event-log.js';
import type { EventRetention } from './journal/event-retention.js';
import type { ScanDeadlines } from './access/scan-deadlines.js';
import type { ExternalChanges } from './access/external-changes.js';
import type { IndexSync } from './access/index-sync.js';
import type { Occupancy } from './access/occupancy.js';
import type { PresenceSnapshots } from './access/presence.js';
import type { ReaderScans } from './access/reader-scan.js';
import type { ScanService } from './access/scan-service.js';
import type { VenueIndex } from './access/venue-index.js';
import type { MembershipRepository } from './accounts/memberships.js';
import type { ProjectRepository } from './accounts/projects.js';
import type { SettingsStore } from './accounts/settings.js';
import type { TeamRepository } from './accounts/teams.js';
import type { UserRepository } from './accounts/users.js';
import type { IssuerAccess } from './accounts/issuer-access.js';
import type { LoginThrottle } from './auth/login-throttle.js';
import type { SessionService } from './auth/sessions.js';
import type { TokenService } from './auth/tokens.js';
import type { Clock } from './clock.js';
import type { RedisConnections } from './cluster/redis.js';
import type { Config } from './config/schema.js';
import type { DeviceTokens } from './devices/device-tokens.js';
import type { Gateways } from './devices/gateways.js';
import type { ReaderLogins } from './devices/reader-logins.js';
import type { ReaderStates } from './devices/reader-state.js';
import type { EventBus } from './events/bus.js';
import type { Logger } from './logger.js';
import type { HttpMetrics } from './metrics.js';
import type { Feed } from './feed/feed.js';
import type { ObservedEvents } from './feed/observed.js';
import type { Deliveries } from './outgoing-webhooks/deliveries.js';
import type { Dispatcher } from './outgoing-webhooks/dispatcher.js';
import type { ReceiverPolicy } from './outgoing-webhooks/receiver-policy.js';
import type { Subscriptions } from './outgoing-webhooks/subscriptions.js';
import type { SyncServices } from '../sync/index.js';
import type { RealtimeAccessWatch } from './realtime/access-watch.js';
import type { ChannelAdapter } from './realtime/adapter.js';
import type { Broadcaster } from './realtime/broadcaster.js';
import type { PusherCredentials } from './realtime/credentials.js';
import type { ChannelCipher } from './realtime/encryption.js';
import type { ChannelGrants } from './realtime/grants.js';
import type { PusherServer } from './realtime/server.js';
import type { Checkpointer } from './store/checkpointer.js';
import type { Store } from './store/database.js';
import type { Venue } from './venue/index.js';
import type { FailureThrottle } from './webhooks/failure-throttle.js';
import type { WebhookReceipts } from './webhooks/receipts.js';
import type { ReplayWindow } from './webhooks/replay-window.js';
import type { IncomingWebhookLog } from './webhooks/request-log.js';
import type { SignedWebhookGate } from './webhooks/signed-gate.js';
import type { WebhookSources } from './webhooks/sources.js';
import type { UploadImports } from './webhooks/upload-imports.js';
import type { AttendeeSync } from './webhooks/attendee-sync.js';
import type { RegistrationPartner } from './webhooks/registration-partner.js';

// The shape of the domain services (the composition root, services.ts, builds them): what HTTP
// (http/deps.ts) and MQTT (mqtt/wiring.ts) take their views from, without importing the wiring.

export interface Services {
  config: Readonly<Config>;
  log: Logger;
  clock: Clock;
  store: Store;
  /** The Redis of a cloud of several instances (cluster/redis.ts); null: everything in this process. */
  redis: RedisConnections | null;
  bus: EventBus;
  metrics: HttpMetrics;
  checkpointer: Checkpointer;
  accounts: {
    settings: SettingsStore;
    tokens: TokenService;
    sessions: SessionService;
    users: UserRepository;
    teams: TeamRepository;
    projects: ProjectRepository;
    memberships: MembershipRepository;
    loginThrottle: LoginThrottle;
  };
  /** Whether edges and webhook subscriptions still stand on their issuer's access (accounts/issuer-access.ts). */
  issuerAccess: IssuerAccess;
  venue: Venue;
  access: {
    index: VenueIndex;
    indexSync: IndexSync;
    occupancy: Occupancy;
    engine: AccessEngine;
    journal: Journal;
    eventLog: AccessEventLog;
    deadlines: ScanDeadlines;
    scans: ScanService;
    readerScans: ReaderScans;
    presence: PresenceSnapshots;
    externalChanges: ExternalChanges;
    retention: EventRetention;
  };
  devices: { logins: ReaderLogins; tokens: DeviceTokens; gateways: Gateways; readerStates: ReaderStates };
  realtime: {
    /** Where channels' subscribers are: here (LocalAdapter) or on every instance (RedisAdapter). */
    adapter: ChannelAdapter;
    server: PusherServer;
    credentials: PusherCredentials;
    cipher: ChannelCipher;
    grants: ChannelGrants;
    broadcaster: Broadcaster;
    accessWatch: RealtimeAccessWatch;
  };
  /** The durable feed and what reads it: outgoing webhooks (docs/webhooks-outgoing.md). */
  outgoing: {
    feed: Feed;
    policy: ReceiverPolicy;
    subscriptions: Subscriptions;
    deliveries: Deliveries;
    dispatcher: Dispatcher;
    observed: ObservedEvents;
  };
  /** Cloud sync by role (docs/sync.md). */
  sync: SyncServices;
  /** Readers plugged into the box (docs/bridge.md). */
  bridge: FirmwareBridgeParts;
  webhooks: {
    sources: WebhookSources;
    replays: ReplayWindow;
    log: IncomingWebhookLog;
    receipts: WebhookReceipts;
    throttle: FailureThrottle;
    gate: SignedWebhookGate;
    uploads: UploadImports;
    attendeeSync: AttendeeSync;
    partner: RegistrationPartner;
  };
}

/** What a caller may put in place of a real part (tests: USB HID devices of their own). */
export interface ServiceOverrides {
  /** USB HID devices of the caller's, or node-hid as if it could not load here. */
  hidBackend?: HidBackend | { unavailable: string };
}
