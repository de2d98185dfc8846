// bench:cloud-sync's pull alone, for profiles and quick A/B runs (docs/performance.md, issue 26):
// a cloud at nice 19 with the same venue and the same 100,000 attendees with 200,000
// credentials written straight into its store, then PULLS fresh edges (default 3), one after
// the other, each through a TCP proxy process of its own, each timed from its link coming up
// until it has every row and has reached the newest change (as sync.pull_100k_attendees_s).
// Per pull it prints the seconds and the edge's CPU seconds; the figure is their median.
// CPU_PROF_DIR=<dir>: CPU profiles of each edge's and the cloud's main threads over the pull
// alone, written there as edge-<n>-1.cpuprofile and cloud-<n>.cpuprofile (a preload started and stopped by SIGUSR2: --cpu-prof is refused
// in NODE_OPTIONS and would cover the start-up too). The full bench, with the other figures, is
// bench/cloud-sync.ts.
import { type ChildProcess, fork } from 'node:child_process';
import { build } from 'esbuild';
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { cpuOf, line, sleep } from './process-stats.js';
import { startApplianceProcess, stopProcess } from './appliance-process.js';

const ATTENDEES = process.env.BENCH_QUICK === '1' ? 10_000 : 100_000;
const PULLS = Number(process.env.PULLS ?? 3);
const READERS = 8;
const P = '/api/v1/projects/default/default';
const procs: ChildProcess[] = [];
const dirs: string[] = [];

interface Node {
  name: string;
  proc: ChildProcess;
  url: string;
  dataDir: string;
  token: string;
}

async function api<T = Record<string, unknown>>(node: Node, method: string, path: string, body?: unknown, expect = 200): Promise<T> {
  const res = await fetch(`${node.url}${path.startsWith('/api') ? path : P + path}`, {
    method,
    headers: { authorization: `Bearer ${node.token}`, accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status !== expect) throw new Error(`${node.name} ${method} ${path}: ${res.status} ${text.slice(0, 500)}`);
  return (text ? JSON.parse(text) : {}) as T;
}

async function start(name: string, env: Record<string, string>, nice?: number): Promise<Node> {
  const started = await startApplianceProcess(`sync-${name}`, { GATEHOUSE_READERS_VERIFY_PER_MINUTE: '100000', ...env }, nice === undefined ? {} : { nice });
  procs.push(started.proc);
  dirs.push(started.dataDir);
  return { name, ...started };
}

async function proxyTo(port: number): Promise<{ child: ChildProcess; url: string; set: (mode: 'pass' | 'cut') => Promise<void> }> {
  const child = fork('dist/bench-tcp-proxy-child.mjs', [String(port)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  procs.push(child);
  const { port: own } = await new Promise<{ port: number }>((resolve) => child.once('message', (m) => resolve(m as { port: number })));
  const set = (mode: 'pass' | 'cut') =>
    new Promise<void>((resolve) => {
      child.once('message', () => resolve());
      child.send({ mode });
    });
  return { child, url: `http://127.0.0.1:${own}`, set };
}

/** Attendees with two credentials each straight into the cloud's store, as bench/cloud-sync.ts writes them. */
function attendeesOnCloud(cloud: Node, count: number): void {
  const db = new Database(join(cloud.dataDir, 'gatehouse.db'));
  db.pragma('busy_timeout = 10000');
  const projectC = db.prepare("SELECT id FROM projects WHERE slug = 'default'").pluck().get() as number;
  const typeId = db.prepare("SELECT id FROM attendee_types WHERE slug = 'guest'").pluck().get() as number;
  db.transaction(() => {
    const rows = count * 3;
    const end = (db.prepare('UPDATE change_sequence SET value = value + ? WHERE id = 1 RETURNING value').get(rows) as { value: number }).value;
    let version = end - rows + 1;
    const firstAttendee = ((db.prepare('SELECT MAX(id) FROM attendees WHERE id < 4294967296').pluck().get() as number | null) ?? 0) + 1;
    const firstCredential = ((db.prepare('SELECT MAX(id) FROM credentials WHERE id < 4294967296').pluck().get() as number | null) ?? 0) + 1;
    const now = new Date().toISOString();
    const addAttendee = db.prepare(
      "INSERT INTO attendees (id, project_id, attendee_type_id, first_name, last_name, email, external_id, status, extra, version, created_at, updated_at) VALUES (?, ?, ?, 'Bulk', ?, ?, ?, 'active', '{}', ?, ?, ?)",
    );
    const addCredential = db.prepare("INSERT INTO credentials (id, project_id, attendee_id, value, kind, status, version, created_at, updated_at) VALUES (?, ?, ?, ?, 'barcode', 'active', ?, ?, ?)");
    for (let i = 0; i < count; i++) {
      const id = firstAttendee + i;
      addAttendee.run(id, projectC, typeId, `No${i}`, `B1-${i}@bench.test`, `B1-${i}`, version++, now, now);
      addCredential.run(firstCredential + 2 * i, projectC, id, `B1-${i}-a`, version++, now, now);
      addCredential.run(firstCredential + 2 * i + 1, projectC, id, `B1-${i}-b`, version++, now, now);
    }
  })();
  db.close();
}

/** Profiles the main thread from one SIGUSR2 to the next, through the inspector (1 ms samples). */
const PRELOAD = `
import { Session } from 'node:inspector';
import { writeFileSync } from 'node:fs';
const session = new Session();
session.connect();
let running = false;
let profiles = 0;
process.on('SIGUSR2', () => {
  if (!running) {
    running = true;
    session.post('Profiler.enable', () => session.post('Profiler.setSamplingInterval', { interval: 1000 }, () => session.post('Profiler.start')));
    return;
  }
  running = false;
  session.post('Profiler.stop', (err, result) => {
    if (!err) writeFileSync(process.env.CPU_PROFILE_PREFIX + '-' + ++profiles + '.cpuprofile', JSON.stringify(result.profile));
  });
});
`;

async function main(): Promise<void> {
  await build({
    entryPoints: ['bench/tcp-proxy-child.ts'],
    outfile: 'dist/bench-tcp-proxy-child.mjs',
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    logLevel: 'warning',
  });
  const profile = process.env.CPU_PROF_DIR;
  const preload = join(tmpdir(), `gatehouse-cpu-profile-preload-${process.pid}.mjs`);
  if (profile) writeFileSync(preload, PRELOAD);
  const profiled = (name: string): Record<string, string> => (profile ? { NODE_OPTIONS: `--import=${preload}`, CPU_PROFILE_PREFIX: join(profile, name) } : {});
  const cloud = await start('cloud', { GATEHOUSE_ROLE: 'cloud', ...profiled('cloud') }, 19);
  const zone = (await api<{ data: { id: number } }>(cloud, 'POST', '/access-zones', { name: 'Hall' }, 201)).data.id;
  const entry = (await api<{ data: { id: number } }>(cloud, 'POST', '/access-points', { name: 'Entry', access_zone_id: zone, direction: 'in' }, 201)).data.id;
  const exit = (await api<{ data: { id: number } }>(cloud, 'POST', '/access-points', { name: 'Exit', access_zone_id: zone, direction: 'out' }, 201)).data.id;
  await api(cloud, 'POST', '/attendee-types', { name: 'Guest', zone_ids: [zone] }, 201);
  for (let i = 1; i <= READERS; i++) await api(cloud, 'POST', '/readers', { identifier: `BENCH-R${i}`, access_point_id: i % 2 ? entry : exit }, 201);
  const scanners = Array.from({ length: 1000 }, (_, i) => ({ first_name: 'Scan', last_name: `No${i}`, attendee_type: 'guest', external_id: `S-${i}`, credential_value: `S-${i}` }));
  await api(cloud, 'POST', '/attendees/import', scanners);
  attendeesOnCloud(cloud, ATTENDEES);
  const total = ATTENDEES * 3 + 1000 * 2 + 4 + READERS;

  const seconds: number[] = [];
  for (let n = 1; n <= PULLS; n++) {
    const token = (await api<{ data: { token: string } }>(cloud, 'POST', '/sync/edges', { name: `pull-${n}` }, 201)).data.token;
    const proxy = await proxyTo(Number(new URL(cloud.url).port));
    await proxy.set('cut');
    const edge = await start(`edge-${n}`, {
      GATEHOUSE_ROLE: 'edge',
      GATEHOUSE_CLOUD_URL: proxy.url,
      GATEHOUSE_SYNC_TOKEN: token,
      GATEHOUSE_SYNC_BACKOFF_MAX_MS: '100',
      ...profiled(`edge-${n}`),
    });
    await sleep(2000);
    const cpuBefore = cpuOf(edge.proc.pid!);
    if (profile) for (const node of [edge, cloud]) node.proc.kill('SIGUSR2');
    const started = performance.now();
    await proxy.set('pass');
    for (;;) {
      const status = (await api<{ data: { last_download_at: string | null } }>(edge, 'GET', '/sync/status')).data;
      const rows = Number(/^gatehouse_sync_downloaded_rows_total (\S+)$/m.exec(await (await fetch(`${edge.url}/metrics`)).text())?.[1] ?? 0);
      if (status.last_download_at !== null && rows >= total) break;
      if (performance.now() - started > 600_000) throw new Error('the pull did not finish in 10 minutes');
      await sleep(100);
    }
    const took = (performance.now() - started) / 1000;
    if (profile) {
      for (const node of [edge, cloud]) node.proc.kill('SIGUSR2');
      await sleep(2000);
    }
    seconds.push(took);
    console.error(`pull ${n}: ${took.toFixed(2)} s, edge cpu ${(cpuOf(edge.proc.pid!) - cpuBefore).toFixed(2)} s`);
    await Promise.all([stopProcess(edge.proc, 15_000), stopProcess(proxy.child)]);
  }
  seconds.sort((a, b) => a - b);
  line('sync.pull_100k_attendees_s', seconds[seconds.length >> 1]!.toFixed(2), 's');
}

try {
  await main();
} finally {
  for (const p of procs) if (p.exitCode === null) p.kill('SIGKILL');
  await sleep(200);
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
}
