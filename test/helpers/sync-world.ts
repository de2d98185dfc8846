import { expect } from 'vitest';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { AnswerHold } from './answer-hold.js';
import { requester, type RequestOptions, type TestResponse } from './appliance.js';
import { connectReader, type ReaderCredentials } from './mqtt.js';
import { runGatehouse, type RunningProcess } from './process.js';
import { PROCESS_ADMIN } from './process-appliance.js';
import { TcpProxy } from './tcp-proxy.js';
import { dumpDatabase, restoreDatabase, storeEnv } from './test-store.js';
import Database from 'better-sqlite3';
import { PgDatabase } from '../../src/store/postgres/pg-database.js';
import { DB_FILE } from '../../src/store/database.js';

// A cloud and its edges as real processes on loopback, each edge behind a TCP proxy of its own
// (docs/sync.md, "What holds when venues do what they do to boxes"): kill -9 and restart any of them on the same data directory, cut or
// black-hole any link. Every node hosts the project default/default.

export const P = '/api/v1/projects/default/default';

/** Settings that make the tests' links fail and recover in seconds. */
const FAST_SYNC = {
  GATEHOUSE_SYNC_REQUEST_TIMEOUT_MS: '1500',
  GATEHOUSE_SYNC_BACKOFF_MIN_MS: '100',
  GATEHOUSE_SYNC_BACKOFF_MAX_MS: '500',
  GATEHOUSE_SYNC_LONG_POLL_SECONDS: '3',
};

/** The preload that lets a test step one process's wall clock (test/fixtures/clock-step.cjs). */
const CLOCK_STEP = resolve('test/fixtures/clock-step.cjs');

/** A connection to a node's store, SQLite's or PostgreSQL's (the part of better-sqlite3 tests use). */
export type StoreConnection = Pick<Database.Database, 'prepare' | 'close'>;

export class Node {
  proc!: RunningProcess;
  url = '';
  #token = '';
  readonly dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-sync-'));
  /** Where this node's wall-clock shift is kept (it survives restarts, as a box's clock does). */
  readonly #clockFile = `${this.dataDir}.clock`;
  #clockShift = 0;
  #clockSteps = 0;

  private readonly env: Record<string, string>;

  constructor(
    readonly name: string,
    env: Record<string, string>,
  ) {
    // A cloud on the store under test, its database kept across restarts as its data directory is.
    this.env = { ...env, ...storeEnv(env) };
    writeFileSync(this.#clockFile, '0 0');
  }

  /** This node's wall clock, ahead of the real one by `ms` (behind when negative), as NTP would step it; resolves once the process took it. */
  async setClock(ms: number): Promise<void> {
    this.#clockShift = ms;
    const step = ++this.#clockSteps;
    writeFileSync(this.#clockFile, `${ms} ${step}`);
    if (!this.proc || this.proc.proc.exitCode !== null || this.proc.proc.signalCode !== null) return;
    this.proc.proc.kill('SIGUSR2');
    await this.proc.waitFor(new RegExp(`^test clock step ${step}: `), 10_000);
  }

  get clockShift(): number {
    return this.#clockShift;
  }

  async start(): Promise<this> {
    // A second process on a running node's store would be another box, and the first one would
    // outlive the test (destroy stops the latest only).
    if (this.proc && this.proc.proc.exitCode === null && this.proc.proc.signalCode === null)
      throw new Error(`${this.name} is still running: stop it before starting it again`);
    this.proc = runGatehouse([], {
      GATEHOUSE_DATA_DIR: this.dataDir,
      GATEHOUSE_ADMIN_EMAIL: PROCESS_ADMIN.email,
      GATEHOUSE_ADMIN_PASSWORD: PROCESS_ADMIN.password,
      GATEHOUSE_RATE_LIMIT_STANDARD: '0',
      GATEHOUSE_RATE_LIMIT_BULK: '0',
      GATEHOUSE_RATE_LIMIT_SEARCH: '0',
      GATEHOUSE_LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'info',
      NODE_OPTIONS: `--require ${CLOCK_STEP}`,
      GATEHOUSE_TEST_CLOCK_FILE: this.#clockFile,
      ...this.env,
    });
    [, this.url] = (await this.proc.waitFor(/Gatehouse ready at (http:\/\/\S+?)"/, 60_000)) as unknown as [
      string,
      string,
    ];
    this.#token = '';
    return this;
  }

  get port(): number {
    return Number(new URL(this.url).port);
  }

  /** A backup of this node's store into `dir` (the node stopped): its data directory, and its database's dump. */
  backupStore(dir: string): void {
    cpSync(this.dataDir, dir, { recursive: true });
    const url = this.env.GATEHOUSE_DATABASE_URL;
    if (url) dumpDatabase(url, join(dir, 'database.dump'));
  }

  /** This node's store restored from backupStore's `dir` (the node stopped). */
  restoreStore(dir: string): void {
    rmSync(this.dataDir, { recursive: true, force: true });
    cpSync(dir, this.dataDir, { recursive: true });
    const url = this.env.GATEHOUSE_DATABASE_URL;
    if (url) restoreDatabase(url, join(dir, 'database.dump'));
  }

  /** From its next start, this node's store is the PostgreSQL database at `url` (a cloud moved there). */
  useDatabase(url: string): void {
    this.env.GATEHOUSE_DATABASE_URL = url;
  }

  /** The environment a CLI command runs with on this node's store (its data directory, its database). */
  get cliEnv(): Record<string, string> {
    const url = this.env.GATEHOUSE_DATABASE_URL;
    return {
      GATEHOUSE_DATA_DIR: this.dataDir,
      ...(url ? { GATEHOUSE_DATABASE_URL: url, GATEHOUSE_ROLE: 'cloud' } : {}),
    };
  }

  /** Runs `fn` on a connection of this node's own store (its SQLite file, or its PostgreSQL
   * database on the store under test): what a test reads or plants behind the appliance's back. */
  withStore<T>(fn: (db: StoreConnection) => T, options: { readonly?: boolean } = {}): T {
    const url = this.env.GATEHOUSE_DATABASE_URL;
    const db = (url
      ? new PgDatabase(url)
      : new Database(join(this.dataDir, DB_FILE), {
          readonly: options.readonly ?? true,
          fileMustExist: true,
        })) as unknown as StoreConnection;
    try {
      return fn(db);
    } finally {
      db.close();
    }
  }

  async token(): Promise<string> {
    if (!this.#token) {
      const res = await requester(this.url)('POST', '/api/v1/auth/token', {
        body: { ...PROCESS_ADMIN, device_name: this.name },
      });
      if (res.status !== 201) throw new Error(`${this.name}: token ${res.status} ${res.text}`);
      this.#token = res.body.token as string;
    }
    return this.#token;
  }

  /** An administrator's request to the project (a path under P) or, starting with /api, anywhere. */
  async api(method: string, path: string, body?: unknown, options: RequestOptions = {}): Promise<TestResponse> {
    const full = path.startsWith('/api') || path === '/metrics' ? path : `${P}${path}`;
    return requester(this.url)(method, full, {
      token: await this.token(),
      ...(body === undefined ? {} : { body }),
      ...options,
    });
  }

  async kill9(): Promise<void> {
    await this.proc.stop('SIGKILL');
  }

  async stop(): Promise<void> {
    await this.proc.stop();
  }

  async destroy(): Promise<void> {
    if (this.proc && this.proc.proc.exitCode === null && this.proc.proc.signalCode === null)
      await this.proc.stop('SIGKILL');
    rmSync(this.dataDir, { recursive: true, force: true });
    rmSync(this.#clockFile, { force: true });
  }

  /** Every access event of the project, oldest id first, as REST shows them. */
  async events(): Promise<Record<string, unknown>[]> {
    const out: Record<string, unknown>[] = [];
    for (let page = 1; ; page++) {
      const res = await this.api('GET', `/access-events?per_page=100&page=${page}`);
      if (res.status !== 200) throw new Error(`${this.name}: events ${res.status} ${res.text}`);
      out.push(...(res.body.data as Record<string, unknown>[]));
      if (res.body.data.length < 100) return out;
    }
  }
}

/** An HTTP hop between an edge's TcpProxy and the cloud (answer-hold.ts, older-cloud.ts); it follows the cloud's restarts. */
export interface HttpHop {
  start(): Promise<number>;
  readonly port: number;
  targetPort: number;
  stop(): Promise<void>;
}

export interface Edge {
  node: Node;
  proxy: TcpProxy;
  syncToken: string;
  id: number;
  /** The HTTP proxy behind `proxy` that can hold back one of the cloud's answers. */
  answers?: AnswerHold;
}

export class SyncWorld {
  cloud!: Node;
  readonly edges: Edge[] = [];
  readonly #proxies: TcpProxy[] = [];
  readonly #holds: HttpHop[] = [];

  async startCloud(env: Record<string, string> = {}): Promise<Node> {
    this.cloud = await new Node('cloud', { GATEHOUSE_ROLE: 'cloud', ...env }).start();
    return this.cloud;
  }

  /** Restarts the cloud on its data directory (its port changes: the proxies follow). */
  async restartCloud(): Promise<void> {
    await this.cloud.start();
    for (const hold of this.#holds) hold.targetPort = this.cloud.port;
    for (const proxy of this.#proxies)
      if (!this.#holds.some((h) => h.port === proxy.targetPort)) proxy.targetPort = this.cloud.port;
  }

  /** `answers`: an AnswerHold (answer-hold.ts, not yet started) the link also goes through, behind its TcpProxy;
   * `hop`: any other HTTP hop so (older-cloud.ts). */
  async addEdge(
    name: string,
    env: Record<string, string> = {},
    options: { answers?: AnswerHold; hop?: HttpHop } = {},
  ): Promise<Edge> {
    const issued = await this.cloud.api('POST', '/sync/edges', { name });
    if (issued.status !== 201) throw new Error(`issue edge: ${issued.status} ${issued.text}`);
    const { answers } = options;
    const hop = answers ?? options.hop;
    if (hop) {
      await hop.start();
      this.#holds.push(hop);
    }
    const proxy = new TcpProxy(hop?.port ?? this.cloud.port);
    await proxy.start();
    this.#proxies.push(proxy);
    const node = await new Node(name, {
      GATEHOUSE_ROLE: 'edge',
      GATEHOUSE_CLOUD_URL: proxy.url,
      GATEHOUSE_SYNC_TOKEN: issued.body.data.token as string,
      ...FAST_SYNC,
      ...env,
    }).start();
    const edge: Edge = {
      node,
      proxy,
      syncToken: issued.body.data.token as string,
      id: issued.body.data.id as number,
      ...(answers ? { answers } : {}),
    };
    this.edges.push(edge);
    return edge;
  }

  async destroy(): Promise<void> {
    for (const e of this.edges) await e.node.destroy();
    await this.cloud?.destroy();
    for (const p of this.#proxies) await p.stop();
    for (const h of this.#holds) await h.stop();
  }
}

/** Polls `read` until `ok`, or fails naming what it waited for and the last value. */
export async function until<T>(
  what: string,
  read: () => Promise<T> | T,
  ok: (v: T) => boolean,
  ms = 30_000,
  every = 100,
): Promise<T> {
  const end = Date.now() + ms;
  let last: T = await read();
  while (!ok(last)) {
    if (Date.now() > end)
      throw new Error(`timed out after ${ms} ms waiting for ${what}; last: ${JSON.stringify(last).slice(0, 2000)}`);
    await new Promise((r) => setTimeout(r, every));
    last = await read();
  }
  return last;
}

/** The demo of these tests on the cloud: a hall (in) and its exit, a type, `count` attendees with one ticket each (T-<n>). */
export async function seedCloud(cloud: Node, count: number): Promise<{ zone: number; entry: number; exit: number }> {
  const zone = (await cloud.api('POST', '/access-zones', { name: 'Hall', capacity: 100_000 })).body.data.id as number;
  const entry = (await cloud.api('POST', '/access-points', { name: 'Entry', access_zone_id: zone, direction: 'in' }))
    .body.data.id as number;
  const exit = (await cloud.api('POST', '/access-points', { name: 'Exit', access_zone_id: zone, direction: 'out' }))
    .body.data.id as number;
  await cloud.api('POST', '/attendee-types', { name: 'Guest', zone_ids: [zone] });
  const rows = Array.from({ length: count }, (_, i) => ({
    first_name: `Guest${i + 1}`,
    last_name: 'Test',
    attendee_type: 'guest',
    external_id: `X-${i + 1}`,
    credential_value: `T-${i + 1}`,
  }));
  const res = await cloud.api('POST', '/attendees/import', rows);
  if (res.status !== 200) throw new Error(`import: ${res.status} ${res.text}`);
  return { zone, entry, exit };
}

/** A scan at an access point of the edge's REST API; answers the decision. */
export async function scan(
  node: Node,
  accessPointId: number,
  value: string,
): Promise<{ access_granted: boolean; event_id: string; reason?: string }> {
  const res = await node.api('POST', `/access-points/${accessPointId}/scan`, { credential_value: value });
  if (res.status !== 200) throw new Error(`${node.name} scan ${value}: ${res.status} ${res.text}`);
  return (res.body.data ?? res.body) as { access_granted: boolean; event_id: string; reason?: string };
}

/** A reader on `node` over MQTT (the reader exists there: on an edge, made on the cloud and pulled): logs in as a reader does, then scans with one QoS 1 publish each. */
export async function mqttReader(
  node: Node,
  identifier: string,
): Promise<{
  scan(value: string): Promise<{ access_granted: boolean; event_id: string; reason?: string }>;
  close(): Promise<void>;
}> {
  const request = requester(node.url);
  const asked = await request('POST', `${P}/readers/login`, { body: { reader_identifier: identifier } });
  if (asked.status !== 202) throw new Error(`${node.name} reader login ${identifier}: ${asked.status} ${asked.text}`);
  const logins = await node.api('GET', '/readers/logins');
  const otp = (logins.body.data as { reader_identifier: string; otp: string }[]).find(
    (l) => l.reader_identifier === identifier,
  )!.otp;
  const verified = await request('POST', '/api/v1/reader-otp/verify', { body: { otp, reader_identifier: identifier } });
  if (verified.status !== 200)
    throw new Error(`${node.name} reader verify ${identifier}: ${verified.status} ${verified.text}`);
  const creds = verified.body.data as ReaderCredentials;
  const { client, inbox: box } = await connectReader(null, creds, {}, `mqtt://127.0.0.1:${creds.mqtt.port}`);
  let n = 0;
  return {
    async scan(value) {
      const requestId = `${identifier}-${++n}-${Math.random().toString(36).slice(2, 6)}`;
      await client.publishAsync(
        creds.mqtt.scans_topic,
        JSON.stringify({ request_id: requestId, credential_value: value }),
        { qos: 1 },
      );
      const decision = await box.next((m) => m.payload?.request_id === requestId, 10_000);
      return decision.payload as { access_granted: boolean; event_id: string; reason?: string };
    },
    close: () => client.endAsync(),
  };
}

/** Cuts the edge's link and waits until the edge sees it down. */
export async function cutLink(edge: Edge): Promise<void> {
  edge.proxy.set('cut');
  await until(
    'the edge to see the link down',
    () => edge.node.api('GET', '/sync/status'),
    (r) => r.body.data.online === false,
    20_000,
  );
}

/** The edge is online with nothing left to upload. */
export async function drained(edge: Node): Promise<void> {
  await until(
    "the edge's backlog to drain",
    () => edge.api('GET', '/sync/status'),
    (r) => r.body.data.online === true && r.body.data.backlog === 0,
    60_000,
    200,
  );
}

/** The edge drained its backlog and the cloud holds exactly the edge's events among those uploaded from edges (by uuid). */
export async function converged(edge: Node, cloud: Node): Promise<void> {
  await drained(edge);
  const uuids = (events: Record<string, unknown>[]) => events.map((e) => e.uuid as string).sort();
  const mine = uuids(await edge.events());
  const fromEdges = async () => uuids((await cloud.events()).filter((e) => e.edge_id !== null));
  await until(
    `the cloud to hold the edge's ${mine.length} events`,
    async () => (await fromEdges()).length,
    (n) => n >= mine.length,
    30_000,
    500,
  );
  expect(await fromEdges()).toEqual(mine);
}
