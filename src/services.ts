import { createFirmwareBridge, registerBridgeMetrics } from '../firmware-bridge/index.js';
import { join } from 'node:path';
import { AccessEngine } from './access/engine.js';
import { SignedValues } from './access/signed-values.js';
import { DirectJournal } from './journal/direct-journal.js';
import { EventJournal, type Journal } from './journal/event-journal.js';
import { AccessEventLog } from './journal/event-log.js';
import { EventRetention } from './journal/event-retention.js';
import { ScanDeadlines } from './access/scan-deadlines.js';
import { ExternalChanges, registerExternalChangeMetrics } from './access/external-changes.js';
import { IndexSync } from './access/index-sync.js';
import { registerJournalMetrics } from './journal/journal-metrics.js';
import { Occupancy } from './access/occupancy.js';
import { PresenceSnapshots } from './access/presence.js';
import { ReaderScans } from './access/reader-scan.js';
import { ScanService } from './access/scan-service.js';
import { VenueIndex } from './access/venue-index.js';
import { MembershipRepository } from './accounts/memberships.js';
import { ProjectRepository } from './accounts/projects.js';
import { SettingsStore } from './accounts/settings.js';
import { TeamRepository } from './accounts/teams.js';
import { UserRepository } from './accounts/users.js';
import { IssuerAccess } from './accounts/issuer-access.js';
import { LoginThrottle } from './auth/login-throttle.js';
import { SessionService } from './auth/sessions.js';
import { TokenService } from './auth/tokens.js';
import type { Clock } from './clock.js';
import type { Config } from './config/schema.js';
import { DeviceTokens } from './devices/device-tokens.js';
import { Gateways } from './devices/gateways.js';
import { ReaderLogins } from './devices/reader-logins.js';
import { ReaderStates } from './devices/reader-state.js';
import { readerViews } from './devices/reader-view.js';
import { EventBus } from './events/bus.js';
import type { Logger } from './logger.js';
import { HttpMetrics } from './metrics.js';
import { Feed } from './feed/feed.js';
import { ObservedEvents } from './feed/observed.js';
import { Deliveries } from './outgoing-webhooks/deliveries.js';
import { Dispatcher } from './outgoing-webhooks/dispatcher.js';
import { registerOutgoingMetrics } from './outgoing-webhooks/metrics.js';
import { ReceiverPolicy } from './outgoing-webhooks/receiver-policy.js';
import { Sender } from './outgoing-webhooks/sender.js';
import { Subscriptions } from './outgoing-webhooks/subscriptions.js';
import { SyncServices } from '../sync/index.js';
import { registerSyncMetrics } from '../sync/metrics.js';
import { RedisConnections } from './cluster/redis.js';
import { RealtimeAccessWatch } from './realtime/access-watch.js';
import { LocalAdapter, type ChannelAdapter } from './realtime/adapter.js';
import { ChannelRegistry } from './realtime/channels.js';
import { RedisAdapter } from './realtime/redis-adapter.js';
import { Broadcaster } from './realtime/broadcaster.js';
import { resolvePusherCredentials } from './realtime/credentials.js';
import { ChannelCipher } from './realtime/encryption.js';
import { ChannelGrants } from './realtime/grants.js';
import { registerRealtimeMetrics } from './realtime/metrics.js';
import { PusherServer } from './realtime/server.js';
import { Checkpointer } from './store/checkpointer.js';
import { DELIVERY_LEASE, lease } from './store/postgres/lease.js';
import type { PgDatabase } from './store/postgres/pg-database.js';
import type { Store } from './store/database.js';
import { createVenue } from './venue/index.js';
import { FailureThrottle, registerThrottleMetrics } from './webhooks/failure-throttle.js';
import { registerReceiptMetrics, WebhookReceipts } from './webhooks/receipts.js';
import { registerReplayMetrics, ReplayWindow } from './webhooks/replay-window.js';
import { IncomingWebhookLog } from './webhooks/request-log.js';
import { SignedWebhookGate } from './webhooks/signed-gate.js';
import { WebhookSources } from './webhooks/sources.js';
import { UploadImports } from './webhooks/upload-imports.js';
import { AttendeeSync } from './webhooks/attendee-sync.js';
import { RegistrationPartner } from './webhooks/registration-partner.js';
import { ClockOffset } from './clock-offset.js';
import type { ServiceOverrides, Services } from './service-map.js';

export type { ServiceOverrides, Services } from './service-map.js';

// The domain services, built in one place from the validated config and an open store
// (the one composition root; docs/architecture.md). Building does nothing else: no timer, thread or listener
// starts here; src/app.ts puts the long-lived ones in its lifecycle list. Transports take
// what they need from here: HTTP its narrow view (http/deps.ts), MQTT its own (mqtt/wiring.ts).

export function buildServices(
  config: Readonly<Config>,
  store: Store,
  clock: Clock,
  log: Logger,
  overrides: ServiceOverrides = {},
): Services {
  const db = store.db;
  const bus = new EventBus(log.child({ module: 'bus' }));
  // Several instances of a cloud share their fan-out and rate limits through Redis (docs/realtime.md).
  const redis = config.redis.url
    ? new RedisConnections(
        { url: config.redis.url, connectTimeoutMs: config.redis.connectTimeoutMs },
        log.child({ module: 'redis' }),
      )
    : null;
  const metrics = new HttpMetrics();

  const settings = new SettingsStore(db, clock, { token_expiry_minutes: config.auth.tokenExpiryMinutes }, bus);
  const tokens = new TokenService(db, clock, () => settings.get().token_expiry_minutes, bus);
  const sessions = new SessionService(db, clock, config.auth.sessionLifetimeMinutes, bus);
  const users = new UserRepository(db, clock, bus);
  const projects = new ProjectRepository(db, clock, bus);
  const accounts = {
    settings,
    tokens,
    sessions,
    users,
    teams: new TeamRepository(db, clock),
    projects,
    memberships: new MembershipRepository(db, clock, bus),
    loginThrottle: new LoginThrottle({
      failuresPerAccount: config.auth.loginFailuresPerAccount,
      windowSeconds: config.auth.loginFailureWindowSeconds,
    }),
  };

  const venue = createVenue(db, clock, bus, config.role !== 'edge');
  // An edge's clock against its cloud's: measured by the sync link, stamped on each scan (docs/sync.md: clocks).
  const clockOffset = new ClockOffset(config.sync.clockToleranceMs, () => clock.now());
  const index = new VenueIndex(db);
  const occupancy = new Occupancy();
  // Signed values the index does not hold: verified with a per-reader budget (docs/credentials.md).
  const engine = new AccessEngine(
    index,
    occupancy,
    new SignedValues(index.keys, { verificationsPerSecond: config.credentials.verificationsPerSecond }),
  );
  // On PostgreSQL (a cloud's store) the rows go into the table at once (journal/direct-journal.ts).
  const journal: Journal = store.postgres
    ? new DirectJournal(db)
    : new EventJournal(
        db,
        {
          dir: join(store.dir, 'journal'),
          dbFile: store.file,
          synchronous: config.store.synchronous,
          segmentBytes: config.store.journalSegmentBytes,
          intervalMs: config.store.ingestIntervalMs,
        },
        log.child({ module: 'event-journal' }),
      );
  const eventLog = new AccessEventLog(journal, config.store.maxBatch);
  // Every scan answered within mqtt.answerTimeoutMs, or its sender let go (docs/mqtt.md, "Answered in bounded time").
  const deadlines = new ScanDeadlines(config.mqtt.answerTimeoutMs, metrics.registry);
  const readerStates = new ReaderStates(clock, bus);
  const access = {
    index,
    indexSync: new IndexSync(bus, index, occupancy),
    occupancy,
    engine,
    journal,
    eventLog,
    deadlines,
    scans: new ScanService(
      db,
      clock,
      bus,
      engine,
      index,
      eventLog,
      deadlines,
      config.role === 'edge' ? clockOffset : null,
    ),
    readerScans: new ReaderScans(index, readerStates, () => clock.now()),
    presence: new PresenceSnapshots(db, occupancy, (id) => index.attendees.has(id), log.child({ module: 'presence' })),
    // Venue changes by other processes (the CLI, any tool writing the store).
    externalChanges: new ExternalChanges(db, index, bus, venue, log.child({ module: 'access' })),
    retention: new EventRetention(db, clock, config, log.child({ module: 'retention' }), metrics.registry), // docs/storage.md: retention
  };

  const deviceTokens = new DeviceTokens(db, clock, bus);
  const devices = {
    logins: new ReaderLogins(db, clock, deviceTokens, config.readers, bus),
    tokens: deviceTokens,
    gateways: new Gateways(db, clock, bus, readerStates),
    readerStates,
  };

  const { pusher } = config;
  const credentials = resolvePusherCredentials(db, clock, pusher);
  const grants = new ChannelGrants({ users, tokens, sessions, projects });
  const registry = new ChannelRegistry();
  const adapter: ChannelAdapter = redis
    ? new RedisAdapter(registry, redis, config.redis, log.child({ module: 'realtime' }))
    : new LocalAdapter(registry);
  const server = new PusherServer(
    {
      appId: credentials.appId,
      key: credentials.key,
      secret: credentials.secret,
      activityTimeoutSeconds: pusher.activityTimeoutSeconds,
      pongTimeoutSeconds: pusher.pongTimeoutSeconds,
      maxConnections: pusher.maxConnections,
      maxMessageBytes: pusher.maxMessageBytes,
      maxBufferedBytes: pusher.maxBufferedBytes,
      clientEvents: pusher.clientEvents,
      clientEventsPerSecond: pusher.clientEventsPerSecond,
      maxFailedSubscriptions: 10,
    },
    log.child({ module: 'realtime' }),
    grants,
    registry,
    adapter,
  );
  const cipher = new ChannelCipher(credentials.encryptionMasterKey);
  const realtime = {
    adapter,
    server,
    credentials,
    cipher,
    grants,
    broadcaster: new Broadcaster(server, bus, projects, occupancy, index, {
      eventNamespace: pusher.eventNamespace,
      cipher,
      accessPointView: readerViews(venue.readers, readerStates).accessPoint,
    }),
    accessWatch: new RealtimeAccessWatch(
      server,
      grants,
      bus,
      pusher.accessRecheckIntervalMs,
      log.child({ module: 'realtime' }),
    ),
  };

  const incoming = config.incomingWebhooks;
  const sources = new WebhookSources(db, clock);
  const replays = new ReplayWindow(clock, {
    windowMs: incoming.timestampToleranceSeconds * 1000,
    maxEntries: incoming.replayMaxEntries,
    maxBytes: incoming.replayMaxBytes,
    maxAnswerBytes: incoming.replayMaxAnswerBytes,
    waitMs: incoming.replayWaitMs,
  });
  const receipts = new WebhookReceipts(
    db,
    clock,
    {
      receiptDays: incoming.receiptDays,
      maxRows: incoming.receiptMaxRows,
      maxAnswerBytes: incoming.replayMaxAnswerBytes,
    },
    log.child({ module: 'webhooks' }),
  );
  const webhooks = {
    sources,
    replays,
    log: new IncomingWebhookLog(db, clock, {
      days: incoming.logRetentionDays,
      maxRows: incoming.logMaxRows,
      maxNotAppliedRows: incoming.logMaxNotAppliedRows,
    }),
    receipts,
    throttle: new FailureThrottle(incoming.failuresPerMinute, log.child({ module: 'webhooks' })),
    gate: new SignedWebhookGate(
      sources,
      clock,
      {
        headerPrefix: incoming.headerPrefix,
        toleranceSeconds: incoming.timestampToleranceSeconds,
        allowUnsigned: incoming.allowUnsigned,
      },
      replays,
      receipts,
    ),
    uploads: new UploadImports(db, clock, venue.importer, incoming, log.child({ module: 'uploads' })),
    attendeeSync: new AttendeeSync(db, clock, bus),
    partner: new RegistrationPartner(db, clock, bus, venue),
  };

  const hook = config.webhook;
  const feed = new Feed(db);
  const policy = new ReceiverPolicy({ allowInsecure: hook.allowInsecure, allowedNetworks: hook.allowedNetworks });
  const subscriptions = new Subscriptions(db, clock, bus, feed, policy, hook.secretGraceHours * 3_600_000);
  const deliveries = new Deliveries(db, clock, feed);
  const sync = new SyncServices({
    db,
    clock,
    bus,
    config,
    log: log.child({ module: 'sync' }),
    feed,
    occupancy,
    index,
    externalChanges: access.externalChanges,
    teams: accounts.teams,
    projects,
    appVersion: '1.0.0',
    scansSoFar: () => eventLog.stats.events,
    clockOffset,
  });
  registerSyncMetrics(metrics.registry, sync);
  // Edges and subscriptions stand on their issuer's access to the
  // project (docs/security.md "Credentials outlive their issuer").
  const issuerAccess = new IssuerAccess(
    bus,
    users,
    projects,
    { edges: sync.edges, subscriptions },
    log.child({ module: 'issuer-access' }),
  );
  const dispatcher = new Dispatcher(
    clock,
    bus,
    feed,
    subscriptions,
    deliveries,
    new Sender(policy, { timeoutMs: hook.timeoutMs, maxResponseBytes: hook.maxResponseBytes }),
    {
      // Several instances on one PostgreSQL database: one delivers at a time (each delivery once, in order).
      ...(store.postgres ? { delivers: lease(db as unknown as PgDatabase, DELIVERY_LEASE) } : {}),
      headerPrefix: hook.headerPrefix,
      concurrency: hook.concurrency,
      retrySchedule: hook.retrySchedule,
      disableAfterMs: hook.disableAfterHours * 3_600_000,
      batch: 100,
      pollMs: hook.pollMs,
      busyScansPerSecond: hook.busyScansPerSecond,
      busyDeliveriesPerSecond: hook.busyDeliveriesPerSecond,
    },
    log.child({ module: 'webhooks-out' }),
    () => eventLog.stats.events,
    (row) => issuerAccess.subscriptionHolds(row),
  );
  // New access events in access_events: the feed grew, as when commit() or the observed-state writer appends.
  journal.onIngest(() => bus.emit('feed.appended', { by: 'ingest' }));
  const outgoing = {
    feed,
    policy,
    subscriptions,
    deliveries,
    dispatcher,
    observed: new ObservedEvents(db, bus, index, occupancy, log.child({ module: 'feed' })),
  };
  registerOutgoingMetrics(metrics.registry, subscriptions, deliveries, dispatcher);
  const bridge = createFirmwareBridge({
    db,
    clock,
    bus,
    log,
    config,
    venue,
    index,
    projects,
    readerScans: access.readerScans,
    scans: access.scans,
    readerStates,
    ...(overrides.hidBackend ? { hidBackend: overrides.hidBackend } : {}),
  });
  registerBridgeMetrics(metrics.registry, bridge.runtime);

  registerExternalChangeMetrics(metrics.registry, access.externalChanges);
  registerRealtimeMetrics(metrics.registry, server);
  registerJournalMetrics(metrics.registry, journal);
  registerReplayMetrics(metrics.registry, replays);
  registerReceiptMetrics(metrics.registry, receipts);
  registerThrottleMetrics(metrics.registry, webhooks.throttle);

  const checkpointer = new Checkpointer(
    { file: store.file, synchronous: config.store.synchronous, intervalMs: config.store.checkpointIntervalMs },
    log.child({ module: 'checkpoint' }),
  );
  return {
    config,
    log,
    clock,
    store,
    redis,
    bus,
    metrics,
    checkpointer,
    accounts,
    issuerAccess,
    venue,
    access,
    devices,
    realtime,
    outgoing,
    sync,
    bridge,
    webhooks,
  };
}
