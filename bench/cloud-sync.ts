// bench:cloud-sync — docs/performance.md, "Cloud sync". A cloud and edges as processes on loopback (each
// edge through a TCP proxy), per run:
//   sync.upload_100k_events_s:   an edge with a backlog of 100,000 access events (written while
//                                its link was cut), from the link's return until the cloud holds them all;
//   sync.pull_100k_attendees_s:  a fresh edge's first pull of 100,000 attendees with 200,000
//                                credentials, from its link coming up until it has every row;
//   sync.pull_edge_memory_mb:    that edge's peak RSS during the pull above its RSS before it;
//   sync.revocation_ms:          median of 10: a credential revoked on the cloud (the DELETE's
//                                answer) until the online edge refuses it;
//   sync.scan_to_cloud_ms:       median of 10: a scan's answer at the edge until the cloud has the event;
//   sync.decisions_per_s_idle / _during_sync and their ratio: a closed MQTT loop (8 readers, QoS 1)
//                                on the first edge, with nothing to sync, then while it uploads
//                                the backlog and pulls the 300,000 rows.
// The bulk rows are written straight into the SQLite files (as the journal's ingest and a bulk
// import leave them), so the figures are sync's, not REST's. The cloud runs at nice 19 (a machine
// elsewhere); the edges retry within 100 ms. BENCH_QUICK=1: 10,000 and 10,000.
import { randomUUID } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import mqtt from 'mqtt';
import { cpuOf, line, machineBusy, rssOf, sleep } from './process-stats.js';
import { stopProcess } from './appliance-process.js';
import {
  api,
  attendeesOnCloud,
  cleanUp,
  downloadedRows,
  metric,
  LinkProxy,
  type Node as BaseNode,
  openDb,
  startNode,
  seedVenue,
} from './sync-bench.js';

const quick = process.env.BENCH_QUICK === '1';
const EVENTS = quick ? 10_000 : 100_000;
const ATTENDEES = quick ? 10_000 : 100_000;
const READERS = 8;

/** An appliance process of this bench: an edge gets its MQTT port with its readers' credentials. */
type Node = BaseNode & { mqttPort: number };

async function start(name: string, env: Record<string, string>): Promise<Node> {
  // The cloud stands in for a machine elsewhere: at nice 19 it takes only the CPU the edge and
  // the load leave (on this 2-core box it would otherwise take the edge's core in every figure).
  return { ...(await startNode(name, env, name === 'cloud' ? 19 : undefined)), mqttPort: 0 };
}

const status = async (node: Node) => (await api<{ data: Record<string, unknown> }>(node, 'GET', '/sync/status')).data;

async function until(what: string, check: () => Promise<boolean> | boolean, ms = 300_000, every = 50): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(every);
  }
}

/** A closed loop of MQTT scans on the edge's readers: each reader sends its next scan when its decision arrives. */
async function mqttLoop(
  edge: Node,
  readers: { username: string; password: string; scans: string; decisions: string }[],
  credentials: string[],
) {
  let decisions = 0;
  let running = true;
  const clients = await Promise.all(
    readers.map(
      (r, i) =>
        new Promise<mqtt.MqttClient>((resolve, reject) => {
          const c = mqtt.connect(`mqtt://127.0.0.1:${edge.mqttPort}`, {
            clientId: `bench-sync-${i}`,
            username: r.username,
            password: r.password,
            reconnectPeriod: 0,
          });
          let n = 0;
          const next = () => {
            if (!running) return;
            n++;
            c.publish(
              r.scans,
              JSON.stringify({
                request_id: `${i}-${n}-${Date.now()}`,
                credential_value: credentials[(i * 7919 + n) % credentials.length],
                timestamp: new Date().toISOString(),
              }),
              {
                qos: 1,
              },
            );
          };
          c.on('message', () => {
            decisions++;
            next();
          });
          c.once('connect', () =>
            c.subscribe(r.decisions, { qos: 1 }, () => resolve(Object.assign(c, { kick: next }))),
          );
          c.once('error', reject);
        }),
    ),
  );
  for (const c of clients) (c as mqtt.MqttClient & { kick: () => void }).kick();
  return {
    count: () => decisions,
    stop: async () => {
      running = false;
      await Promise.all(clients.map((c) => c.endAsync()));
    },
  };
}

async function main(): Promise<void> {
  // BENCH_DATABASE_URL: the cloud on PostgreSQL (bench/cloud-scale.ts runs this bench on both stores).
  const databaseUrl = process.env.BENCH_DATABASE_URL;
  const cloud = await start('cloud', {
    GATEHOUSE_ROLE: 'cloud',
    ...(databaseUrl ? { GATEHOUSE_DATABASE_URL: databaseUrl } : {}),
  });
  // The venue: a hall with an entry and an exit, 8 readers, a type, 1,000 scanning attendees.
  const { zone, entry, exit } = await seedVenue(cloud);
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
  const credentials = scanners.map((s) => s.credential_value);

  const issue = async (name: string) =>
    (await api<{ data: { token: string } }>(cloud, 'POST', '/sync/edges', { name }, 201)).data.token;
  const proxyA = await LinkProxy.start(Number(new URL(cloud.url).port));
  // A short back-off: the timings start when the link comes back, not when the edge next retries.
  const edgeEnv = (proxy: LinkProxy, token: string) => ({
    GATEHOUSE_ROLE: 'edge',
    GATEHOUSE_CLOUD_URL: proxy.url,
    GATEHOUSE_SYNC_TOKEN: token,
    GATEHOUSE_SYNC_BACKOFF_MAX_MS: '100',
  });
  const a = await start('edge-a', edgeEnv(proxyA, await issue('a')));
  await until(
    'edge a to have the venue',
    async () =>
      (await status(a)).last_download_at !== null &&
      (await api<{ meta: { total: number } }>(a, 'GET', '/attendees?per_page=1')).meta.total === 1000,
  );

  // Readers log in on the edge as they would on site.
  const readers: { username: string; password: string; scans: string; decisions: string }[] = [];
  for (let i = 1; i <= READERS; i++) await api(a, 'POST', '/readers/login', { reader_identifier: `BENCH-R${i}` }, 202);
  const logins = (await api<{ data: { reader_identifier: string; otp: string }[] }>(a, 'GET', '/readers/logins')).data;
  for (let i = 1; i <= READERS; i++) {
    const otp = logins.find((l) => l.reader_identifier === `BENCH-R${i}`)!.otp;
    const { mqtt: m } = (
      await api<{
        data: {
          mqtt: { port: number; username: string; password: string; scans_topic: string; decisions_topic: string };
        };
      }>(a, 'POST', '/api/v1/reader-otp/verify', {
        otp,
        reader_identifier: `BENCH-R${i}`,
      })
    ).data;
    a.mqttPort = m.port;
    readers.push({ username: m.username, password: m.password, scans: m.scans_topic, decisions: m.decisions_topic });
  }

  // Idle: nothing to sync (measured again after the sync: the mean of both is the baseline).
  const idleRun = async () => {
    const loop = await mqttLoop(a, readers, credentials);
    await sleep(1000);
    const from = loop.count();
    const started = performance.now();
    const cpu = [cpuOf(a.proc.pid!), cpuOf(cloud.proc.pid!), process.cpuUsage()];
    await sleep(quick ? 3000 : 8000);
    const seconds = (performance.now() - started) / 1000;
    const rate = (loop.count() - from) / seconds;
    const used = process.cpuUsage(cpu[2] as NodeJS.CpuUsage);
    const io = (pid: number) => Number(/write_bytes: (\d+)/.exec(readFileSync(`/proc/${pid}/io`, 'utf8'))?.[1] ?? 0);
    const wal = (() => {
      try {
        return statSync(join(a.dataDir, 'gatehouse.db-wal')).size;
      } catch {
        return 0;
      }
    })();
    console.error(
      `probe: wal ${(wal / 1e6).toFixed(0)} MB, edge wrote ${(io(a.proc.pid!) / 1e6).toFixed(0)} MB so far`,
    );
    console.error(
      `probe: edge cpu ${((cpuOf(a.proc.pid!) - (cpu[0] as number)) / seconds).toFixed(2)}, cloud ${((cpuOf(cloud.proc.pid!) - (cpu[1] as number)) / seconds).toFixed(2)}, bench ${((used.user + used.system) / 1e6 / seconds).toFixed(2)} cores; ${rate.toFixed(0)}/s`,
    );
    await loop.stop();
    return rate;
  };
  const idleBefore = await idleRun();
  await until('the idle scans uploaded', async () => (await status(a)).backlog === 0);

  // Fillers: access events straight into the edge's store (as its ingest leaves them), attendees
  // with two credentials each straight into the cloud's (as a bulk import leaves them).
  const backlogOnEdge = (count: number) => {
    const db = openDb(a);
    const projectA = db.prepare("SELECT id FROM projects WHERE slug = 'default'").pluck().get() as number;
    const attendeeOf = db.prepare('SELECT attendee_id, id FROM credentials WHERE value = ?');
    const sample = credentials.slice(0, 100).map((v) => attendeeOf.get(v) as { attendee_id: number; id: number });
    const insert = db.prepare(
      `INSERT INTO access_events (uuid, project_id, access_point_id, access_zone_id, reader_id, credential_id, credential_value, attendee_id, granted, reason, movement, counted, from_zone_id, scanned_at, decided_at, source)
       VALUES (?, ?, ?, ?, NULL, ?, ?, ?, 1, NULL, 'in', 0, NULL, ?, ?, 'mqtt')`,
    );
    db.transaction(() => {
      for (let i = 0; i < count; i++) {
        const who = sample[i % sample.length]!;
        const at = new Date(Date.now() - (count - i) * 10).toISOString();
        insert.run(randomUUID(), projectA, entry, zone, who.id, credentials[i % 100], who.attendee_id, at, at);
      }
    })();
    db.close();
  };
  let batchNo = 0;
  const attendeesOnCloudNow = (count: number) => attendeesOnCloud(cloud, count, `B${++batchNo}`);
  const cloudEvents = async () =>
    (await api<{ meta: { total: number } }>(cloud, 'GET', '/access-events?per_page=1')).meta.total;
  const downloaded = downloadedRows;
  const cut = async (proxy: LinkProxy, node: Node) => {
    await proxy.set('cut');
    await until(`${node.name} offline`, async () => (await status(node)).online === false);
  };

  // The upload alone: 100,000 events written while the link was cut, until the cloud has them.
  await cut(proxyA, a);
  backlogOnEdge(EVENTS);
  // Watched through the cloud's count of stored items (a counter on /metrics, bumped after each
  // commit), not by counting its access events: a count over the table on every probe is work
  // for the cloud under test, and far more of it on PostgreSQL than on SQLite.
  const before = await cloudEvents();
  const receivedBefore = await metric(cloud, 'gatehouse_sync_received_items_total');
  const uploadStarted = performance.now();
  await proxyA.set('pass');
  await until(
    'the backlog on the cloud',
    async () => (await metric(cloud, 'gatehouse_sync_received_items_total')) >= receivedBefore + EVENTS,
    600_000,
    50,
  );
  const uploadSeconds = (performance.now() - uploadStarted) / 1000;
  const stored = (await cloudEvents()) - before;
  if (stored !== EVENTS) throw new Error(`the cloud stored ${stored} of the ${EVENTS} events uploaded`);

  // The 300,000 rows the fresh edge below pulls (edge a takes them now, before the idle loop).
  const pulledBefore = await downloaded(a);
  attendeesOnCloudNow(ATTENDEES);
  await until(
    'edge a to pull the new rows',
    async () => (await downloaded(a)) - pulledBefore >= ATTENDEES * 3,
    600_000,
    100,
  );

  // A fresh edge's first pull of the 300,000 rows.
  const proxyB = await LinkProxy.start(Number(new URL(cloud.url).port));
  await proxyB.set('cut');
  const b = await start('edge-b', edgeEnv(proxyB, await issue('b')));
  await sleep(2000);
  const idleRss = rssOf(b.proc.pid!);
  let peakRss = idleRss;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssOf(b.proc.pid!))), 50);
  const pullStarted = performance.now();
  await proxyB.set('pass');
  const total = ATTENDEES * 3 + 1000 * 2 + 4 + READERS;
  await until(
    'edge b to have every row',
    async () => {
      const s = await status(b);
      return s.last_download_at !== null && (await downloaded(b)) >= total;
    },
    600_000,
    100,
  );
  const pullSeconds = (performance.now() - pullStarted) / 1000;
  clearInterval(sampler);
  // Edge b is another venue's box: stopped, so that the loop below measures edge a on its own
  // (left running, it pulled the next 300,000 rows too and took half a core from the loop).
  await Promise.all([stopProcess(b.proc), proxyB.stop()]);

  // During sync: the same again (a backlog up, 300,000 rows down) with the MQTT loop running.
  await cut(proxyA, a);
  backlogOnEdge(EVENTS);
  attendeesOnCloudNow(ATTENDEES);
  const busyLoop = await mqttLoop(a, readers, credentials);
  await sleep(500);
  await proxyA.set('pass');
  await sleep(500);
  const busyFrom = busyLoop.count();
  const busyStarted = performance.now();
  const busyCpu = [
    cpuOf(a.proc.pid!),
    cpuOf(cloud.proc.pid!),
    cpuOf(proxyA.pid),
    process.cpuUsage(),
    machineBusy(),
  ] as const;
  await sleep(quick ? 3000 : 8000);
  const busySeconds = (performance.now() - busyStarted) / 1000;
  const busyUsed = process.cpuUsage(busyCpu[3]);
  console.error(
    `during sync: edge cpu ${((cpuOf(a.proc.pid!) - busyCpu[0]) / busySeconds).toFixed(2)}, cloud ${((cpuOf(cloud.proc.pid!) - busyCpu[1]) / busySeconds).toFixed(2)}, link proxy ${((cpuOf(proxyA.pid) - busyCpu[2]) / busySeconds).toFixed(2)}, bench ${((busyUsed.user + busyUsed.system) / 1e6 / busySeconds).toFixed(2)}, the machine ${((machineBusy() - busyCpu[4]) / busySeconds).toFixed(2)} cores`,
  );
  const busyRate = (busyLoop.count() - busyFrom) / busySeconds;
  const stillSyncing = (await status(a)).backlog as number;
  await busyLoop.stop();

  // Edge a catches up (the rush is over), then: revocations pushed to it, scans reaching the cloud.
  await until('edge a to catch up', async () => (await status(a)).backlog === 0, 600_000, 200);
  const idleAfter = await idleRun();
  await until('the idle scans uploaded', async () => (await status(a)).backlog === 0, 600_000, 200);
  const idleRate = (idleBefore + idleAfter) / 2;
  const seen: number[] = [];
  for (let i = 0; i < 10; i++) {
    const count = await cloudEvents();
    await sleep(100);
    const scanned = performance.now();
    await api(a, 'POST', `/access-points/${exit}/scan`, { credential_value: `S-${i}` });
    await until('the scan on the cloud', async () => (await cloudEvents()) > count, 30_000, 2);
    seen.push(performance.now() - scanned);
  }
  seen.sort((x, y) => x - y);

  // Revocations pushed to the online edge a: the DELETE's answer until a refusal there.
  const revocations: number[] = [];
  for (let i = 0; i < 10; i++) {
    const value = `S-${900 + i}`;
    const holder = (await api<{ data: { id: number }[] }>(cloud, 'GET', `/attendees?search=S-${900 + i}`)).data[0]!.id;
    const credential = (await api<{ data: { id: number }[] }>(cloud, 'GET', `/attendees/${holder}/credentials`))
      .data[0]!.id;
    await sleep(300);
    await api(cloud, 'DELETE', `/credentials/${credential}`);
    const revoked = performance.now();
    await until(
      'the refusal',
      async () => {
        const answer = await api<{ access_granted?: boolean; data?: { access_granted: boolean } }>(
          a,
          'POST',
          `/access-points/${exit}/scan`,
          { credential_value: value },
        );
        return (answer.data?.access_granted ?? answer.access_granted) === false;
      },
      30_000,
      5,
    );
    revocations.push(performance.now() - revoked);
  }
  revocations.sort((x, y) => x - y);

  line('sync.upload_100k_events_s', uploadSeconds.toFixed(2), 's');
  line('sync.pull_100k_attendees_s', pullSeconds.toFixed(2), 's');
  line('sync.pull_edge_memory_mb', ((peakRss - idleRss) / 1024 / 1024).toFixed(1), 'MB');
  line('sync.revocation_ms', revocations[revocations.length >> 1]!.toFixed(0), 'ms');
  line('sync.scan_to_cloud_ms', seen[seen.length >> 1]!.toFixed(0), 'ms');
  line('sync.decisions_per_s_idle', idleRate.toFixed(0), '/s');
  console.error(`idle before the sync ${idleBefore.toFixed(0)}/s, after ${idleAfter.toFixed(0)}/s`);
  line('sync.decisions_per_s_during_sync', busyRate.toFixed(0), '/s');
  line('sync.ratio_during_sync_to_idle', (busyRate / idleRate).toFixed(3), 'x');
  console.error(
    `events ${EVENTS}, attendees ${ATTENDEES} (+${ATTENDEES * 2} credentials); still ${stillSyncing} to upload at the end of the ${busySeconds.toFixed(1)} s under load (sync paced while the doors are busy)`,
  );
}

try {
  await main();
} finally {
  await cleanUp();
}
