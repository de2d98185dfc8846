// bench:ws — WebSocket fan-out of the Pusher protocol-7 server (issue 6): 1,000 clients
// subscribed to one private channel while 1,000 events/s are published for 10 s through the
// signed Pusher HTTP API, against the real appliance in its own process (`node dist/main.js`,
// built first when missing or older than src/). Prints, one per line:
//   ws.delivered_per_s   deliveries (one event to one client) per second, first publish to last receipt
//   ws.lost_events       expected deliveries (events not refused x clients) minus those received, after a drain
//   ws.p50_ms / p99_ms   publish-to-receive latency over every delivery, from the event's scheduled
//                        publish time (open loop: a stalled publisher or server is seen, not hidden)
//   ws.server_rss_mb     peak VmRSS of the server process while publishing, next to
//   ws.baseline_rss_mb   its VmRSS started and warmed up with no client connected (same run)
//   ws.server_cpu_us_per_delivery / ws.server_core_capacity_per_s   the server's CPU per delivery
//                        and the deliveries/s one core would carry at that cost
// and the context: clients, events published, server CPU, publisher lag, closed clients.
//
// Publisher: batches of 10 events every 10 ms (POST /apps/{id}/batch_events, signed by the
// `pusher` server library over a keep-alive agent), each event's data {s: sequence, t: scheduled
// publish time as performance.timeOrigin + performance.now()}. Clients: raw `ws` sockets in a
// worker thread, speaking just enough of the protocol (connection_established, pusher:subscribe
// with a locally computed auth signature, subscription_succeeded, pusher:ping); one client's auth
// is also fetched from POST /broadcasting/auth and must match. The receive path reads only the
// sequence number and timestamp out of each frame, so the bench's side stays cheap; pusher-js and
// laravel-echo interoperability is covered by the tests, not here.
// BENCH_QUICK=1: 200 clients for 3 s, same lines. BENCH_WS_CLIENTS / _SECONDS / _RATE / _BATCH /
// _WORKERS (client threads) override; BENCH_WS_SERVER_FLAGS passes node flags to the server (--cpu-prof);
// BENCH_WS_SERVER runs another build of the appliance instead of dist/main.js, to compare.
import { spawn, spawnSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import Pusher from 'pusher';
import WebSocket from 'ws';
import { line, sleep, wallNow, FINE, HIST, bucketOf, msOf, newestMtime, nodeFlags, rssOf, cpuOf, machineBusy, freePort, waitUntilReady } from './process-stats.js';

const APP = { appId: '424242', key: 'benchkey', secret: 'bench-secret-0123456789abcdef' };
const CHANNEL = 'private-dashboard.project.default.access';
const EVENT = 'BenchEvent';

const sign = (socketId: string) => `${APP.key}:${createHmac('sha256', APP.secret).update(`${socketId}:${CHANNEL}`).digest('hex')}`;


type ToWorker = { cmd: 'count' } | { cmd: 'report' } | { cmd: 'close' };
interface WorkerInit {
  url: string;
  clients: number;
  events: number;
}
interface WorkerReport {
  received: number;
  minPerClient: number;
  maxPerClient: number;
  duplicates: number;
  closed: number;
  closeCodes: Record<string, number>;
  lastReceiveAt: number;
  hist: Uint32Array;
}

// ---------------------------------------------------------------- client worker
async function clientWorker(): Promise<void> {
  const { url, clients, events } = workerData as WorkerInit;
  const port = parentPort!;
  const received = new Uint32Array(clients);
  // Which sequence numbers each client got, one bit each (batches published over several
  // connections may be handled out of order, so a last-seen number would not do).
  const stride = Math.ceil(events / 8);
  const seen = new Uint8Array(clients * stride);
  const hist = new Uint32Array(HIST);
  const closeCodes: Record<string, number> = {};
  let total = 0;
  let duplicates = 0;
  let closed = 0;
  let lastReceiveAt = 0;
  const sockets: WebSocket[] = [];
  const SEQ = '\\"s\\":';
  const TIME = '\\"t\\":';
  const PREFIX = `{"event":"${EVENT}"`;

  const open = (i: number) =>
    new Promise<void>((resolve, reject) => {
      const ws = new WebSocket(url, { perMessageDeflate: false, skipUTF8Validation: true });
      sockets[i] = ws;
      let subscribed = false;
      const timer = setTimeout(() => reject(new Error(`client ${i}: not subscribed within 20 s`)), 20_000);
      ws.on('error', (err) => {
        if (!subscribed) reject(err);
      });
      ws.on('close', (code) => {
        closeCodes[code] = (closeCodes[code] ?? 0) + 1;
        closed++;
        if (!subscribed) reject(new Error(`client ${i}: closed ${code} before subscribing`));
      });
      ws.on('message', (raw: Buffer) => {
        const text = raw.toString('latin1');
        if (text.startsWith(PREFIX)) {
          // {"event":"BenchEvent","channel":"...","data":"{\"s\":123,\"t\":1732...}"}: read s and t only.
          const now = wallNow();
          const s = text.indexOf(SEQ);
          const t = text.indexOf(TIME, s);
          const seq = Number.parseInt(text.slice(s + SEQ.length), 10);
          const at = Number.parseFloat(text.slice(t + TIME.length));
          if (!(seq >= 0 && seq < events)) throw new Error(`client ${i}: unexpected frame ${text}`);
          const byte = i * stride + (seq >> 3);
          const bit = 1 << (seq & 7);
          if (seen[byte]! & bit) duplicates++;
          seen[byte]! |= bit;
          received[i]!++;
          total++;
          hist[bucketOf(now - at)]!++;
          lastReceiveAt = now;
          return;
        }
        const frame = JSON.parse(text) as { event: string; data?: string };
        if (frame.event === 'pusher:connection_established') {
          const socketId = (JSON.parse(frame.data!) as { socket_id: string }).socket_id;
          ws.send(JSON.stringify({ event: 'pusher:subscribe', data: { channel: CHANNEL, auth: sign(socketId) } }));
        } else if (frame.event === 'pusher_internal:subscription_succeeded') {
          subscribed = true;
          clearTimeout(timer);
          resolve();
        } else if (frame.event === 'pusher:ping') {
          ws.send('{"event":"pusher:pong","data":{}}');
        } else if (frame.event === 'pusher:subscription_error' || frame.event === 'pusher:error') {
          reject(new Error(`client ${i}: ${text}`));
        }
      });
    });

  // Connect 50 at a time (a burst of 1,000 handshakes would only measure the accept queue).
  let next = 0;
  await Promise.all(
    Array.from({ length: 50 }, async () => {
      while (next < clients) await open(next++);
    }),
  );
  port.postMessage({ type: 'ready' });

  port.on('message', (msg: ToWorker) => {
    if (msg.cmd === 'count') port.postMessage({ type: 'count', received: total });
    else if (msg.cmd === 'report') {
      let min = Infinity;
      let max = 0;
      for (const n of received) {
        min = Math.min(min, n);
        max = Math.max(max, n);
      }
      const report: WorkerReport = { received: total, minPerClient: min, maxPerClient: max, duplicates, closed, closeCodes, lastReceiveAt, hist };
      port.postMessage({ type: 'report', report }, [hist.buffer]);
    } else if (msg.cmd === 'close') {
      for (const ws of sockets) ws.terminate();
      port.close();
    }
  });
}

// ---------------------------------------------------------------- main


async function main(): Promise<void> {
  const quick = process.env.BENCH_QUICK === '1';
  const env = (name: string, fallback: number) => (process.env[name] ? Number(process.env[name]) : fallback);
  const clients = env('BENCH_WS_CLIENTS', quick ? 200 : 1000);
  const seconds = env('BENCH_WS_SECONDS', quick ? 3 : 10);
  const rate = env('BENCH_WS_RATE', 1000);
  const workers = env('BENCH_WS_WORKERS', 2);
  const BATCH = env('BENCH_WS_BATCH', 10); // events per batch_events request; 10 is the API's limit
  const batches = Math.round((rate * seconds) / BATCH);
  const batchEveryMs = (1000 * BATCH) / rate;

  // The server: the built appliance in its own process (built first when missing or stale).
  if (!process.env.BENCH_WS_SERVER && (!existsSync('dist/main.js') || statSync('dist/main.js').mtimeMs < newestMtime('src'))) {
    const built = spawnSync(process.execPath, ['scripts/build.mjs'], { stdio: 'inherit' });
    if (built.status !== 0) throw new Error('node scripts/build.mjs failed');
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-ws-'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const serverFlags = process.env.BENCH_WS_SERVER_FLAGS ? process.env.BENCH_WS_SERVER_FLAGS.split(' ') : []; // e.g. --cpu-prof
  const entry = process.env.BENCH_WS_SERVER ?? 'dist/main.js'; // another build of the appliance, to compare
  const server = spawn(process.execPath, [...nodeFlags(), ...serverFlags, entry], {
    env: {
      PATH: process.env.PATH ?? '',
      GATEHOUSE_DATA_DIR: dataDir,
      GATEHOUSE_HTTP_HOST: '127.0.0.1',
      GATEHOUSE_HTTP_PORT: String(port),
      GATEHOUSE_MQTT_PORT: '0',
      GATEHOUSE_ADMIN_EMAIL: 'bench@gatehouse.local',
      GATEHOUSE_ADMIN_PASSWORD: 'bench password',
      GATEHOUSE_RATE_LIMIT_STANDARD: '0',
      GATEHOUSE_LOG_LEVEL: 'warn',
      GATEHOUSE_PUSHER_APP_ID: APP.appId,
      GATEHOUSE_PUSHER_KEY: APP.key,
      GATEHOUSE_PUSHER_SECRET: APP.secret,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const serverOutput: string[] = [];
  const keep = (chunk: Buffer) => serverOutput.push(chunk.toString('utf8'));
  server.stdout!.on('data', keep);
  server.stderr!.on('data', keep);
  const serverExit = new Promise<number | null>((resolve) => server.on('exit', resolve));
  const workerThreads: Worker[] = [];
  const fail = (message: string) => new Error(`${message}\nserver output:\n${serverOutput.join('').slice(-4000)}`);

  try {
    await waitUntilReady(base, server, fail);
    const pid = server.pid!;

    // The dashboard's path: a token, the client config, one auth from /broadcasting/auth.
    const tokenRes = await fetch(`${base}/api/v1/auth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'bench@gatehouse.local', password: 'bench password', device_name: 'bench-ws' }),
    });
    if (!tokenRes.ok) throw fail(`token: ${tokenRes.status} ${await tokenRes.text()}`);
    const { token } = (await tokenRes.json()) as { token: string };
    const bearer = { authorization: `Bearer ${token}` };
    const configRes = await fetch(`${base}/api/v1/broadcasting/config`, { headers: bearer });
    const { data: clientConfig } = (await configRes.json()) as { data: { key: string; ws_port: number; ws_path: string } };
    if (clientConfig.key !== APP.key || clientConfig.ws_port !== port) throw fail(`unexpected client config ${JSON.stringify(clientConfig)}`);
    const url = `ws://127.0.0.1:${port}${clientConfig.ws_path}/app/${clientConfig.key}?protocol=7&client=bench&version=8.4.0&flash=false`;
    await checkAuthEndpoint(url, base, bearer);

    // Warm the publish route, with nobody subscribed yet, then the baseline.
    const agent = new Agent({ keepAlive: true, maxSockets: 4 });
    const pusher = new Pusher({ ...APP, host: '127.0.0.1', port: String(port), useTLS: false, agent });
    for (let i = 0; i < 50; i++) await pusher.triggerBatch(Array.from({ length: 10 }, () => ({ channel: CHANNEL, name: EVENT, data: { s: -1, t: wallNow() } })));
    await sleep(500);
    const baselineRss = rssOf(pid);

    // Clients, split over worker threads.
    const ready: Promise<void>[] = [];
    for (let w = 0; w < workers; w++) {
      const count = Math.floor(clients / workers) + (w < clients % workers ? 1 : 0);
      const worker = new Worker(new URL(import.meta.url), { workerData: { url, clients: count, events: batches * BATCH } satisfies WorkerInit });
      workerThreads.push(worker);
      ready.push(
        new Promise<void>((resolve, reject) => {
          worker.once('message', (m: { type: string }) => (m.type === 'ready' ? resolve() : reject(new Error(m.type))));
          worker.once('error', reject);
        }),
      );
    }
    const connectStarted = performance.now();
    await Promise.all(ready);
    const connectSeconds = (performance.now() - connectStarted) / 1000;
    const ask = <T>(worker: Worker, cmd: ToWorker, type: string) =>
      new Promise<T>((resolve) => {
        const on = (m: { type: string } & T) => {
          if (m.type !== type) return;
          worker.off('message', on);
          resolve(m);
        };
        worker.on('message', on);
        worker.postMessage(cmd);
      });
    const receivedSoFar = async () => (await Promise.all(workerThreads.map((w) => ask<{ received: number }>(w, { cmd: 'count' }, 'count')))).reduce((a, c) => a + c.received, 0);
    await sleep(300);
    const connectedRss = rssOf(pid);

    // Publish: open loop, batch k is due at start + k * batchEveryMs whether or not earlier ones were answered.
    let peakRss = connectedRss;
    const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssOf(pid))), 100);
    const lag = new Float64Array(batches);
    const answer = new Float64Array(batches).fill(Infinity); // unanswered by the deadline: Infinity
    const publishes: Promise<unknown>[] = [];
    let accepted = 0;
    let publishErrors = 0;
    let firstError = '';
    const cpuBefore = cpuOf(pid);
    const machineBefore = machineBusy();
    const benchCpuBefore = process.cpuUsage();
    const start = performance.now() + 20;
    for (let k = 0; k < batches; k++) {
      const due = start + k * batchEveryMs;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait); // timers fire up to ~1 ms late: ws.publish_lag_p99_ms; t is the due time regardless
      lag[k] = performance.now() - due;
      const t = performance.timeOrigin + due;
      const batch = Array.from({ length: BATCH }, (_, j) => ({ channel: CHANNEL, name: EVENT, data: { s: k * BATCH + j, t } }));
      publishes.push(
        pusher.triggerBatch(batch).then(
          () => {
            accepted += BATCH;
            answer[k] = performance.now() - due;
          },
          (err: Error) => {
            publishErrors += BATCH;
            firstError ||= err.message;
          },
        ),
      );
    }
    const publishEnd = performance.now();
    // A server that fell behind answers and delivers after the schedule: wait for its backlog
    // (which counts), up to 15 s (quick) or 120 s (full) after the last publish.
    const deadline = publishEnd + (quick ? 15_000 : 120_000);
    let deadlineTimer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(publishes), new Promise((r) => (deadlineTimer = setTimeout(r, deadline - performance.now())))]);
    clearTimeout(deadlineTimer);
    const answeredAt = performance.now();

    // Drain: until every client has every event the server did not refuse, or nothing moved for
    // 3 s, or the deadline.
    const sent = batches * BATCH;
    const expected = () => (sent - publishErrors) * clients;
    let got = await receivedSoFar();
    for (let idle = 0; got < expected() && idle < 3000 && performance.now() < deadline; ) {
      await sleep(100);
      const now = await receivedSoFar();
      idle = now === got ? idle + 100 : 0;
      got = now;
    }
    clearInterval(sampler);
    const serverCpu = cpuOf(pid) - cpuBefore;
    const machineCpu = machineBusy() - machineBefore;
    const benchCpu = process.cpuUsage(benchCpuBefore);
    const drainedAt = performance.now();

    const reports = await Promise.all(workerThreads.map((w) => ask<{ report: WorkerReport }>(w, { cmd: 'report' }, 'report')));
    const hist = new Uint32Array(HIST);
    let received = 0;
    let duplicates = 0;
    let closed = 0;
    let lastReceiveAt = 0;
    let minPerClient = Infinity;
    let maxPerClient = 0;
    const closeCodes: Record<string, number> = {};
    for (const { report } of reports) {
      report.hist.forEach((n, i) => (hist[i]! += n));
      received += report.received;
      duplicates += report.duplicates;
      closed += report.closed;
      lastReceiveAt = Math.max(lastReceiveAt, report.lastReceiveAt);
      minPerClient = Math.min(minPerClient, report.minPerClient);
      maxPerClient = Math.max(maxPerClient, report.maxPerClient);
      for (const [code, n] of Object.entries(report.closeCodes)) closeCodes[code] = (closeCodes[code] ?? 0) + n;
    }
    if (received === 0) throw fail(`no event reached any client (${sent} sent, ${accepted} accepted, ${publishErrors} refused: ${firstError})`);
    const percentile = (p: number) => {
      const rank = Math.ceil(received * p);
      let seen = 0;
      for (let i = 0; i < HIST; i++) if ((seen += hist[i]!) >= rank) return msOf(i);
      return msOf(HIST - 1);
    };
    let maxBucket = HIST - 1;
    while (maxBucket > 0 && hist[maxBucket] === 0) maxBucket--;
    const deliverySeconds = (lastReceiveAt - (performance.timeOrigin + start)) / 1000;
    lag.sort();
    answer.sort();

    line('ws.clients', clients, 'clients');
    line('ws.events_published', sent - publishErrors, 'events');
    line('ws.publish_rate', Math.round(sent / ((publishEnd - start) / 1000)), 'events/s');
    line('ws.delivered_per_s', Math.round(received / deliverySeconds), 'deliveries/s');
    line('ws.expected_per_s', clients * rate, 'deliveries/s');
    line('ws.lost_events', expected() - (received - duplicates), 'deliveries');
    line('ws.p50_ms', percentile(0.5).toFixed(2), 'ms');
    line('ws.p99_ms', percentile(0.99).toFixed(2), 'ms');
    line('ws.max_ms', msOf(maxBucket).toFixed(2), 'ms');
    line('ws.server_rss_mb', (peakRss / 1024 / 1024).toFixed(0), 'MB');
    line('ws.connected_rss_mb', (connectedRss / 1024 / 1024).toFixed(0), 'MB');
    line('ws.baseline_rss_mb', (baselineRss / 1024 / 1024).toFixed(0), 'MB');
    line('ws.server_cpu_pct', ((100 * serverCpu) / ((drainedAt - start) / 1000)).toFixed(0), '% of one core');
    // The server's own cost per delivery, and what one core would carry at that cost: with the
    // clients on the same two cores, the end-to-end rate above is bounded by the clients' side.
    line('ws.server_cpu_us_per_delivery', ((serverCpu * 1e6) / received).toFixed(2), 'us');
    line('ws.server_core_capacity_per_s', Math.round(received / serverCpu), 'deliveries/s');
    line('ws.bench_cpu_pct', ((100 * (benchCpu.user + benchCpu.system)) / 1000 / (drainedAt - start)).toFixed(0), '% of one core');
    // Whatever else ran on the box meanwhile (the noise): machine busy time minus server and bench.
    const benchSeconds = (benchCpu.user + benchCpu.system) / 1e6;
    line('ws.other_cpu_pct', Math.max(0, (100 * (machineCpu - serverCpu - benchSeconds)) / ((drainedAt - start) / 1000)).toFixed(0), '% of one core');
    line('ws.publish_lag_p99_ms', lag[Math.floor(batches * 0.99)]!.toFixed(2), 'ms');
    line('ws.publish_answer_p50_ms', answer[Math.floor(batches * 0.5)]!.toFixed(2), 'ms');
    line('ws.publish_answer_p99_ms', answer[Math.floor(batches * 0.99)]!.toFixed(2), 'ms');
    line('ws.last_answer_after_ms', (answeredAt - publishEnd).toFixed(0), 'ms');
    line('ws.drain_s', ((drainedAt - answeredAt) / 1000).toFixed(1), 's');
    line('ws.connect_s', connectSeconds.toFixed(2), 's');
    line('ws.per_client_min', minPerClient, 'events');
    line('ws.per_client_max', maxPerClient, 'events');
    line('ws.duplicates', duplicates, 'deliveries');
    line('ws.closed_clients', closed, `clients${closed ? ` ${JSON.stringify(closeCodes)}` : ''}`);
    if (publishErrors > 0) line('ws.publish_errors', publishErrors, `events (${firstError})`);
    if (sent - accepted - publishErrors > 0) line('ws.unanswered_at_deadline', sent - accepted - publishErrors, 'events');
    agent.destroy();
  } finally {
    for (const worker of workerThreads) worker.postMessage({ cmd: 'close' } satisfies ToWorker);
    await Promise.all(workerThreads.map((w) => new Promise((r) => w.once('exit', r))));
    server.kill('SIGTERM');
    await serverExit;
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** One client subscribes with the auth /broadcasting/auth issued (as pusher-js does); it must equal the local signature. */
async function checkAuthEndpoint(url: string, base: string, bearer: Record<string, string>): Promise<void> {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  const frames: { event: string; data?: string }[] = [];
  const waiters: (() => void)[] = [];
  ws.on('message', (raw: Buffer) => {
    frames.push(JSON.parse(raw.toString()) as { event: string; data?: string });
    for (const w of waiters.splice(0)) w();
  });
  const next = async (event: string) => {
    for (let i = 0; i < 100; i++) {
      const found = frames.find((f) => f.event === event);
      if (found) return found;
      await Promise.race([new Promise<void>((r) => waiters.push(r)), sleep(100)]);
    }
    throw new Error(`no ${event}; got ${JSON.stringify(frames)}`);
  };
  const socketId = (JSON.parse((await next('pusher:connection_established')).data!) as { socket_id: string }).socket_id;
  const res = await fetch(`${base}/broadcasting/auth`, {
    method: 'POST',
    headers: { ...bearer, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ socket_id: socketId, channel_name: CHANNEL }).toString(),
  });
  if (!res.ok) throw new Error(`/broadcasting/auth: ${res.status} ${await res.text()}`);
  const { auth } = (await res.json()) as { auth: string };
  if (auth !== sign(socketId)) throw new Error(`/broadcasting/auth answered ${auth}, expected ${sign(socketId)}`);
  ws.send(JSON.stringify({ event: 'pusher:subscribe', data: { channel: CHANNEL, auth } }));
  await next('pusher_internal:subscription_succeeded');
  ws.close();
  await new Promise((r) => ws.once('close', r));
}

if (isMainThread) await main();
else await clientWorker();
