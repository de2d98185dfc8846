// bench:sync-upload — the cloud's event loop while it takes a maximal upload from an edge
// (docs/sync.md: limits; docs/security.md: floods from an edge). A cloud process on loopback, a
// hall with an entry and an exit, 200 attendees; an edge's sync token (no edge process: the
// bench speaks for it). A probe asks the cloud's /health one request at a time, 5 ms apart:
// first for 2 s with nothing else (the baseline), then while the token uploads a maximal batch,
// three times: BENCH_UPLOAD_ITEMS items (the most one request may carry) filling
// BENCH_UPLOAD_BYTES (its largest body), each a granted entry or exit of one of the attendees,
// in scan order, new uuids each time. Figures:
//   upload_health.idle_max_ms:    the slowest /health answer with nothing else under way
//   upload_health.during_max_ms:  the slowest /health answer asked while an upload was under way
//   upload_health.during_p50_ms:  the median of those
//   upload_health.upload_ms:      the median upload, from sending it to its answer
//   upload_health.items:          the items of each upload (to tell a run's limits)
// The defaults are this build's limits (protocol.ts); a build from before them took 10,000 items
// in 32 MiB: BENCH_UPLOAD_ITEMS=10000 BENCH_UPLOAD_BYTES=33554432 measures that.
import { randomUUID } from 'node:crypto';
import { UPLOAD_MAX_BYTES, UPLOAD_MAX_ITEMS } from '../sync/protocol.js';
import { line, sleep } from './process-stats.js';
import { api, cleanUp, P, startNode, seedVenue } from './sync-bench.js';

const ITEMS = Number(process.env.BENCH_UPLOAD_ITEMS ?? UPLOAD_MAX_ITEMS);
const BYTES = Number(process.env.BENCH_UPLOAD_BYTES ?? UPLOAD_MAX_BYTES);
const UPLOADS = 3;
const ATTENDEES = 200;

const median = (sorted: number[]) => sorted[sorted.length >> 1] ?? 0;

/** /health, one request at a time, until stopped: each answer's latency and whether it was asked while `during()` held. */
function probe(url: string, during: () => boolean) {
  const idle: number[] = [];
  const busy: number[] = [];
  let running = true;
  const done = (async () => {
    while (running) {
      const asked = during();
      const started = performance.now();
      const res = await fetch(`${url}/health`);
      await res.arrayBuffer();
      (asked || during() ? busy : idle).push(performance.now() - started);
      await sleep(5);
    }
  })();
  return {
    idle,
    busy,
    stop: async () => {
      running = false;
      await done;
    },
  };
}

async function main(): Promise<void> {
  const cloud = await startNode('cloud', { GATEHOUSE_ROLE: 'cloud' });
  const { zone, entry, exit } = await seedVenue(cloud);
  const rows = Array.from({ length: ATTENDEES }, (_, i) => ({
    first_name: 'Guest',
    last_name: `No${i}`,
    attendee_type: 'guest',
    external_id: `G-${i}`,
    credential_value: `G-${i}`,
  }));
  await api(cloud, 'POST', '/attendees/import', rows);
  const attendees: number[] = [];
  for (let page = 1; attendees.length < ATTENDEES; page++)
    attendees.push(
      ...(await api<{ data: { id: number }[] }>(cloud, 'GET', `/attendees?per_page=100&page=${page}`)).data.map(
        (a) => a.id,
      ),
    );
  const token = (await api<{ data: { token: string } }>(cloud, 'POST', '/sync/edges', { name: 'bench' }, 201)).data
    .token;

  let clock = Date.now() - 3_600_000;
  /** A maximal batch, serialised before it is timed: each item padded (its credential value) so the body fills BYTES. */
  const batch = (): Buffer => {
    const items = Array.from({ length: ITEMS }, (_, i) => {
      const attendee = attendees[i % ATTENDEES]!;
      const inside = Math.floor(i / ATTENDEES) % 2 === 0;
      const at = new Date((clock += 10)).toISOString();
      return {
        kind: 'access',
        uuid: randomUUID(),
        access_point_id: inside ? entry : exit,
        access_zone_id: zone,
        reader_id: null,
        credential_id: null,
        credential_value: `G-${i % ATTENDEES}`,
        attendee_id: attendee,
        granted: true,
        reason: null,
        movement: inside ? 'in' : 'out',
        scanned_at: at,
        decided_at: at,
        source: 'mqtt',
        clock_offset_ms: 0,
        clock_synchronised: true,
      };
    });
    const bare = Buffer.byteLength(JSON.stringify({ clock: { offset_ms: 0, synchronised: true }, backlog: 0, items }));
    const pad = Math.max(0, Math.min(4000, Math.floor((BYTES - 4096 - bare) / ITEMS)));
    for (const item of items) item.credential_value += '-'.repeat(pad);
    return Buffer.from(JSON.stringify({ clock: { offset_ms: 0, synchronised: true }, backlog: 0, items }));
  };

  let uploading = false;
  const health = probe(cloud.url, () => uploading);
  await sleep(2000);
  const uploads: number[] = [];
  for (let k = 0; k < UPLOADS; k++) {
    const body = batch();
    console.error(`upload ${k + 1}: ${ITEMS} items, ${(body.length / 1048576).toFixed(1)} MiB`);
    await sleep(300);
    uploading = true;
    const started = performance.now();
    const res = await fetch(`${cloud.url}${P}/sync/upload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'gatehouse-sync-protocol': '1' },
      body: new Uint8Array(body),
    });
    const text = await res.text();
    uploads.push(performance.now() - started);
    uploading = false;
    if (res.status !== 200) throw new Error(`upload: ${res.status} ${text.slice(0, 300)}`);
    const accepted = (JSON.parse(text) as { data: { accepted: number } }).data.accepted;
    if (accepted !== ITEMS) throw new Error(`upload: ${accepted} of ${ITEMS} items stored`);
  }
  await sleep(300);
  await health.stop();
  const idle = [...health.idle].sort((a, b) => a - b);
  const busy = [...health.busy].sort((a, b) => a - b);
  console.error(
    `probes: ${idle.length} idle, ${busy.length} during uploads; slowest during: ${busy
      .slice(-8)
      .map((ms) => ms.toFixed(0))
      .join(', ')} ms`,
  );
  line('upload_health.idle_max_ms', (idle.at(-1) ?? 0).toFixed(1), 'ms');
  line('upload_health.during_max_ms', (busy.at(-1) ?? 0).toFixed(1), 'ms');
  line('upload_health.during_p50_ms', median(busy).toFixed(1), 'ms');
  line('upload_health.upload_ms', median([...uploads].sort((a, b) => a - b)).toFixed(0), 'ms');
  line('upload_health.items', ITEMS, 'items');
}

try {
  await main();
} finally {
  await cleanUp();
}
