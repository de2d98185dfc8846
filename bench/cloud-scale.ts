// bench:cloud-scale — docs/performance.md, "The cloud on PostgreSQL". Per run:
//   1. bench/cloud-sync.ts twice, its cloud on SQLite and then on PostgreSQL (a throwaway server on a
//      Unix socket, fsync on: test/helpers/postgres.ts starts it with fsync off, so this bench
//      starts its own; at nice 19 like the cloud beside it, see startServer), every figure printed
//      as <figure>.sqlite and <figure>.postgres, and the ratio of the times,
//      cloud_scale.pg_over_sqlite.<figure> (target ≤ 1.5);
//   2. 50 simulated edges uploading at once (each a client of the sync protocol: batches of 200
//      access events, one after the other, its own sync token) into one cloud instance on
//      PostgreSQL, then into two on the same database (edges split between them):
//        cloud_scale.<n>_instances_events_per_s     events stored per second, all edges together;
//        cloud_scale.<n>_instances_upload_p50_ms / _p99_ms  an upload request's answer time, median and p99;
//        cloud_scale.<n>_instances_cpu_us_per_event the instances' CPU per event;
//        cloud_scale.<n>_instances_machine_cpu_us_per_event the whole machine's (PostgreSQL included);
//      and cloud_scale.two_over_one (target ≥ 1).
// BENCH_QUICK=1: cloud-sync's quick sizes, 10 edges. BENCH_EDGES_ONLY=1: the simulated edges alone.
import { execFileSync, spawn } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
// @ts-expect-error a plain ES module of the scripts folder, without types
import { postgresBin } from '../scripts/test-tools.mjs';
import { cpuOf, line, machineBusy } from './process-stats.js';
import { api, cleanUp, type Node, P, seedVenue, startNode } from './sync-bench.js';

const quick = process.env.BENCH_QUICK === '1';
const edgesOnly = process.env.BENCH_EDGES_ONLY === '1';
const EDGES = quick ? 10 : 50;
const BATCHES = quick ? 5 : 10;
const BATCH = 200;

/**
 * A PostgreSQL server for this run, durable as a cloud's would be (fsync on). `nice`: its
 * processes' priority. bench/cloud-sync.ts runs its cloud at nice 19, a machine elsewhere taking
 * only the CPU the edge leaves; the cloud's database is on that machine too, so it runs at the
 * same priority there (at 0 it took the edge's CPU, which the SQLite cloud, its store inside the
 * niced process, never does).
 */
function startServer(nice = 0): { url: (name: string) => string; stop: () => void } {
  const bin = (postgresBin as () => string | null)();
  if (!bin) throw new Error('bench:cloud-scale needs PostgreSQL (Debian: postgresql)');
  const dir = mkdtempSync(join(tmpdir(), 'gh-bench-pg-'));
  const root = process.getuid?.() === 0;
  if (root)
    chownSync(dir, Number(execFileSync('id', ['-u', 'postgres'])), Number(execFileSync('id', ['-g', 'postgres'])));
  const as = (cmd: string, args: string[], prefix: string[] = []) => {
    const command = [...prefix, join(bin, cmd), ...args];
    return execFileSync(
      root ? 'runuser' : command[0]!,
      root ? ['-u', 'postgres', '--', ...command] : command.slice(1),
      {
        stdio: 'pipe',
      },
    );
  };
  as('initdb', ['-D', join(dir, 'data'), '-A', 'trust', '-U', 'postgres', '--encoding=UTF8', '--locale=C.UTF-8']);
  as(
    'pg_ctl',
    ['-D', join(dir, 'data'), '-w', '-l', join(dir, 'log'), '-o', `-k ${dir} -c listen_addresses=''`, 'start'],
    nice ? ['nice', '-n', String(nice)] : [],
  );
  let stopped = false;
  function stop(): void {
    if (stopped) return;
    stopped = true;
    try {
      as('pg_ctl', ['-D', join(dir, 'data'), '-m', 'fast', 'stop']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  // A run ended by a signal or an error stops its server too (bench/sync-bench.ts exits on signals).
  process.once('exit', stop);
  return {
    url: (name) => {
      execFileSync('psql', ['-h', dir, '-U', 'postgres', '-d', 'postgres', '-c', `CREATE DATABASE ${name}`], {
        stdio: 'pipe',
      });
      return `postgresql://postgres@/${name}?host=${encodeURIComponent(dir)}`;
    },
    stop,
  };
}

/** bench/cloud-sync.ts once, its figures by name. */
function cloudSync(env: Record<string, string>): Promise<Map<string, number>> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bench/run-ts.mjs', 'bench/cloud-sync.ts'], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const figures = new Map<string, number>();
    let text = '';
    child.stdout.on('data', (c: Buffer) => (text += c.toString()));
    child.on('exit', (code) => {
      for (const m of text.matchAll(/^([\w.]+): (-?[\d.]+) ?(\S*)$/gm)) figures.set(m[1]!, Number(m[2]));
      if (code === 0) resolve(figures);
      else reject(new Error(`cloud-sync ended with ${code}:\n${text}`));
    });
  });
}

/** `edges` simulated edges uploading BATCHES batches each, edge k to instances[k % n]. */
async function uploads(instances: Node[], tokens: string[], venue: { zone: number; entry: number }) {
  const latencies: number[] = [];
  const cpu0 = instances.map((i) => cpuOf(i.proc.pid!));
  const machine0 = machineBusy();
  const started = performance.now();
  await Promise.all(
    tokens.map(async (token, k) => {
      const instance = instances[k % instances.length]!;
      for (let b = 0; b < BATCHES; b++) {
        const now = new Date().toISOString();
        const items = Array.from({ length: BATCH }, () => ({
          kind: 'access',
          uuid: randomUUID(),
          access_point_id: venue.entry,
          access_zone_id: venue.zone,
          reader_id: null,
          credential_id: null,
          credential_value: `SIM-${k}`,
          attendee_id: null,
          granted: false,
          reason: 'invalid_credential',
          movement: null,
          scanned_at: now,
          decided_at: now,
          source: 'mqtt',
        }));
        for (;;) {
          const t0 = performance.now();
          const res = await fetch(`${instance.url}${P}/sync/upload`, {
            method: 'POST',
            headers: {
              authorization: `Bearer ${token}`,
              'content-type': 'application/json',
              'gatehouse-sync-protocol': '2',
            },
            body: JSON.stringify({ clock: { offset_ms: 0, synchronised: true }, backlog: 0, items }),
          });
          const text = await res.text();
          if (res.status === 503 || res.status === 429) {
            // The cloud's own back-pressure (uploadsAtOnce, a busy store): as an edge does, after Retry-After.
            await new Promise((r) => setTimeout(r, Number(res.headers.get('retry-after') ?? 1) * 100));
            continue;
          }
          if (res.status !== 200) throw new Error(`upload: ${res.status} ${text.slice(0, 300)}`);
          latencies.push(performance.now() - t0);
          break;
        }
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const events = tokens.length * BATCHES * BATCH;
  const cpu = instances.reduce((sum, inst, i) => sum + cpuOf(inst.proc.pid!) - cpu0[i]!, 0);
  latencies.sort((a, b) => a - b);
  return {
    perSecond: events / seconds,
    p50: latencies[Math.floor(latencies.length * 0.5)]!,
    p99: latencies[Math.floor(latencies.length * 0.99)]!,
    cpuUs: (cpu / events) * 1e6,
    machineUs: ((machineBusy() - machine0) / events) * 1e6,
  };
}

let server: ReturnType<typeof startServer> | null = null;
try {
  // 1. bench:cloud-sync on both stores, one after the other in this run.
  const sqlite = edgesOnly ? new Map<string, number>() : await cloudSync({});
  let postgres = new Map<string, number>();
  if (!edgesOnly) {
    server = startServer(19);
    postgres = await cloudSync({ BENCH_DATABASE_URL: server.url('cloud_sync') });
    server.stop();
    server = null;
  }
  for (const [name, value] of sqlite) console.log(`${name}.sqlite: ${value}`);
  for (const [name, value] of postgres) console.log(`${name}.postgres: ${value}`);
  for (const name of ['sync.upload_100k_events_s', 'sync.pull_100k_attendees_s', 'sync.revocation_ms']) {
    const a = sqlite.get(name);
    const b = postgres.get(name);
    if (a && b) line(`cloud_scale.pg_over_sqlite.${name.replace(/^sync\./, '')}`, (b / a).toFixed(3), 'ratio');
  }

  // 2. Simulated edges into one instance, then two, on one database (instances and database at
  // the same priority as each other, as in cloud-sync above).
  server = startServer();
  const url = server.url('cloud_scale');
  const env = { GATEHOUSE_ROLE: 'cloud', GATEHOUSE_DATABASE_URL: url, GATEHOUSE_RATE_LIMIT_SYNC: '0' };
  const one = await startNode('cloud-1', env);
  const venue = await seedVenue(one);
  const tokens: string[] = [];
  for (let k = 0; k < EDGES; k++)
    tokens.push(
      (await api<{ data: { token: string } }>(one, 'POST', '/sync/edges', { name: `sim-${k}` }, 201)).data.token,
    );
  const single = await uploads([one], tokens, venue);
  const two = await startNode('cloud-2', env);
  const both = await uploads([one, two], tokens, venue);
  for (const [n, r] of [
    ['one', single],
    ['two', both],
  ] as const) {
    line(`cloud_scale.${n}_instances_events_per_s`, Math.round(r.perSecond), '/s');
    line(`cloud_scale.${n}_instances_upload_p50_ms`, r.p50.toFixed(1), 'ms');
    line(`cloud_scale.${n}_instances_upload_p99_ms`, r.p99.toFixed(1), 'ms');
    line(`cloud_scale.${n}_instances_cpu_us_per_event`, r.cpuUs.toFixed(1), 'µs');
    line(`cloud_scale.${n}_instances_machine_cpu_us_per_event`, r.machineUs.toFixed(1), 'µs');
  }
  line('cloud_scale.two_over_one', (both.perSecond / single.perSecond).toFixed(3), 'ratio');
} finally {
  await cleanUp();
  server?.stop();
}
