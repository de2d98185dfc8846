import type { AccessEventLog } from './journal/event-log.js';
import { bootstrapFirstRun } from './accounts/bootstrap.js';
import { type Clock, systemClock } from './clock.js';
import type { Config } from './config/schema.js';
import { createHttpApp } from './http/app.js';
import { type HttpDeps, httpDepsOf } from './http/deps.js';
import type { AnyRoute } from './http/route.js';
import { buildRouteTable } from './http/routes/index.js';
import { syncRoutes } from '../sync/routes.js';
import { HttpServer } from './http/server.js';
import { UpgradeRouter } from './http/upgrade.js';
import { Lifecycle, type Module, module } from './lifecycle.js';
import { createLogger, type Logger } from './logger.js';
import type { MqttBroker } from './mqtt/broker.js';
import { createMqtt, type Mqtt } from './mqtt/wiring.js';
import { buildServices, type ServiceOverrides, type Services } from './services.js';
import { Store } from './store/database.js';
import { PgNotifications } from './store/postgres/notifications.js';
import type { PgDatabase } from './store/postgres/pg-database.js';

// The composition root (docs/architecture.md): opens the store, builds the services
// (services.ts) and the transports over them, and runs every long-lived part as one ordered
// list of modules (lifecycle.ts): started in order, stopped in reverse. docs/architecture.md
// walks the list.

export interface GatehouseOptions {
  log?: Logger;
  clock?: Clock;
  /** Parts put in place of real ones (tests: USB HID devices). */
  overrides?: ServiceOverrides;
}

/** The modules a store on PostgreSQL runs without: SQLite's checkpoints. */
const SQLITE_ONLY = new Set(['checkpointer']);

export class Gatehouse {
  readonly log: Logger;
  readonly clock: Clock;
  readonly store: Store;
  readonly #lifecycle: Lifecycle;
  readonly #overrides: ServiceOverrides;
  #services: Services | null = null;
  #deps: HttpDeps | null = null;
  #mqtt: Mqtt | null = null;
  #http: HttpServer | null = null;
  #routes: readonly AnyRoute[] = [];
  #ready = false;

  constructor(
    readonly config: Readonly<Config>,
    options: GatehouseOptions = {},
  ) {
    this.log = options.log ?? createLogger(config.log);
    this.clock = options.clock ?? systemClock;
    this.store = new Store(
      {
        dataDir: config.dataDir,
        synchronous: config.store.synchronous,
        autoCheckpoint: false,
        busyTimeoutMs: config.store.busyTimeoutMs,
        databaseUrl: config.databaseUrl,
      },
      this.log.child({ module: 'store' }),
    );
    this.#lifecycle = new Lifecycle(this.log.child({ module: 'lifecycle' }));
    this.#overrides = options.overrides ?? {};
  }

  /** The domain services; available once the store is open. */
  get services(): Services {
    if (!this.#services) throw new Error('not started');
    return this.#services;
  }

  /** The names of the running modules, in start order. */
  get modules(): string[] {
    return this.#lifecycle.started;
  }

  /** The routes' view of the services; available once the store is open. */
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
    return this.#mqtt.broker;
  }

  /** The access events' group commit (tests hold it: a journal that cannot complete). */
  get eventLog(): AccessEventLog {
    return this.services.access.eventLog;
  }

  get url(): string {
    return this.config.http.publicUrl ?? `http://${displayHost(this.config.http.host)}:${this.httpPort}`;
  }

  async start(): Promise<void> {
    // The store first: building the services reads it (first-start settings, Pusher credentials).
    await this.#lifecycle.start([{ name: 'store', start: () => this.store.start(), stop: () => this.store.stop() }]);
    const services = buildServices(this.config, this.store, this.clock, this.log, this.#overrides);
    this.#services = services;
    this.#deps = httpDepsOf(services, {
      mqttPorts: () => this.#mqtt?.broker.ports ?? { tcp: 0, tls: null },
      isReady: () => this.#ready,
    });
    this.#mqtt = createMqtt(services);
    await this.#lifecycle.start(this.#modules(services, this.#mqtt));
    this.log.info(
      { url: this.url, role: this.config.role, dataDir: this.config.dataDir },
      `Gatehouse ready at ${this.url}`,
    );
  }

  /** Stops every module in the reverse of the start order. */
  async stop(): Promise<void> {
    await this.#lifecycle.stop();
  }

  /** Every long-lived part, in start order (docs/architecture.md: Lifecycle). */
  #modules(s: Services, mqtt: Mqtt): Module[] {
    const list = this.#allModules(s, mqtt);
    if (!this.store.postgres) return list;
    // A cloud on PostgreSQL (docs/decisions.md: the cloud on PostgreSQL): no SQLite file to
    // checkpoint; other instances' commits heard as they happen, right after the poll that reads them.
    const notices = new PgNotifications(
      this.store.db as unknown as PgDatabase,
      () => {
        void s.access.externalChanges.poll();
        s.bus.emit('feed.appended', { by: 'ingest' });
      },
      this.log.child({ module: 'postgres' }),
    );
    const kept = list.filter((m) => !SQLITE_ONLY.has(m.name));
    const at = kept.findIndex((m) => m.name === 'external changes poll') + 1;
    kept.splice(
      at,
      0,
      module(
        "other instances' commits",
        () => notices.start(),
        () => notices.stop(),
      ),
    );
    return kept;
  }

  #allModules(s: Services, mqtt: Mqtt): Module[] {
    const { config, access, accounts, realtime, webhooks } = s;
    return [
      ...(s.redis ? [s.redis] : []), // before the fan-out and the rate limits use it, closed after them
      module(
        'tokens',
        () => {},
        () => accounts.tokens.flush(),
      ), // last-used times written before the store closes
      module(
        'checkpointer',
        () => s.checkpointer.start(),
        () => s.checkpointer.stop(),
      ),
      access.indexSync,
      module(
        'access-event journal',
        () => {
          access.journal.recover(); // before anything reads access_events
          access.journal.start();
        },
        async () => {
          access.eventLog.flush();
          await access.journal.stop();
        },
      ),
      access.deadlines,
      webhooks.log,
      webhooks.receipts,
      module('first run', () =>
        bootstrapFirstRun(
          { ...accounts, log: this.log.child({ module: 'bootstrap' }) },
          { adminEmail: config.admin.email, adminPassword: config.admin.password, timezone: config.defaults.timezone },
        ),
      ),
      module('venue index', () => this.#loadIndex(s)),
      module(
        'presence snapshots',
        () =>
          access.presence.start(
            30_000,
            5_000,
            () => access.eventLog.lastCommitAt,
            () => !access.eventLog.lagging,
          ),
        async () => {
          // Nothing scans any more (the transports stopped first): the last snapshot covers every event.
          access.eventLog.flush();
          await access.scans.settledWithin(10_000);
          access.presence.stop(!access.eventLog.lagging);
        },
      ),
      module(
        'external changes poll',
        () => access.externalChanges.start(),
        () => access.externalChanges.stop(),
      ),
      s.outgoing.observed,
      s.issuerAccess, // edges and subscriptions whose issuer lost access, checked as the change is announced
      s.outgoing.dispatcher,
      sweep('outgoing webhook log and outbox retention', () => this.#pruneOutgoing(s), 60 * 60_000, this.log),
      access.retention, // old access events, hourly in short chunks (docs/storage.md)
      module(
        'cloud sync',
        () => s.sync.start(),
        () => s.sync.stop(),
      ),
      realtime.adapter, // the other instances' subscribers (Redis), before anything publishes
      realtime.broadcaster,
      realtime.accessWatch,
      realtime.server,
      mqtt,
      module(
        'firmware bridge',
        () => {
          s.bridge.applyConfig();
          s.bridge.runtime.start();
        },
        () => s.bridge.runtime.stop(),
      ),
      module(
        'upload imports',
        () => {},
        () => webhooks.uploads.drain(),
      ),
      module(
        'http',
        () => this.#startHttp(s, mqtt),
        () => this.#http?.stop(config.http.shutdownGraceMs),
      ),
      sweep('expired sessions', () => accounts.sessions.purgeExpired(), 10 * 60_000, this.log),
      module(
        'ready',
        () => (this.#ready = true),
        () => (this.#ready = false),
      ),
    ];
  }

  /** The venue index from SQLite, the request keys of earlier runs, occupancy from the presence snapshot. */
  #loadIndex({ access, log }: Services): void {
    const started = Date.now();
    // Noted before the load, so the external-change poll misses nothing written meanwhile.
    access.externalChanges.begin();
    access.index.load();
    access.scans.loadRequestKeys();
    const replayed = access.presence.restore();
    log.info(
      {
        module: 'access',
        credentials: access.index.credentialCount,
        replayedEvents: replayed,
        ms: Date.now() - started,
      },
      'venue index and occupancy loaded',
    );
  }

  /** The delivery log by age and rows; outbox rows every consumer has read, by age. */
  #pruneOutgoing({ config, clock, outgoing }: Services): void {
    const days = (n: number) => new Date(clock.now() - n * 86_400_000).toISOString();
    outgoing.deliveries.prune(days(config.webhook.deliveryRetentionDays), config.webhook.deliveryMaxRows);
    outgoing.feed.prune(days(config.webhook.outboxRetentionDays));
  }

  async #startHttp(s: Services, mqtt: Mqtt): Promise<void> {
    const deps = this.deps;
    this.#routes = buildRouteTable(deps, syncRoutes(deps));
    const upgrades = new UpgradeRouter();
    upgrades.add('/app/', (req, socket, head) => s.realtime.server.handleUpgrade(req, socket, head));
    upgrades.add('/mqtt', (req, socket, head) => mqtt.broker.handleUpgrade(req, socket, head));
    this.#http = new HttpServer(
      this.config,
      createHttpApp(deps, this.#routes).callback(),
      this.log.child({ module: 'http' }),
      upgrades.handle,
    );
    await this.#http.start();
  }
}

/** A housekeeping timer as a module; a failed round (e.g. the store
 * busy past busy_timeout) is logged and the next one tries again. */
function sweep(name: string, work: () => unknown, ms: number, log: Logger): Module {
  let timer: NodeJS.Timeout | null = null;
  const round = () => {
    try {
      work();
    } catch (err) {
      log.warn({ err, module: name }, 'housekeeping round failed (the next one tries again)');
    }
  };
  return module(
    name,
    () => (timer = setInterval(round, ms).unref()),
    () => timer && clearInterval(timer),
  );
}

function displayHost(host: string): string {
  if (host === '0.0.0.0' || host === '::') return 'localhost';
  return host.includes(':') ? `[${host}]` : host;
}
