// bench:mqtt — scans over the embedded MQTT broker (docs/performance.md): 50 simulated readers
// over real TCP publish scans at QoS 1 to the real appliance in its own process (`node
// dist/main.js`, built first when missing or older than src/), against the demo venue (`gatehouse
// demo seed`: 4 zones, 5 access points, 5,000 attendees with credentials, a blocklist, time
// windows; 44 more readers split over Main Gate In and Main Gate Out next to its 6). Every
// scan carries a fresh request_id and is a durable access event: it is acknowledged and answered
// only once the event is in the journal (access/scan-service.ts, mqtt/direct-replies.ts), so
// decisions/s are durable decisions/s.
// Credentials are drawn at random from the 5,000, so the mix is what a gate sees: entries,
// exits, anti-passback and zone denials. Prints, one per line:
//   mqtt.decisions_per_s           closed loop (each reader sends its next scan when the decision
//                                  to its previous one arrives), decisions received in the window
//   mqtt.p50_ms / p99_ms           scan publish -> decision received, over those decisions
//   mqtt.p99_ms_at_5k_per_s        open loop: 5,000 scans/s in total (100/s per reader, on a fixed
//                                  schedule, whether or not earlier decisions came back); latency is
//                                  measured from each scan's scheduled time, so a stalled client or
//                                  server is seen, not hidden
//   mqtt.bare_broker_p99_ms        the issue's baseline: the same 50 clients, same closed loop, same
//                                  topics and payloads, through a bare aedes broker with no decision,
//                                  where an echo subscriber answers each scan
//   mqtt.ratio_to_bare_broker      mqtt.p99_ms / mqtt.bare_broker_p99_ms
//   mqtt.ratio_to_in_broker_echo   the same against a stricter baseline: the broker answering each
//                                  scan itself, as the appliance does, with no decision
//   mqtt.ratio_aedes_to_mosquitto_echo  p99 of the echo-subscriber round trip through aedes over the
//                                  same through Debian's mosquitto (skipped, with a line saying so,
//                                  when /usr/sbin/mosquitto is missing)
// and the context: CPU of each server process and of the whole machine (2 cores: 200 % is all of
// it), how busy the client threads were, round trips/s of every baseline, grants and denials,
// events in the access-event log against decisions received, lost decisions, errors.
//
// The bare-broker baseline. The issue asks for a publish -> receive round trip "through the same
// broker with no decision". The appliance's broker cannot carry one: its ACL lets a reader publish
// only its scans topic and subscribe only its decisions topic, and the box itself answers every
// scan with a decision; staff connections are read-only. So the baseline runs the same broker
// software in the same shape instead: aedes 1.2 from this repo's node_modules, constructed with
// the appliance's options (drainTimeout, connectTimeout, maxClientsIdLength, heartbeatInterval),
// on `net.createServer({ noDelay: true }, ...)` (TCP_NODELAY: docs/mqtt.md), in its own node process
// like the appliance (this file, run as `echo-broker`), with no authentication, ACL, engine or
// event log. Three echo shapes are measured against it:
//   echo subscriber (the issue's baseline, mqtt.bare_broker_*): a separate MQTT client (a worker
//     thread of this bench, the same client code as the readers) subscribed at QoS 1 to
//     readers/+/scans republishes each scan to readers/<id>/decisions at QoS 1. Two broker passes
//     and one more client per round trip; the only echo a stock broker can do, so it is also what
//     is compared with mosquitto (`listener <port> 127.0.0.1`, `allow_anonymous true` and
//     `set_tcp_nodelay true`: mosquitto leaves Nagle on by default, and without it the same load
//     measured ~1,100 round trips/s at p50 44 ms here, the delayed-ACK stall docs/mqtt.md names, which
//     would compare TCP settings rather than brokers).
//   in-broker echo answering as the appliance does (mqtt.in_broker_echo_*, the stricter baseline:
//     nothing but the broker between send and receive): aedes' authorizePublish hook acknowledges
//     each scan and writes it back to the sender's decisions topic in the same write, with the
//     appliance's own answer writer (mqtt/reply-writer.ts), at once. The appliance also takes a
//     reader's scans off the parser before aedes' pipeline (mqtt/direct-replies.ts); this echo
//     goes through that pipeline, so it costs the broker a little more than the appliance's path.
//     Until the third session this was the ratio's baseline (documented in docs/performance.md).
//   stock in-broker echo (mqtt.stock_aedes_echo_*): aedes' own path, a `publish` hook that
//     republishes each scan with aedes.publish after aedes acknowledged it; how the appliance
//     answered before it wrote PUBACK and decision together.
//
// Clients: the lean MQTT 3.1.1 client of bench/lean-mqtt.ts by default, in one worker thread
// (BENCH_MQTT_WORKERS); BENCH_MQTT_CLIENT=mqttjs runs `mqtt` (mqtt.js 5) MqttClient objects in two
// instead, QoS 1 both ways either way. mqtt.js does not set
// TCP_NODELAY on its sockets, so the bench hands it sockets with noDelay set, as a reader's firmware
// should (measured here without it: the closed loop barely changes, but at 5,000 scans/s a scan
// written while the previous one is unacknowledged waits for the ACK: p50 24 ms instead of 4, p99
// 72 ms instead of 26-30). The receive path reads only request_id and access_granted out of each
// payload. Every closed-loop run follows a warm-up run (1 s; 0.5 s quick) on the same connections
// (the open loop follows the appliance's closed loop); in-flight scans are drained after each run
// (lost = never answered within 10 s; 3 s quick). Setup is the real path: `gatehouse demo seed`
// on the data dir before start, readers over REST, each reader's login -> OTP from
// GET readers/logins -> POST reader-otp/verify -> the MQTT credentials it answers.
// BENCH_QUICK=1: 2.5 s per run, same lines (about 22 s in all). BENCH_MQTT_CLIENTS / _SECONDS / _RATE
// (open-loop scans/s in total) / _WORKERS / _WARMUP_MS override; BENCH_MQTT_SERVER_FLAGS passes node
// flags to the appliance (--cpu-prof); BENCH_MQTT_SERVER runs another build instead of dist/main.js.
import { spawn, spawnSync, fork, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { connect as netConnect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import type { Client as AedesClient } from 'aedes';
import { MqttClient, type IClientOptions } from 'mqtt';
import { canReplyDirectly, writeReply } from '../src/mqtt/reply-writer.js';
import { settingsFromEnvironment } from './bench-config.js';
import { LeanMqttClient } from './lean-mqtt.js';
import {
  line,
  sleep,
  wallNow,
  HIST,
  bucketOf,
  msOf,
  newestMtime,
  nodeFlags,
  cpuOf,
  machineBusy,
  freePort,
  waitUntilReady,
} from './process-stats.js';

const A = '/api/v1/projects/default/default';
const PREFIX = 'gatehouse/default/default/readers';
const MOSQUITTO = '/usr/sbin/mosquitto';
const ATTENDEES = 5000; // the demo seeder's
const ADMIN = { email: 'bench@gatehouse.local', password: 'bench password' };

interface ClientSpec {
  clientId: string;
  username?: string;
  password?: string;
  scans: string;
  replies: string;
}

interface RunSpec {
  mode: 'closed' | 'open';
  /** Wall-clock start (performance.timeOrigin + performance.now() of the main thread). */
  startAt: number;
  ms: number;
  /** Open loop: scans/s per client. */
  perClientRate: number;
  /** This worker's first client among all, and all clients: open-loop schedules are staggered over them. */
  firstIndex: number;
  total: number;
  drainMs: number;
}

type ClientKind = 'lean' | 'mqttjs';
type ToClients =
  | { cmd: 'connect'; url: string; clients: ClientSpec[]; firstIndex: number; kind: ClientKind }
  | ({ cmd: 'run' } & RunSpec)
  | { cmd: 'disconnect' }
  | { cmd: 'close' };
type ToEcho =
  | { cmd: 'connect'; url: string; filter: string; kind: ClientKind }
  | { cmd: 'mark' }
  | { cmd: 'stats' }
  | { cmd: 'disconnect' }
  | { cmd: 'close' };

interface RunReport {
  sent: number;
  /** Answers to this run's scans, including those after the window (drain). */
  replied: number;
  /** Answers received inside the window. */
  inWindow: number;
  granted: number;
  denied: number;
  /** Error answers (`{"request_id", "error", ...}`) from the appliance. */
  failures: number;
  /** Answers to no scan in flight (duplicates, or late answers of an earlier run). */
  unexpected: number;
  /** Scans still unanswered after the drain. */
  lost: number;
  errors: number;
  firstError: string;
  /** Event-loop utilisation of the worker over the window (1 = never idle). */
  busy: number;
  /** Open loop: the client thread's own stalls (its 1 ms schedule tick late by more than 3 ms): count and ms in all. */
  stalls: number;
  stallMs: number;
  hist: Uint32Array<ArrayBuffer>;
}

// ---------------------------------------------------------------- MQTT client with TCP_NODELAY
function connectClient(url: string, options: IClientOptions): Promise<MqttClient> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const client = new MqttClient(
      () => {
        const socket = netConnect({ host: hostname, port: Number(port) });
        socket.setNoDelay(true);
        return socket;
      },
      { protocolVersion: 4, reconnectPeriod: 0, connectTimeout: 10_000, keepalive: 60, clean: true, ...options },
    );
    const who = options.clientId ?? options.username;
    const failed = (err: Error) => {
      client.end(true);
      reject(new Error(`${who}: ${err.message}`));
    };
    const closed = () => reject(new Error(`${who}: closed before CONNACK`));
    client.once('error', failed);
    client.once('close', closed);
    client.once('connect', () => {
      client.off('error', failed);
      client.off('close', closed);
      resolve(client);
    });
  });
}

/** One bench client, either kind: connected, subscribed to one filter at QoS 1, publishing at QoS 1. */
interface BenchConnection {
  /** A QoS 1 publisher for one topic. */
  publisherTo(topic: string): (payload: string | Buffer) => void;
  end(): Promise<void>;
  destroy(): void;
}

async function openConnection(
  kind: ClientKind,
  url: string,
  who: { clientId: string; username?: string | undefined; password?: string | undefined },
  filter: string,
  onMessage: (topic: string, payload: Buffer) => void,
  onError: (err: Error) => void,
): Promise<BenchConnection> {
  if (kind === 'mqttjs') {
    const client = await connectClient(url, { clientId: who.clientId, username: who.username, password: who.password });
    client.on('error', onError);
    client.on('message', onMessage);
    const granted = await client.subscribeAsync(filter, { qos: 1 });
    if (granted[0]?.qos !== 1)
      throw new Error(`${who.clientId}: subscription to ${filter} refused (${JSON.stringify(granted)})`);
    const acked = (err?: Error) => err && onError(err);
    return {
      publisherTo: (topic) => (payload) => client.publish(topic, payload as Buffer, { qos: 1 }, acked),
      end: async () => void (await client.endAsync()),
      destroy: () => client.end(true),
    };
  }
  const { hostname, port } = new URL(url);
  const client = await LeanMqttClient.connect({
    host: hostname,
    port: Number(port),
    clientId: who.clientId,
    username: who.username,
    password: who.password,
  });
  client.onMessage = onMessage;
  client.onError = onError;
  const granted = await client.subscribe(filter, 1);
  if (granted !== 1) throw new Error(`${who.clientId}: subscription to ${filter} refused (0x${granted.toString(16)})`);
  return {
    publisherTo: (topic) => {
      const bytes = Buffer.from(topic);
      return (payload) => client.publish(bytes, payload);
    },
    end: () => client.end(),
    destroy: () => client.destroy(),
  };
}

// ---------------------------------------------------------------- reader clients (worker)
async function clientWorker(): Promise<void> {
  const port = parentPort!;
  const RID = '"request_id":"';
  // Random credentials: one xorshift per client, so each reader sees a different sequence.
  const credentials = Array.from({ length: ATTENDEES }, (_, i) => `GH-${String(i + 1).padStart(6, '0')}`);
  let clients: BenchConnection[] = [];
  let publishers: ((payload: string) => void)[] = [];
  let specs: ClientSpec[] = [];
  let seq = new Uint32Array(0); // next request sequence number per client; never reset (request ids stay unique)
  let rng = new Uint32Array(0);
  let outstanding: Map<number, number>[] = []; // per client: sequence -> send time (performance.now())
  let inFlight = 0;
  let errors = 0;
  let firstError = '';
  let run: {
    spec: RunSpec;
    start: number;
    end: number;
    report: RunReport;
    draining: boolean;
    done: () => void;
  } | null = null;

  const noteError = (err: Error | undefined) => {
    if (!err) return;
    errors++;
    firstError ||= err.message;
  };
  const send = (c: number, at: number) => {
    const n = seq[c]!++;
    let x = rng[c]!;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    rng[c] = x >>> 0;
    const payload = `{"request_id":"b${n}","credential_value":"${credentials[rng[c]! % ATTENDEES]}","scan_type":"barcode"}`;
    outstanding[c]!.set(n, at);
    inFlight++;
    run!.report.sent++;
    publishers[c]!(payload);
  };
  const onMessage = (c: number) => (_topic: string, payload: Buffer) => {
    const now = performance.now();
    if (!run) return;
    const { report } = run;
    const text = payload.toString('latin1');
    const i = text.indexOf(RID);
    const seqNo = i < 0 ? NaN : Number.parseInt(text.slice(i + RID.length + 1), 10); // "b<n>"
    const sentAt = outstanding[c]!.get(seqNo);
    if (sentAt === undefined) {
      report.unexpected++;
      return;
    }
    outstanding[c]!.delete(seqNo);
    inFlight--;
    report.replied++;
    if (now <= run.end) report.inWindow++;
    if (text.includes('"access_granted":true')) report.granted++;
    else if (text.includes('"access_granted":false')) report.denied++;
    else if (text.includes('"error":')) report.failures++;
    report.hist[bucketOf(now - sentAt)]!++;
    if (run.spec.mode === 'closed' && now < run.end) send(c, performance.now());
    else if (run.draining && inFlight === 0) run.done();
  };

  port.on('message', async (msg: ToClients) => {
    try {
      if (msg.cmd === 'connect') {
        specs = msg.clients;
        seq = seq.length === specs.length ? seq : new Uint32Array(specs.length);
        rng =
          rng.length === specs.length
            ? rng
            : Uint32Array.from(specs, (_, c) => 0x9e3779b9 ^ Math.imul(msg.firstIndex + c + 1, 2654435761));
        outstanding = specs.map(() => new Map());
        inFlight = 0;
        clients = await Promise.all(
          specs.map((spec, c) => openConnection(msg.kind, msg.url, spec, spec.replies, onMessage(c), noteError)),
        );
        publishers = clients.map((client, c) => client.publisherTo(specs[c]!.scans));
        port.postMessage({ type: 'connected' });
      } else if (msg.cmd === 'run') {
        const spec: RunSpec = msg;
        const start = spec.startAt - performance.timeOrigin;
        const end = start + spec.ms;
        const report: RunReport = {
          sent: 0,
          replied: 0,
          inWindow: 0,
          granted: 0,
          denied: 0,
          failures: 0,
          unexpected: 0,
          lost: 0,
          errors: 0,
          firstError: '',
          busy: 0,
          stalls: 0,
          stallMs: 0,
          hist: new Uint32Array(HIST),
        };
        errors = 0;
        firstError = '';
        let done!: () => void;
        const finished = new Promise<void>((r) => (done = r));
        run = { spec, start, end, report, draining: false, done };
        await sleep(start - performance.now());
        const elu = performance.eventLoopUtilization();
        if (spec.mode === 'closed') {
          for (let c = 0; c < clients.length; c++) send(c, performance.now());
        } else {
          const interval = 1000 / spec.perClientRate;
          const due = Float64Array.from(clients, (_, c) => start + ((spec.firstIndex + c) / spec.total) * interval);
          await new Promise<void>((resolve) => {
            let previous = performance.now();
            const tick = () => {
              const now = performance.now();
              // A tick more than 3 ms late is a stall of this thread (GC, or no core free for it):
              // its scans are sent late and count the delay, so the report says how much there was.
              if (now - previous > 4) {
                report.stalls++;
                report.stallMs += now - previous - 1;
              }
              previous = now;
              for (let c = 0; c < clients.length; c++) {
                while (due[c]! <= now && due[c]! < end) {
                  send(c, due[c]!); // latency counts from the scheduled time
                  due[c]! += interval;
                }
              }
              if (now >= end) resolve();
              else setTimeout(tick, Math.min(1, end - now));
            };
            tick();
          });
        }
        await sleep(end - performance.now());
        report.busy = performance.eventLoopUtilization(elu).utilization;
        run.draining = true;
        if (inFlight > 0) {
          let timer: NodeJS.Timeout | undefined;
          await Promise.race([finished, new Promise((r) => (timer = setTimeout(r, spec.drainMs)))]);
          clearTimeout(timer); // a pending timer would keep the thread alive at exit
        }
        report.lost = inFlight;
        report.errors = errors;
        report.firstError = firstError;
        // What was never answered is dropped: a late answer is ignored between runs and counts as
        // unexpected in the next.
        for (const map of outstanding) map.clear();
        inFlight = 0;
        run = null;
        port.postMessage({ type: 'report', report }, [report.hist.buffer]);
      } else if (msg.cmd === 'disconnect') {
        await Promise.all(clients.map((client) => client.end()));
        clients = [];
        publishers = [];
        port.postMessage({ type: 'disconnected' });
      } else if (msg.cmd === 'close') {
        for (const client of clients) client.destroy();
        port.close();
      }
    } catch (err) {
      port.postMessage({ type: 'error', message: (err as Error).message });
    }
  });
}

// ---------------------------------------------------------------- echo subscriber (worker)
async function echoWorker(): Promise<void> {
  const port = parentPort!;
  let client: BenchConnection | null = null;
  const publishers = new Map<string, (payload: Buffer) => void>();
  let echoed = 0;
  let errors = 0;
  let elu = performance.eventLoopUtilization();
  const noteError = (err?: Error) => {
    if (err) errors++;
  };
  port.on('message', async (msg: ToEcho) => {
    try {
      if (msg.cmd === 'connect') {
        const echo = (topic: string, payload: Buffer) => {
          echoed++;
          let publish = publishers.get(topic);
          if (!publish)
            publishers.set(topic, (publish = client!.publisherTo(`${topic.slice(0, -'scans'.length)}decisions`)));
          publish(payload);
        };
        client = await openConnection(msg.kind, msg.url, { clientId: 'bench-echo' }, msg.filter, echo, noteError);
        port.postMessage({ type: 'connected' });
      } else if (msg.cmd === 'mark') {
        elu = performance.eventLoopUtilization();
        echoed = 0;
        port.postMessage({ type: 'marked' });
      } else if (msg.cmd === 'stats') {
        port.postMessage({ type: 'stats', echoed, errors, busy: performance.eventLoopUtilization(elu).utilization });
      } else if (msg.cmd === 'disconnect') {
        await client?.end();
        client = null;
        publishers.clear();
        port.postMessage({ type: 'disconnected' });
      } else if (msg.cmd === 'close') {
        client?.destroy();
        port.close();
      }
    } catch (err) {
      port.postMessage({ type: 'error', message: (err as Error).message });
    }
  });
}

// ---------------------------------------------------------------- bare aedes broker (child process)
type EchoMode = 'answer' | 'stock' | 'plain';

/** `echo-broker <port> answer|stock|plain`: aedes as the appliance builds it, minus identities, ACL and scans. */
async function echoBroker(port: number, mode: EchoMode): Promise<void> {
  const { Aedes } = await import('aedes');
  // The appliance's options (mqtt/broker.ts with the config defaults).
  const broker = new Aedes({
    drainTimeout: 5_000,
    connectTimeout: 10_000,
    maxClientsIdLength: 128,
    heartbeatInterval: 60_000,
    // As MqttBroker answers a scan (its #acknowledge), with the scan itself as the answer, at once:
    // the PUBACK and the answer in one write on the sender's connection (mqtt/reply-writer.ts).
    authorizePublish: (client: AedesClient | null, packet, done) => {
      if (mode !== 'answer' || !client || !packet.topic.endsWith('/scans')) return done(null);
      const ack = packet.qos === 1 ? (packet.messageId ?? null) : null;
      if (ack !== null) packet.qos = 0;
      const topic = `${packet.topic.slice(0, -'scans'.length)}decisions`;
      if (canReplyDirectly(client, topic)) writeReply(client, ack, { topic, payload: packet.payload as Buffer });
      else throw new Error(`echo-broker: ${client.id} is not subscribed to ${topic}`);
      done(null);
    },
  });
  await broker.listen();
  if (mode === 'stock') {
    // aedes' own path: it acknowledges the scan, then a QoS 1 publish from the broker to the decisions topic.
    broker.on('publish', (packet, client) => {
      if (!client || !packet.topic.endsWith('/scans')) return;
      broker.publish(
        {
          cmd: 'publish',
          topic: `${packet.topic.slice(0, -'scans'.length)}decisions`,
          payload: packet.payload,
          qos: 1,
          retain: false,
          dup: false,
        },
        () => {},
      );
    });
  }
  const server = createServer({ noDelay: true }, (socket) => broker.handle(socket));
  server.listen(port, '127.0.0.1', () => process.stdout.write('listening\n'));
  process.on('SIGTERM', () => {
    server.close();
    broker.close(() => process.exit(0));
  });
}

// ---------------------------------------------------------------- main

/** Resolves once something accepts TCP connections on the port. */
async function waitForPort(port: number, proc: ChildProcess, what: string, output: () => string): Promise<void> {
  for (let i = 0; ; i++) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = netConnect({ host: '127.0.0.1', port }, () => {
        socket.destroy();
        resolve(true);
      });
      socket.on('error', () => resolve(false));
    });
    if (open) return;
    if (i > 100 || proc.exitCode !== null) throw new Error(`${what} did not start on port ${port}\n${output()}`);
    await sleep(50);
  }
}

interface Measured {
  report: RunReport;
  seconds: number;
  serverCpu: number;
  machineCpu: number;
  benchCpu: number;
  busyMax: number;
  /** CPU seconds of the kernel's DAMON threads (kdamond) over the window; see kernelMonitorCpu. */
  kernelMonitor: number;
}

/**
 * CPU seconds spent so far by the kernel's DAMON memory monitor (threads named kdamond.N), 0
 * when it does not run. On the 2-core VM these benches were measured on, kdamond.0 takes one
 * core for 2-25 ms every ~512 ms (seen with perf; docs/performance.md): while it runs,
 * the appliance and the bench's client thread share the other core, and those stalls are what
 * the p99 at 5,000 scans/s mostly measures there. Printed so a reader sees when a run met it.
 */
function kernelMonitorCpu(): number {
  let total = 0;
  for (const pid of kernelMonitorPids()) {
    try {
      total += cpuOf(pid);
    } catch {}
  }
  return total;
}
let monitorPids: number[] | null = null;
function kernelMonitorPids(): number[] {
  if (monitorPids) return monitorPids;
  monitorPids = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').startsWith('kdamond')) monitorPids.push(Number(entry));
    } catch {}
  }
  return monitorPids;
}

async function main(): Promise<void> {
  const began = performance.now();
  const quick = process.env.BENCH_QUICK === '1';
  const env = (name: string, fallback: number) => (process.env[name] ? Number(process.env[name]) : fallback);
  const clientCount = env('BENCH_MQTT_CLIENTS', 50);
  const seconds = env('BENCH_MQTT_SECONDS', quick ? 2.5 : 10);
  const openRate = env('BENCH_MQTT_RATE', 5000);
  const kind = (process.env.BENCH_MQTT_CLIENT ?? 'lean') as ClientKind;
  if (kind !== 'lean' && kind !== 'mqttjs') throw new Error(`BENCH_MQTT_CLIENT=${kind}: lean or mqttjs`);
  // Client threads: the lean clients fit in one; mqtt.js needs two (~160 us of CPU per round trip).
  const workerCount = Math.max(1, Math.min(clientCount, env('BENCH_MQTT_WORKERS', kind === 'lean' ? 1 : 2)));
  const warmupMs = env('BENCH_MQTT_WARMUP_MS', quick ? 500 : 1000);
  const drainMs = quick ? 3000 : 10_000;
  const self = fileURLToPath(import.meta.url);

  // The appliance: built first when missing or stale, seeded with the demo venue, in its own process.
  if (
    !process.env.BENCH_MQTT_SERVER &&
    (!existsSync('dist/main.js') || statSync('dist/main.js').mtimeMs < newestMtime('src'))
  ) {
    const built = spawnSync(process.execPath, ['scripts/build.mjs'], { stdio: 'inherit' });
    if (built.status !== 0) throw new Error('node scripts/build.mjs failed');
  }
  const entry = process.env.BENCH_MQTT_SERVER ?? 'dist/main.js';
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-mqtt-'));
  const httpPort = await freePort();
  const mqttPort = await freePort();
  const base = `http://127.0.0.1:${httpPort}`;
  const serverEnv = {
    ...settingsFromEnvironment(), // GATEHOUSE_* of the bench's environment (bench-config.ts)
    PATH: process.env.PATH ?? '',
    GATEHOUSE_DATA_DIR: dataDir,
    GATEHOUSE_HTTP_HOST: '127.0.0.1',
    GATEHOUSE_HTTP_PORT: String(httpPort),
    GATEHOUSE_MQTT_PORT: String(mqttPort),
    GATEHOUSE_ADMIN_EMAIL: ADMIN.email,
    GATEHOUSE_ADMIN_PASSWORD: ADMIN.password,
    GATEHOUSE_RATE_LIMIT_STANDARD: '0',
    GATEHOUSE_RATE_LIMIT_BULK: '0',
    GATEHOUSE_LOG_LEVEL: 'warn',
    GATEHOUSE_READERS_VERIFY_PER_MINUTE: '100000',
    // bench:webhooks: subscriptions to a receiver on this machine.
    GATEHOUSE_WEBHOOK_ALLOW_INSECURE: '1',
  };
  const webhookSubs = env('BENCH_MQTT_WEBHOOK_SUBS', 0);
  const onlyAppliance = process.env.BENCH_MQTT_ONLY_APPLIANCE === '1';
  const seeded = spawnSync(process.execPath, [entry, 'demo', 'seed'], { env: serverEnv, encoding: 'utf8' });
  if (seeded.status !== 0) throw new Error(`demo seed failed: ${seeded.stderr}`);
  const demo = JSON.parse(seeded.stdout) as { readers: string[]; attendees: number };
  if (demo.attendees !== ATTENDEES)
    throw new Error(`the demo seeded ${demo.attendees} attendees, the bench expects ${ATTENDEES}`);

  const serverFlags = process.env.BENCH_MQTT_SERVER_FLAGS ? process.env.BENCH_MQTT_SERVER_FLAGS.split(' ') : [];
  const server = spawn(process.execPath, [...nodeFlags(), ...serverFlags, entry], {
    env: serverEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const serverOutput: string[] = [];
  const keep = (chunk: Buffer) => serverOutput.push(chunk.toString('utf8'));
  server.stdout!.on('data', keep);
  server.stderr!.on('data', keep);
  const serverExit = new Promise<number | null>((resolve) => server.on('exit', resolve));
  const fail = (message: string) => new Error(`${message}\nserver output:\n${serverOutput.join('').slice(-4000)}`);

  const others: ChildProcess[] = []; // bare brokers, stopped in finally
  const clientThreads: Worker[] = [];
  let echoThread: Worker | null = null;
  const ask = <T>(worker: Worker, cmd: ToClients | ToEcho, type: string) =>
    new Promise<T>((resolve, reject) => {
      const on = (m: { type: string; message?: string } & T) => {
        if (m.type !== type && m.type !== 'error') return;
        worker.off('message', on);
        if (m.type === 'error') reject(new Error(m.message));
        else resolve(m);
      };
      worker.on('message', on);
      worker.postMessage(cmd);
    });

  try {
    await waitUntilReady(base, server, fail);
    const pid = server.pid!;
    const api = async <T>(
      method: string,
      path: string,
      body?: unknown,
      token?: string,
    ): Promise<{ status: number; body: T }> => {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: {
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      return {
        status: res.status,
        body: (text && res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text) as T,
      };
    };
    const must = async <T>(
      method: string,
      path: string,
      body: unknown,
      token: string | undefined,
      status: number,
    ): Promise<T> => {
      const res = await api<T>(method, path, body, token);
      if (res.status !== status) throw fail(`${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body;
    };
    const { token } = await must<{ token: string }>(
      'POST',
      '/api/v1/auth/token',
      { ...ADMIN, device_name: 'bench-mqtt' },
      undefined,
      201,
    );
    // BENCH_MQTT_WEBHOOK_SUBS: that many subscriptions to access.* (bench:webhooks), to a receiver in its own process.
    if (webhookSubs > 0) {
      const receiver = fork('bench/webhook-receiver.mjs', [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      others.push(receiver);
      const port = await new Promise<number>((resolve) =>
        receiver.once('message', (m: { port: number }) => resolve(m.port)),
      );
      const projectId = (await must<{ data: { id: number } }>('GET', A, undefined, token, 200)).data.id;
      for (let i = 0; i < webhookSubs; i++) {
        await must(
          'POST',
          '/api/v1/webhook/subscribe',
          { url: `http://127.0.0.1:${port}/hook`, events: ['access.granted', 'access.denied'], project_id: projectId },
          token,
          201,
        );
      }
    }

    // Readers: the demo's, then more on the main gates (in and out alternately) up to clientCount.
    const points = (
      await must<{ data: { id: number; name: string }[] }>(
        'GET',
        `${A}/access-points?per_page=100`,
        undefined,
        token,
        200,
      )
    ).data;
    const gateIn = points.find((p) => p.name === 'Main Gate In')?.id;
    const gateOut = points.find((p) => p.name === 'Main Gate Out')?.id;
    if (!gateIn || !gateOut) throw fail(`the demo venue has no Main Gate In/Out: ${JSON.stringify(points)}`);
    const identifiers = demo.readers.slice(0, clientCount);
    for (let i = identifiers.length; i < clientCount; i++) {
      const identifier = `BENCH-R${String(i + 1).padStart(2, '0')}`;
      await must('POST', `${A}/readers`, { identifier, access_point_id: i % 2 === 0 ? gateIn : gateOut }, token, 201);
      identifiers.push(identifier);
    }

    // Each reader logs in as one would: login -> staff read the OTP -> verify -> MQTT credentials.
    for (const reader_identifier of identifiers)
      await must('POST', `${A}/readers/login`, { reader_identifier }, undefined, 202);
    const logins = (
      await must<{ data: { reader_identifier: string; otp: string }[] }>(
        'GET',
        `${A}/readers/logins`,
        undefined,
        token,
        200,
      )
    ).data;
    type Mqtt = {
      port: number;
      username: string;
      password: string;
      scans_topic: string;
      decisions_topic: string;
      qos: number;
    };
    const readerSpecs: ClientSpec[] = [];
    for (const reader_identifier of identifiers) {
      const otp = logins.find((l) => l.reader_identifier === reader_identifier)?.otp;
      if (!otp) throw fail(`no pending login for ${reader_identifier}`);
      const { mqtt } = (
        await must<{ data: { mqtt: Mqtt } }>(
          'POST',
          '/api/v1/reader-otp/verify',
          { otp, reader_identifier },
          undefined,
          200,
        )
      ).data;
      if (mqtt.port !== mqttPort || mqtt.qos !== 1) throw fail(`unexpected MQTT settings ${JSON.stringify(mqtt)}`);
      readerSpecs.push({
        clientId: `bench-${reader_identifier}`,
        username: mqtt.username,
        password: mqtt.password,
        scans: mqtt.scans_topic,
        replies: mqtt.decisions_topic,
      });
    }
    const setupSeconds = (performance.now() - began) / 1000;
    // The bare brokers get the same topics, with no credentials.
    const bareSpecs: ClientSpec[] = readerSpecs.map(({ clientId, scans, replies }) => ({ clientId, scans, replies }));

    // Client threads.
    for (let w = 0; w < workerCount; w++)
      clientThreads.push(new Worker(new URL(import.meta.url), { workerData: { role: 'clients' } }));
    const slices = clientThreads.map((_, w) => {
      const from = Math.floor((w * clientCount) / workerCount);
      return { from, to: Math.floor(((w + 1) * clientCount) / workerCount) };
    });
    const connectAll = (url: string, specs: ClientSpec[]) =>
      Promise.all(
        clientThreads.map((t, w) =>
          ask(
            t,
            {
              cmd: 'connect',
              url,
              clients: specs.slice(slices[w]!.from, slices[w]!.to),
              firstIndex: slices[w]!.from,
              kind,
            },
            'connected',
          ),
        ),
      );
    const disconnectAll = () => Promise.all(clientThreads.map((t) => ask(t, { cmd: 'disconnect' }, 'disconnected')));
    const runAll = async (mode: 'closed' | 'open', ms: number, serverPid: number): Promise<Measured> => {
      const startAt = wallNow() + 50;
      const reports = Promise.all(
        clientThreads.map((t, w) =>
          ask<{ report: RunReport }>(
            t,
            {
              cmd: 'run',
              mode,
              startAt,
              ms,
              perClientRate: openRate / clientCount,
              firstIndex: slices[w]!.from,
              total: clientCount,
              drainMs,
            },
            'report',
          ),
        ),
      );
      await sleep(startAt - wallNow());
      const cpu0 = cpuOf(serverPid);
      const kernelMonitor0 = kernelMonitorCpu();
      const machine0 = machineBusy();
      const bench0 = process.cpuUsage();
      await sleep(startAt + ms - wallNow());
      const serverCpu = cpuOf(serverPid) - cpu0;
      const kernelMonitor = kernelMonitorCpu() - kernelMonitor0;
      const machineCpu = machineBusy() - machine0;
      const bench = process.cpuUsage(bench0);
      const merged: RunReport = {
        sent: 0,
        replied: 0,
        inWindow: 0,
        granted: 0,
        denied: 0,
        failures: 0,
        unexpected: 0,
        lost: 0,
        errors: 0,
        firstError: '',
        busy: 0,
        stalls: 0,
        stallMs: 0,
        hist: new Uint32Array(HIST),
      };
      let busyMax = 0;
      for (const { report } of await reports) {
        for (const key of [
          'sent',
          'replied',
          'inWindow',
          'granted',
          'denied',
          'failures',
          'unexpected',
          'lost',
          'errors',
          'stalls',
          'stallMs',
        ] as const)
          merged[key] += report[key];
        merged.firstError ||= report.firstError;
        report.hist.forEach((n, i) => {
          merged.hist[i]! += n;
        });
        busyMax = Math.max(busyMax, report.busy);
      }
      return {
        report: merged,
        seconds: ms / 1000,
        serverCpu,
        machineCpu,
        benchCpu: (bench.user + bench.system) / 1e6,
        busyMax,
        kernelMonitor,
      };
    };
    /** Warm-up, then the measured closed-loop run. */
    const closedLoop = async (serverPid: number) => {
      const warm = await runAll('closed', warmupMs, serverPid);
      const measured = await runAll('closed', seconds * 1000, serverPid);
      return { warm, measured };
    };

    // 1. The appliance: closed loop, then open loop at openRate.
    await connectAll(`mqtt://127.0.0.1:${mqttPort}`, readerSpecs);
    const { warm: applianceWarm, measured: decisions } = await closedLoop(pid);
    if (onlyAppliance) {
      // bench:webhooks wants this one figure: the appliance's closed-loop throughput.
      line('mqtt.decisions_per_s', Math.round(decisions.report.inWindow / decisions.seconds), '/s');
      await disconnectAll();
      server.kill('SIGTERM');
      await serverExit;
      return;
    }
    const open = await runAll('open', seconds * 1000, pid);
    await disconnectAll();
    const answered = applianceWarm.report.replied + decisions.report.replied + open.report.replied;
    const scansSent = applianceWarm.report.sent + decisions.report.sent + open.report.sent;
    await sleep(200);
    const eventsInLog = (
      await must<{ meta: { total: number } }>('GET', `${A}/access-events?per_page=1`, undefined, token, 200)
    ).meta.total;
    const metrics = await api<string>('GET', '/metrics', undefined, token);
    const counted = (what: string) =>
      Number(new RegExp(`gatehouse_mqtt_messages_total\\{what="${what}"\\} (\\d+)`).exec(metrics.body)?.[1] ?? 0);
    const serverScans = counted('scans');
    const serverDecisions = counted('decisions');
    server.kill('SIGTERM');
    await serverExit;

    // 2. Bare aedes in its own process: the in-broker echo (the baseline), then the echo subscriber.
    const startBare = async (mode: EchoMode) => {
      const port = await freePort();
      const proc = spawn(process.execPath, [self, 'echo-broker', String(port), mode], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      others.push(proc);
      const output: string[] = [];
      proc.stdout!.on('data', (c: Buffer) => output.push(c.toString()));
      proc.stderr!.on('data', (c: Buffer) => output.push(c.toString()));
      await waitForPort(port, proc, `aedes (${mode})`, () => output.join(''));
      return { port, proc };
    };
    const stop = async (proc: ChildProcess) => {
      if (proc.exitCode === null && proc.signalCode === null) {
        const exited = new Promise((r) => proc.once('exit', r));
        proc.kill('SIGTERM');
        await exited;
      }
    };
    const inBrokerEcho = async (mode: EchoMode) => {
      const bare = await startBare(mode);
      await connectAll(`mqtt://127.0.0.1:${bare.port}`, bareSpecs);
      const { measured } = await closedLoop(bare.proc.pid!);
      const open = mode === 'answer' ? await runAll('open', seconds * 1000, bare.proc.pid!) : null;
      await disconnectAll();
      await stop(bare.proc);
      return { measured, open };
    };
    const { measured: inBroker, open: bareOpen } = await inBrokerEcho('answer');
    const { measured: stockEcho } = await inBrokerEcho('stock');

    echoThread = new Worker(new URL(import.meta.url), { workerData: { role: 'echo' } });
    const echoLoop = async (url: string, serverPid: number) => {
      await ask(echoThread!, { cmd: 'connect', url, filter: `${PREFIX}/+/scans`, kind }, 'connected');
      await connectAll(url, bareSpecs);
      await runAll('closed', warmupMs, serverPid);
      await ask(echoThread!, { cmd: 'mark' }, 'marked');
      const measured = await runAll('closed', seconds * 1000, serverPid);
      const stats = await ask<{ echoed: number; errors: number; busy: number }>(echoThread!, { cmd: 'stats' }, 'stats');
      await disconnectAll();
      await ask(echoThread!, { cmd: 'disconnect' }, 'disconnected');
      return { measured, echo: stats };
    };
    const plain = await startBare('plain');
    const aedesEcho = await echoLoop(`mqtt://127.0.0.1:${plain.port}`, plain.proc.pid!);
    await stop(plain.proc);

    // 3. The same echo load through Debian's mosquitto, when installed.
    let mosquittoEcho: Awaited<ReturnType<typeof echoLoop>> | null = null;
    if (existsSync(MOSQUITTO)) {
      const port = await freePort();
      const conf = join(dataDir, 'mosquitto.conf');
      writeFileSync(conf, `listener ${port} 127.0.0.1\nallow_anonymous true\nset_tcp_nodelay true\n`);
      const proc = spawn(MOSQUITTO, ['-c', conf], { stdio: ['ignore', 'pipe', 'pipe'] });
      others.push(proc);
      const output: string[] = [];
      proc.stdout!.on('data', (c: Buffer) => output.push(c.toString()));
      proc.stderr!.on('data', (c: Buffer) => output.push(c.toString()));
      await waitForPort(port, proc, 'mosquitto', () => output.join(''));
      mosquittoEcho = await echoLoop(`mqtt://127.0.0.1:${port}`, proc.pid!);
      await stop(proc);
    }

    // Report.
    const percentile = (hist: Uint32Array, p: number) => {
      const total = hist.reduce((a, n) => a + n, 0);
      const rank = Math.max(1, Math.ceil(total * p));
      let seen = 0;
      for (let i = 0; i < HIST; i++) if ((seen += hist[i]!) >= rank) return msOf(i);
      return msOf(HIST - 1);
    };
    const maxOf = (hist: Uint32Array) => {
      let i = HIST - 1;
      while (i > 0 && hist[i] === 0) i--;
      return msOf(i);
    };
    const ms = (v: number) => v.toFixed(2);
    const pct = (cpuSeconds: number, m: Measured) => ((100 * cpuSeconds) / m.seconds).toFixed(0);
    const rate = (m: Measured) => Math.round(m.report.inWindow / m.seconds);
    const p50 = (m: Measured) => percentile(m.report.hist, 0.5);
    const p99 = (m: Measured) => percentile(m.report.hist, 0.99);
    const troubles = (m: Measured) => m.report.errors + m.report.failures + m.report.unexpected;
    const trouble = (m: Measured) =>
      `(client errors ${m.report.errors}, error answers ${m.report.failures}, unexpected answers ${m.report.unexpected}${m.report.firstError ? `: ${m.report.firstError}` : ''})`;

    line('mqtt.readers', clientCount, `clients (${workerCount} client threads)`);
    line(
      'mqtt.client',
      kind,
      kind === 'lean' ? '(bench/lean-mqtt.ts; BENCH_MQTT_CLIENT=mqttjs for mqtt.js)' : '(mqtt.js)',
    );
    line('mqtt.attendees', ATTENDEES, 'credentials');
    line('mqtt.decisions_per_s', rate(decisions), '/s');
    line('mqtt.p50_ms', ms(p50(decisions)), 'ms');
    line('mqtt.p99_ms', ms(p99(decisions)), 'ms');
    line('mqtt.max_ms', ms(maxOf(decisions.report.hist)), 'ms');
    line(
      'mqtt.granted_pct',
      ((100 * decisions.report.granted) / Math.max(1, decisions.report.replied)).toFixed(0),
      '% of decisions',
    );
    line('mqtt.server_cpu_pct', pct(decisions.serverCpu, decisions), '% of one core');
    line(
      'mqtt.server_cpu_us_per_decision',
      ((decisions.serverCpu * 1e6) / Math.max(1, decisions.report.replied)).toFixed(1),
      'us',
    );
    line('mqtt.bench_cpu_pct', pct(decisions.benchCpu, decisions), '% of one core');
    line('mqtt.machine_cpu_pct', pct(decisions.machineCpu, decisions), '% (2 cores = 200)');
    // Whatever else ran on the box meanwhile (the noise): machine busy time minus server and bench.
    line(
      'mqtt.other_cpu_pct',
      pct(Math.max(0, decisions.machineCpu - decisions.serverCpu - decisions.benchCpu), decisions),
      '% of one core (neither server nor bench)',
    );
    line('mqtt.client_thread_busy_pct', (100 * decisions.busyMax).toFixed(0), '% (busiest client thread)');
    line('mqtt.lost_decisions', decisions.report.lost, `scans unanswered after ${drainMs / 1000} s`);
    line('mqtt.errors', troubles(decisions), `errors ${trouble(decisions)}`);

    line('mqtt.p50_ms_at_5k_per_s', ms(p50(open)), `ms (${openRate} scans/s scheduled)`);
    line('mqtt.p99_ms_at_5k_per_s', ms(p99(open)), 'ms');
    line('mqtt.max_ms_at_5k_per_s', ms(maxOf(open.report.hist)), 'ms');
    line('mqtt.decisions_per_s_at_5k_per_s', rate(open), '/s');
    line('mqtt.server_cpu_pct_at_5k_per_s', pct(open.serverCpu, open), '% of one core');
    line('mqtt.machine_cpu_pct_at_5k_per_s', pct(open.machineCpu, open), '% (2 cores = 200)');
    line(
      'mqtt.other_cpu_pct_at_5k_per_s',
      pct(Math.max(0, open.machineCpu - open.serverCpu - open.benchCpu), open),
      '% of one core (neither server nor bench)',
    );
    line('mqtt.lost_decisions_at_5k_per_s', open.report.lost, `scans unanswered after ${drainMs / 1000} s`);
    line('mqtt.errors_at_5k_per_s', troubles(open), `errors ${trouble(open)}`);
    line(
      'mqtt.client_stall_ms_at_5k_per_s',
      (open.report.stallMs / open.seconds).toFixed(1),
      `ms a second (${open.report.stalls} stalls of the bench's client thread over 3 ms)`,
    );
    line(
      'mqtt.kdamond_cpu_ms_at_5k_per_s',
      ((1000 * open.kernelMonitor) / open.seconds).toFixed(1),
      "ms a second (the kernel's DAMON monitor, taking a core in bursts)",
    );

    line('mqtt.scans_sent', scansSent, 'scans (warm-up, closed and open loop)');
    line('mqtt.decisions_received', answered, 'decisions');
    line('mqtt.events_in_log', eventsInLog, 'events');
    line('mqtt.server_scans', serverScans, 'scans (its /metrics)');
    line('mqtt.server_decisions', serverDecisions, 'decisions (its /metrics)');

    const serverLines = serverOutput.join('').split('\n').filter(Boolean);
    line(
      'mqtt.server_log_lines',
      serverLines.length,
      `lines at warn or above${serverLines[0] ? ` (first: ${serverLines[0].slice(0, 160)})` : ''}`,
    );

    const bareEcho = aedesEcho.measured;
    line(
      'mqtt.bare_broker_round_trips_per_s',
      rate(bareEcho),
      "/s (aedes with no decision, echo subscriber: the issue's baseline)",
    );
    line('mqtt.bare_broker_p50_ms', ms(p50(bareEcho)), 'ms');
    line('mqtt.bare_broker_p99_ms', ms(p99(bareEcho)), 'ms');
    line('mqtt.ratio_to_bare_broker', (p99(decisions) / p99(bareEcho)).toFixed(2), 'x (p99)');
    line('mqtt.ratio_p50_to_bare_broker', (p50(decisions) / p50(bareEcho)).toFixed(2), 'x (p50)');
    line(
      'mqtt.throughput_of_bare_broker',
      ((100 * rate(decisions)) / rate(bareEcho)).toFixed(0),
      '% (decisions/s over round trips/s)',
    );

    line(
      'mqtt.in_broker_echo_round_trips_per_s',
      rate(inBroker),
      '/s (aedes answering each scan itself as the appliance does, no decision: the stricter baseline)',
    );
    line('mqtt.in_broker_echo_p50_ms', ms(p50(inBroker)), 'ms');
    line('mqtt.in_broker_echo_p99_ms', ms(p99(inBroker)), 'ms');
    line('mqtt.in_broker_echo_cpu_pct', pct(inBroker.serverCpu, inBroker), '% of one core');
    line(
      'mqtt.in_broker_echo_lost',
      inBroker.report.lost,
      `round trips; errors ${troubles(inBroker)} ${trouble(inBroker)}`,
    );
    line(
      'mqtt.in_broker_echo_p50_ms_at_5k_per_s',
      ms(p50(bareOpen!)),
      `ms (${openRate} scans/s scheduled, the appliance's open loop on this echo)`,
    );
    line('mqtt.in_broker_echo_p99_ms_at_5k_per_s', ms(p99(bareOpen!)), 'ms');
    line('mqtt.in_broker_echo_max_ms_at_5k_per_s', ms(maxOf(bareOpen!.report.hist)), 'ms');
    line(
      'mqtt.in_broker_echo_client_stall_ms_at_5k_per_s',
      (bareOpen!.report.stallMs / bareOpen!.seconds).toFixed(1),
      `ms a second (${bareOpen!.report.stalls} stalls over 3 ms)`,
    );
    line('mqtt.ratio_to_in_broker_echo', (p99(decisions) / p99(inBroker)).toFixed(2), 'x (p99)');
    line('mqtt.ratio_p50_to_in_broker_echo', (p50(decisions) / p50(inBroker)).toFixed(2), 'x (p50)');
    line(
      'mqtt.stock_aedes_echo_round_trips_per_s',
      rate(stockEcho),
      "/s (aedes, in-broker echo through aedes' own publish path)",
    );
    line('mqtt.stock_aedes_echo_p50_ms', ms(p50(stockEcho)), 'ms');
    line('mqtt.stock_aedes_echo_p99_ms', ms(p99(stockEcho)), 'ms');
    line('mqtt.stock_aedes_echo_cpu_pct', pct(stockEcho.serverCpu, stockEcho), '% of one core');
    line(
      'mqtt.stock_aedes_echo_lost',
      stockEcho.report.lost,
      `round trips; errors ${troubles(stockEcho)} ${trouble(stockEcho)}`,
    );
    line('mqtt.ratio_to_stock_aedes_echo', (p99(decisions) / p99(stockEcho)).toFixed(2), 'x (p99)');

    const echoLines = (name: string, run: Awaited<ReturnType<typeof echoLoop>>) => {
      line(`mqtt.${name}_echo_round_trips_per_s`, rate(run.measured), '/s (echo subscriber)');
      line(`mqtt.${name}_echo_p50_ms`, ms(p50(run.measured)), 'ms');
      line(`mqtt.${name}_echo_p99_ms`, ms(p99(run.measured)), 'ms');
      line(`mqtt.${name}_echo_broker_cpu_pct`, pct(run.measured.serverCpu, run.measured), '% of one core');
      line(
        `mqtt.${name}_echo_subscriber_busy_pct`,
        (100 * run.echo.busy).toFixed(0),
        `% (its thread; ${run.echo.errors} errors)`,
      );
      line(
        `mqtt.${name}_echo_lost`,
        run.measured.report.lost,
        `round trips; errors ${troubles(run.measured)} ${trouble(run.measured)}`,
      );
    };
    echoLines('aedes', aedesEcho);
    if (mosquittoEcho) {
      echoLines('mosquitto', mosquittoEcho);
      line(
        'mqtt.ratio_aedes_to_mosquitto_echo',
        (p99(aedesEcho.measured) / p99(mosquittoEcho.measured)).toFixed(2),
        'x (p99)',
      );
      line(
        'mqtt.ratio_aedes_to_mosquitto_echo_throughput',
        (rate(aedesEcho.measured) / rate(mosquittoEcho.measured)).toFixed(2),
        'x (round trips/s)',
      );
    } else {
      line('mqtt.ratio_aedes_to_mosquitto_echo', 'skipped', `(no ${MOSQUITTO}: apt-get install mosquitto)`);
    }
    line('mqtt.setup_s', setupSeconds.toFixed(1), 's (demo seed, appliance start, readers, logins)');
    line('mqtt.wall_s', ((performance.now() - began) / 1000).toFixed(1), 's');
  } finally {
    if (echoThread) echoThread.postMessage({ cmd: 'close' } satisfies ToEcho);
    for (const worker of clientThreads) worker.postMessage({ cmd: 'close' } satisfies ToClients);
    await Promise.all(
      [...clientThreads, ...(echoThread ? [echoThread] : [])].map((w) => new Promise((r) => w.once('exit', r))),
    );
    for (const proc of others) if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
    if (server.exitCode === null && server.signalCode === null) {
      server.kill('SIGTERM');
      await serverExit;
    }
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (!isMainThread) {
  if ((workerData as { role: string }).role === 'echo') await echoWorker();
  else await clientWorker();
} else if (process.argv[2] === 'echo-broker') {
  await echoBroker(Number(process.argv[3]), process.argv[4] as EchoMode);
} else {
  await main();
}
