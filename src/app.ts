import { systemClock, type Clock } from './clock.js';
import type { Config } from './config/schema.js';
import { createLogger, type Logger } from './logger.js';
import { Store } from './store/database.js';
import { TokenService } from './auth/tokens.js';
import { SessionService } from './auth/sessions.js';
import { UserRepository } from './accounts/users.js';
import { TeamRepository } from './accounts/teams.js';
import { ProjectRepository } from './accounts/projects.js';
import { MembershipRepository } from './accounts/memberships.js';
import { SettingsStore } from './accounts/settings.js';
import { bootstrapFirstRun } from './accounts/bootstrap.js';
import { HttpMetrics } from './metrics.js';
import { RateLimits } from './http/rate-limit.js';
import { LoginThrottle } from './auth/login-throttle.js';
import { createHttpApp } from './http/app.js';
import { buildRouteTable } from './http/routes/index.js';
import { HttpServer } from './http/server.js';
import type { HttpDeps } from './http/deps.js';
import type { AnyRoute } from './http/route.js';
import { EventBus } from './events/bus.js';
import { createVenue } from './venue/index.js';
import { VenueIndex } from './access/venue-index.js';
import { syncIndexFromBus } from './access/index-sync.js';
import { ExternalChanges, registerExternalChangeMetrics } from './access/external-changes.js';
import { AccessEngine } from './access/engine.js';
import { Occupancy } from './access/occupancy.js';
import { ScanService } from './access/scan-service.js';
import { AnswerDeadlines } from './access/answer-deadlines.js';
import { join } from 'node:path';
import { EventJournal } from './access/event-journal.js';
import { AccessEventLog } from './access/event-log.js';
import { PresenceSnapshots } from './access/presence.js';
import { ReaderScans } from './access/reader-scan.js';
import { Checkpointer } from './store/checkpointer.js';
import { SignedWebhookGate } from './webhooks/signed-gate.js';
import { registerReplayMetrics, ReplayWindow } from './webhooks/replay-window.js';
import { WebhookSources } from './webhooks/sources.js';
import { IncomingWebhookLog } from './webhooks/request-log.js';
import { registerReceiptMetrics, WebhookReceipts } from './webhooks/receipts.js';
import { FailureThrottle, registerThrottleMetrics } from './webhooks/failure-throttle.js';
import { UploadImports } from './webhooks/upload-imports.js';
import { resolvePusherCredentials } from './realtime/credentials.js';
import { PusherServer } from './realtime/server.js';
import { Broadcaster } from './realtime/broadcaster.js';
import { ChannelCipher } from './realtime/encryption.js';
import { ChannelGrants } from './realtime/grants.js';
import { RealtimeAccessWatch } from './realtime/access-watch.js';
import { registerRealtimeMetrics } from './realtime/metrics.js';
import { registerJournalMetrics } from './access/journal-metrics.js';
import { UpgradeRouter } from './http/upgrade.js';
import { ReaderStates } from './devices/reader-state.js';
import { DeviceTokens } from './devices/device-tokens.js';
import { Gateways } from './devices/gateways.js';
import { ReaderLogins } from './devices/reader-logins.js';
import { MqttBroker } from './mqtt/broker.js';
import { MqttService, registerMqttMetrics } from './mqtt/service.js';
import { readerKey } from './access/venue-index.js';

// The composition root: builds every module from the validated config in a fixed order,
// starts them in that order and stops them in reverse (STYLE: Architecture).

export interface GatehouseOptions {
  log?: Logger;
  clock?: Clock;
}

export class Gatehouse {
  readonly log: Logger;
  readonly clock: Clock;
  readonly store: Store;
  #routes: readonly AnyRoute[] = [];
  #deps: HttpDeps | null = null;
  #http: HttpServer | null = null;
  #ready = false;
  #sessionSweep: NodeJS.Timeout | null = null;
  #checkpointer: Checkpointer | null = null;
  #eventLog: AccessEventLog | null = null;
  #deadlines: AnswerDeadlines | null = null;
  #journal: EventJournal | null = null;
  #presence: PresenceSnapshots | null = null;
  #externalChanges: ExternalChanges | null = null;
  #realtime: PusherServer | null = null;
  #broadcaster: Broadcaster | null = null;
  #accessWatch: RealtimeAccessWatch | null = null;
  #mqtt: MqttBroker | null = null;
  #webhookLog: IncomingWebhookLog | null = null;
  #webhookReceipts: WebhookReceipts | null = null;
  #uploads: UploadImports | null = null;
  #mqttService: MqttService | null = null;

  constructor(
    readonly config: Readonly<Config>,
    options: GatehouseOptions = {},
  ) {
    this.log = options.log ?? createLogger(config.log);
    this.clock = options.clock ?? systemClock;
    this.store = new Store({ dataDir: config.dataDir, synchronous: config.store.synchronous, autoCheckpoint: false, busyTimeoutMs: config.store.busyTimeoutMs }, this.log.child({ module: 'store' }));
  }

  /** The HTTP dependencies; available once the store is open. */
  get deps(): HttpDeps {
    if (!this.#deps) throw new Error('not started');
    return this.#deps;
  }

  /** The route table being served (empty before start). */
  get routes(): readonly AnyRoute[] {
    return this.#routes;
  }

  get httpPort(): number {
    return this.#http?.port(0) ?? 0;
  }

  /** The HTTPS port, 0 when no certificate is configured. */
  get httpsPort(): number {
    return this.#http?.port(1) ?? 0;
  }

  /** The embedded MQTT broker (tests time packets by its events). */
  get mqtt(): MqttBroker {
    if (!this.#mqtt) throw new Error('not started');
    return this.#mqtt;
  }

  /** The access events' group commit (tests hold it: a journal that cannot complete). */
  get eventLog(): AccessEventLog {
    if (!this.#eventLog) throw new Error('not started');
    return this.#eventLog;
  }

  get url(): string {
    return this.config.http.publicUrl ?? `http://${displayHost(this.config.http.host)}:${this.httpPort}`;
  }

  async start(): Promise<void> {
    const { config, clock } = this;
    this.store.start();
    const db = this.store.db;
    const checkpointer = new Checkpointer({ file: this.store.file, synchronous: config.store.synchronous, intervalMs: config.store.checkpointIntervalMs }, this.log.child({ module: 'checkpoint' }));
    this.#checkpointer = checkpointer;
    checkpointer.start();
    const bus = new EventBus(this.log.child({ module: 'bus' }));
    const index = new VenueIndex(db);
    syncIndexFromBus(bus, index, this);
    const occupancy = new Occupancy();
    bus.on(this, 'attendee.deleted', (e) => occupancy.forget(e.id));
    const engine = new AccessEngine(index, occupancy, { antiPassback: config.access.antiPassback });
    const journal = new EventJournal(
      db,
      {
        dir: join(this.store.dir, 'journal'),
        dbFile: this.store.file,
        synchronous: config.store.synchronous,
        segmentBytes: config.store.journalSegmentBytes,
        intervalMs: config.store.ingestIntervalMs,
      },
      this.log.child({ module: 'event-journal' }),
    );
    journal.recover(); // before anything reads access_events
    journal.start();
    this.#journal = journal;
    const eventLog = new AccessEventLog(journal, config.store.maxBatch);
    this.#eventLog = eventLog;
    const metrics = new HttpMetrics();
    // Every scan answered within mqtt.answerTimeoutMs, or its sender let go (issue 22, item 2).
    const deadlines = new AnswerDeadlines(config.mqtt.answerTimeoutMs, metrics.registry);
    this.#deadlines = deadlines;
    deadlines.start();
    const settings = new SettingsStore(db, clock, { token_expiry_minutes: config.auth.tokenExpiryMinutes }, bus);
    const credentials = resolvePusherCredentials(db, clock, config.pusher);
    const { pusher } = config;
    const tokens = new TokenService(db, clock, () => settings.get().token_expiry_minutes, bus);
    const sessions = new SessionService(db, clock, config.auth.sessionLifetimeMinutes, bus);
    const users = new UserRepository(db, clock, bus);
    const projects = new ProjectRepository(db, clock);
    const grants = new ChannelGrants({ users, tokens, sessions, projects });
    const realtime = new PusherServer(
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
      this.log.child({ module: 'realtime' }),
      grants,
    );
    this.#realtime = realtime;
    const cipher = new ChannelCipher(credentials.encryptionMasterKey);
    const readerStates = new ReaderStates(clock, bus);
    const deviceTokens = new DeviceTokens(db, clock);
    const gateways = new Gateways(db, clock, bus, readerStates);
    const webhookSources = new WebhookSources(db, clock);
    const webhookReplays = new ReplayWindow(clock, {
      windowMs: config.incomingWebhooks.timestampToleranceSeconds * 1000,
      maxEntries: config.incomingWebhooks.replayMaxEntries,
      maxBytes: config.incomingWebhooks.replayMaxBytes,
      maxAnswerBytes: config.incomingWebhooks.replayMaxAnswerBytes,
      waitMs: config.incomingWebhooks.replayWaitMs,
    });
    const webhookLog = new IncomingWebhookLog(db, clock, {
      days: config.incomingWebhooks.logRetentionDays,
      maxRows: config.incomingWebhooks.logMaxRows,
      maxNotAppliedRows: config.incomingWebhooks.logMaxNotAppliedRows,
    });
    this.#webhookLog = webhookLog;
    webhookLog.start();
    const webhookReceipts = new WebhookReceipts(
      db,
      clock,
      { receiptDays: config.incomingWebhooks.receiptDays, maxRows: config.incomingWebhooks.receiptMaxRows, maxAnswerBytes: config.incomingWebhooks.replayMaxAnswerBytes },
      this.log.child({ module: 'webhooks' }),
    );
    this.#webhookReceipts = webhookReceipts;
    webhookReceipts.start();
    const webhookThrottle = new FailureThrottle(config.incomingWebhooks.failuresPerMinute, this.log.child({ module: 'webhooks' }));
    const venue = createVenue(db, clock, bus);
    const uploads = new UploadImports(db, clock, venue.importer, config.incomingWebhooks, this.log.child({ module: 'uploads' }));
    this.#uploads = uploads;
    const deps: HttpDeps = {
      config,
      log: this.log.child({ module: 'http' }),
      clock,
      store: this.store,
      settings,
      tokens,
      sessions,
      users,
      teams: new TeamRepository(db, clock),
      projects,
      memberships: new MembershipRepository(db, clock, bus),
      metrics,
      rateLimits: new RateLimits(config.rateLimit),
      loginThrottle: new LoginThrottle({ failuresPerAccount: config.auth.loginFailuresPerAccount, windowSeconds: config.auth.loginFailureWindowSeconds }),
      bus,
      venue,
      engine,
      scans: new ScanService(db, clock, bus, engine, index, eventLog, deadlines),
      venueIndex: index,
      readerScans: new ReaderScans(index, readerStates, () => clock.now()),
      webhookGate: new SignedWebhookGate(
        webhookSources,
        clock,
        {
          headerPrefix: config.incomingWebhooks.headerPrefix,
          toleranceSeconds: config.incomingWebhooks.timestampToleranceSeconds,
          allowUnsigned: config.incomingWebhooks.allowUnsigned,
        },
        webhookReplays,
        webhookReceipts,
      ),
      webhookSources,
      webhookLog,
      webhookThrottle,
      uploads,
      realtime: { server: realtime, credentials, cipher },
      devices: {
        logins: new ReaderLogins(db, clock, deviceTokens, config.readers),
        tokens: deviceTokens,
        gateways,
        readerStates,
        mqttPorts: () => this.#mqtt?.ports ?? { tcp: 0, tls: null },
      },
      isReady: () => this.#ready,
    };
    this.#deps = deps;
    await bootstrapFirstRun(
      { ...deps, log: this.log.child({ module: 'bootstrap' }) },
      {
        adminEmail: config.admin.email,
        adminPassword: config.admin.password,
        timezone: config.defaults.timezone,
      },
    );
    const started = Date.now();
    // Venue changes by other processes (the CLI, any tool writing the store): polled from the
    // change sequence as it stood before the load, so nothing written meanwhile is missed.
    this.#externalChanges = new ExternalChanges(db, index, bus, venue, this.log.child({ module: 'access' }));
    this.#externalChanges.begin();
    index.load();
    deps.scans.loadRequestKeys();
    this.#presence = new PresenceSnapshots(db, occupancy, (id) => index.attendees.has(id), this.log.child({ module: 'presence' }));
    const replayed = this.#presence.restore();
    this.#presence.start(
      30_000,
      5_000,
      () => eventLog.lastCommitAt,
      () => !eventLog.lagging,
    );
    this.log.info({ module: 'access', credentials: index.credentialCount, replayedEvents: replayed, ms: Date.now() - started }, 'venue index and occupancy loaded');
    this.#externalChanges.start();
    registerExternalChangeMetrics(deps.metrics.registry, this.#externalChanges);
    registerRealtimeMetrics(deps.metrics.registry, realtime);
    registerJournalMetrics(deps.metrics.registry, journal);
    registerReplayMetrics(deps.metrics.registry, webhookReplays);
    registerReceiptMetrics(deps.metrics.registry, webhookReceipts);
    registerThrottleMetrics(deps.metrics.registry, webhookThrottle);
    this.#broadcaster = new Broadcaster(realtime, bus, deps.projects, occupancy, index, { eventNamespace: pusher.eventNamespace, cipher });
    this.#broadcaster.start();
    this.#accessWatch = new RealtimeAccessWatch(realtime, grants, bus, pusher.accessRecheckIntervalMs, this.log.child({ module: 'realtime' }));
    this.#accessWatch.start();
    realtime.start();
    const mqtt = this.#startMqtt(deps);
    await mqtt.start();
    const routes = buildRouteTable(deps);
    this.#routes = routes;
    const app = createHttpApp(deps, routes);
    const upgrades = new UpgradeRouter();
    upgrades.add('/app/', (req, socket, head) => realtime.handleUpgrade(req, socket, head));
    upgrades.add('/mqtt', (req, socket, head) => mqtt.handleUpgrade(req, socket, head));
    this.#http = new HttpServer(config, app.callback(), this.log.child({ module: 'http' }), upgrades.handle);
    await this.#http.start();
    this.#sessionSweep = setInterval(() => {
      try {
        deps.sessions.purgeExpired();
      } catch (err) {
        this.log.warn({ err }, 'expired sessions not purged (the next sweep tries again)'); // e.g. the store busy past busy_timeout
      }
    }, 10 * 60_000).unref();
    this.#ready = true;
    this.log.info({ url: this.url, role: config.role, dataDir: config.dataDir }, `Gatehouse ready at ${this.url}`);
  }

  /** The broker and what it does with scans and gateway status (issue 7). */
  #startMqtt(deps: HttpDeps): MqttBroker {
    const { config } = this;
    const { devices, venueIndex: index } = deps;
    const log = this.log.child({ module: 'mqtt' });
    const service = new MqttService({ scans: deps.scans, readerScans: deps.readerScans, maxPayloadBytes: config.mqtt.maxPayloadBytes }, devices.gateways, devices.readerStates, deps.bus, log);
    const gatewayOfReader = (projectId: number, identifier: string) => {
      const reader = index.readers.get(readerKey(projectId, identifier));
      return reader ? deps.venue.readers.gatewayOf(reader.id) : null;
    };
    const broker = new MqttBroker(
      { host: config.http.host, ...config.mqtt },
      { deviceTokens: devices.tokens, tokens: deps.tokens, users: deps.users, projects: deps.projects, gateways: devices.gateways, index, gatewayOfReader },
      {
        answer: (identity, packet, deadline) => service.answer(identity, packet, deadline),
        published: (identity, packet) => service.published(identity, packet),
        connected: (identity) => service.connected(identity),
        disconnected: (identity) => service.disconnected(identity),
        refused: (kind) => service.count(kind === 'oversize' ? 'oversize_packet' : `refused_${kind}`),
      },
      log,
      deps.scans.deadlines,
    );
    service.attach(broker);
    registerMqttMetrics(deps.metrics.registry, broker, service);
    this.#mqtt = broker;
    this.#mqttService = service;
    return broker;
  }

  /** Reverse order, each step on its own so one failure does not keep the rest open. */
  async stop(): Promise<void> {
    this.#ready = false;
    const steps: [string, () => unknown][] = [
      ['session sweep', () => this.#sessionSweep && clearInterval(this.#sessionSweep)],
      ['venue changes poll', () => this.#externalChanges?.stop()],
      ['mqtt', () => this.#mqtt?.stop()],
      ['mqtt service', () => this.#mqttService?.detach()],
      ['websocket access watch', () => this.#accessWatch?.stop()],
      ['websocket', () => this.#realtime?.stop()],
      ['broadcaster', () => this.#broadcaster?.stop()],
      ['http', () => this.#http?.stop(this.config.http.shutdownGraceMs)],
      ['incoming webhook log', () => this.#webhookLog?.stop()],
      ['webhook receipts', () => this.#webhookReceipts?.stop()],
      ['upload imports', () => this.#uploads?.drain()],
      ['answer deadlines', () => this.#deadlines?.stop()],
      ['access events', () => this.#eventLog?.flush()],
      ['access-event journal', () => this.#journal?.stop()],
      ['presence snapshot', () => this.#presence?.stop(!this.#eventLog?.lagging)],
      ['checkpoint worker', () => this.#checkpointer?.stop()],
      ['tokens', () => this.#deps?.tokens.flush()],
      ['store', () => this.store.stop()],
    ];
    for (const [name, step] of steps) {
      try {
        await step();
      } catch (err) {
        this.log.error({ err, step: name }, 'stop step failed');
      }
    }
  }
}

function displayHost(host: string): string {
  if (host === '0.0.0.0' || host === '::') return 'localhost';
  return host.includes(':') ? `[${host}]` : host;
}
