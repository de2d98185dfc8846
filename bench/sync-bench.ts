// What bench:cloud-sync and its pull-only diagnostic (cloud-sync-pull.ts) share: the appliance
// processes they start (and kill at the end), the REST client, the cut-able link, and the bulk
// attendees written straight into the cloud's store.
import { type ChildProcess, fork } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
// @ts-expect-error a plain ES module of the scripts folder, without types
import { NODE_BUNDLE } from '../scripts/node-bundle.mjs';
import { build } from 'esbuild';
import { startApplianceProcess, stopProcess } from './appliance-process.js';
import { PgDatabase } from '../src/store/postgres/pg-database.js';

export const P = '/api/v1/projects/default/default';

export interface Node {
  name: string;
  proc: ChildProcess;
  url: string;
  dataDir: string;
  token: string;
  /** Its store on PostgreSQL (a cloud), else null: its SQLite file under dataDir. */
  databaseUrl?: string | null;
}

const procs: ChildProcess[] = [];
const dirs: string[] = [];

/** Kills every appliance process still running and removes their data directories, at once. */
function killAll(): void {
  for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
}
// A bench ended by a signal, or one that throws past its cleanUp, leaves no appliance behind.
process.once('exit', killAll);
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const)
  process.once(signal, () => {
    killAll();
    process.exit(128 + (signal === 'SIGINT' ? 2 : signal === 'SIGTERM' ? 15 : 1));
  });

/** An appliance process; `nice` 19 for a cloud standing in for a machine elsewhere. */
export async function startNode(name: string, env: Record<string, string>, nice?: number): Promise<Node> {
  const started = await startApplianceProcess(
    `sync-${name}`,
    { GATEHOUSE_READERS_VERIFY_PER_MINUTE: '100000', ...env },
    nice === undefined ? {} : { nice },
  );
  procs.push(started.proc);
  dirs.push(started.dataDir);
  return { name, ...started, databaseUrl: env.GATEHOUSE_DATABASE_URL ?? null };
}

/** Kills what is still running and removes the data directories (the bench's finally). */
export async function cleanUp(): Promise<void> {
  for (const p of procs) if (p.exitCode === null) p.kill('SIGKILL');
  await new Promise((resolve) => setTimeout(resolve, 200));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
}

export async function api<T = Record<string, unknown>>(
  node: Node,
  method: string,
  path: string,
  body?: unknown,
  expect = 200,
): Promise<T> {
  const res = await fetch(`${node.url}${path.startsWith('/api') ? path : P + path}`, {
    method,
    headers: {
      authorization: `Bearer ${node.token}`,
      accept: 'application/json',
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status !== expect) throw new Error(`${node.name} ${method} ${path}: ${res.status} ${text.slice(0, 500)}`);
  return (text ? JSON.parse(text) : {}) as T;
}

/** The venue every sync bench runs on: a hall, its entry and exit, and the Guest type that may enter it. */
export async function seedVenue(cloud: Node): Promise<{ zone: number; entry: number; exit: number }> {
  const id = async (path: string, body: Record<string, unknown>) =>
    (await api<{ data: { id: number } }>(cloud, 'POST', path, body, 201)).data.id;
  const zone = await id('/access-zones', { name: 'Hall' });
  const entry = await id('/access-points', { name: 'Entry', access_zone_id: zone, direction: 'in' });
  const exit = await id('/access-points', { name: 'Exit', access_zone_id: zone, direction: 'out' });
  await api(cloud, 'POST', '/attendee-types', { name: 'Guest', zone_ids: [zone] }, 201);
  return { zone, entry, exit };
}

/** A connection to the node's store: its SQLite file, or its PostgreSQL database (the same interface). */
export function openDb(node: Node): Database.Database {
  if (node.databaseUrl) return new PgDatabase(node.databaseUrl) as unknown as Database.Database;
  const db = new Database(join(node.dataDir, 'gatehouse.db'));
  db.pragma('busy_timeout = 10000');
  return db;
}

/** One figure of a node's /metrics (0 while it has none). */
export const metric = async (node: Node, name: string): Promise<number> =>
  Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(await (await fetch(`${node.url}/metrics`)).text())?.[1] ?? 0);

/** Rows the edge has pulled, from its /metrics. */
export const downloadedRows = (node: Node): Promise<number> => metric(node, 'gatehouse_sync_downloaded_rows_total');

/**
 * `count` attendees of the `guest` type with two credentials each (`<tag>-<i>-a`, `-b`), written
 * straight into the cloud's store in one transaction with change versions, as the cloud's own
 * writes would have them: far faster than REST for 100,000.
 */
export function attendeesOnCloud(cloud: Node, count: number, tag: string): void {
  const db = openDb(cloud);
  const projectC = db.prepare("SELECT id FROM projects WHERE slug = 'default'").pluck().get() as number;
  const typeId = db.prepare("SELECT id FROM attendee_types WHERE slug = 'guest'").pluck().get() as number;
  db.transaction(() => {
    const rows = count * 3;
    const end = (
      db.prepare('UPDATE change_sequence SET value = value + ? WHERE id = 1 RETURNING value').get(rows) as {
        value: number;
      }
    ).value;
    let version = end - rows + 1;
    const firstAttendee =
      ((db.prepare('SELECT MAX(id) FROM attendees WHERE id < 4294967296').pluck().get() as number | null) ?? 0) + 1;
    const firstCredential =
      ((db.prepare('SELECT MAX(id) FROM credentials WHERE id < 4294967296').pluck().get() as number | null) ?? 0) + 1;
    const now = new Date().toISOString();
    const addAttendee = db.prepare(
      "INSERT INTO attendees (id, project_id, attendee_type_id, first_name, last_name, email, external_id, status, extra, version, created_at, updated_at) VALUES (?, ?, ?, 'Bulk', ?, ?, ?, 'active', '{}', ?, ?, ?)",
    );
    const addCredential = db.prepare(
      "INSERT INTO credentials (id, project_id, attendee_id, value, kind, status, version, created_at, updated_at) VALUES (?, ?, ?, ?, 'barcode', 'active', ?, ?, ?)",
    );
    for (let i = 0; i < count; i++) {
      const id = firstAttendee + i;
      addAttendee.run(id, projectC, typeId, `No${i}`, `${tag}-${i}@bench.test`, `${tag}-${i}`, version++, now, now);
      addCredential.run(firstCredential + 2 * i, projectC, id, `${tag}-${i}-a`, version++, now, now);
      addCredential.run(firstCredential + 2 * i + 1, projectC, id, `${tag}-${i}-b`, version++, now, now);
    }
  })();
  db.close();
}

/** A link the bench can cut: bench/tcp-proxy-child.ts in its own process. */
export class LinkProxy {
  private constructor(
    private readonly child: ChildProcess,
    readonly url: string,
  ) {}

  get pid(): number {
    return this.child.pid!;
  }

  stop(): Promise<void> {
    return stopProcess(this.child);
  }

  static async start(targetPort: number): Promise<LinkProxy> {
    await build({
      entryPoints: ['bench/tcp-proxy-child.ts'],
      outfile: 'dist/bench-tcp-proxy-child.mjs',
      ...NODE_BUNDLE,
    });
    const child = fork('dist/bench-tcp-proxy-child.mjs', [String(targetPort)], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    procs.push(child);
    const { port } = await new Promise<{ port: number }>((resolve) =>
      child.once('message', (m) => resolve(m as { port: number })),
    );
    return new LinkProxy(child, `http://127.0.0.1:${port}`);
  }

  set(mode: 'pass' | 'cut'): Promise<void> {
    return new Promise((resolve) => {
      this.child.once('message', () => resolve());
      this.child.send({ mode });
    });
  }
}
