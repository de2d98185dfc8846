// bench:cloud-sync's pull alone, for profiles and quick A/B runs (docs/performance.md):
// a cloud at nice 19 with the same venue and the same 100,000 attendees with 200,000
// credentials written straight into its store, then PULLS fresh edges (default 3), one after
// the other, each through a TCP proxy process of its own, each timed from its link coming up
// until it has every row and has reached the newest change (as sync.pull_100k_attendees_s).
// Per pull it prints the seconds and the edge's CPU seconds; the figure is their median.
// CPU_PROF_DIR=<dir>: CPU profiles of each edge's and the cloud's main threads over the pull
// alone, written there as edge-<n>-1.cpuprofile and cloud-<n>.cpuprofile (a preload started and stopped by SIGUSR2: --cpu-prof is refused
// in NODE_OPTIONS and would cover the start-up too). The full bench, with the other figures, is
// bench/cloud-sync.ts.
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cpuOf, line, sleep } from './process-stats.js';
import { stopProcess } from './appliance-process.js';
import { api, attendeesOnCloud, cleanUp, downloadedRows, LinkProxy, startNode, seedVenue } from './sync-bench.js';

const ATTENDEES = process.env.BENCH_QUICK === '1' ? 10_000 : 100_000;
const PULLS = Number(process.env.PULLS ?? 3);
const READERS = 8;

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
  const profile = process.env.CPU_PROF_DIR;
  const preload = join(tmpdir(), `gatehouse-cpu-profile-preload-${process.pid}.mjs`);
  if (profile) writeFileSync(preload, PRELOAD);
  const profiled = (name: string): Record<string, string> =>
    profile ? { NODE_OPTIONS: `--import=${preload}`, CPU_PROFILE_PREFIX: join(profile, name) } : {};
  const cloud = await startNode('cloud', { GATEHOUSE_ROLE: 'cloud', ...profiled('cloud') }, 19);
  const { entry, exit } = await seedVenue(cloud);
  for (let i = 1; i <= READERS; i++)
    await api(cloud, 'POST', '/readers', { identifier: `BENCH-R${i}`, access_point_id: i % 2 ? entry : exit }, 201);
  const scanners = Array.from({ length: 1000 }, (_, i) => ({
    first_name: 'Scan',
    last_name: `No${i}`,
    attendee_type: 'guest',
    external_id: `S-${i}`,
    credential_value: `S-${i}`,
  }));
  await api(cloud, 'POST', '/attendees/import', scanners);
  attendeesOnCloud(cloud, ATTENDEES, 'B1');
  const total = ATTENDEES * 3 + 1000 * 2 + 4 + READERS;

  const seconds: number[] = [];
  for (let n = 1; n <= PULLS; n++) {
    const token = (await api<{ data: { token: string } }>(cloud, 'POST', '/sync/edges', { name: `pull-${n}` }, 201))
      .data.token;
    const proxy = await LinkProxy.start(Number(new URL(cloud.url).port));
    await proxy.set('cut');
    const edge = await startNode(`edge-${n}`, {
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
      const rows = await downloadedRows(edge);
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
    await Promise.all([stopProcess(edge.proc, 15_000), proxy.stop()]);
  }
  seconds.sort((a, b) => a - b);
  line('sync.pull_100k_attendees_s', seconds[seconds.length >> 1]!.toFixed(2), 's');
}

try {
  await main();
} finally {
  await cleanUp();
}
