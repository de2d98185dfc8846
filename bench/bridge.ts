// bench:bridge — docs/performance.md, "The firmware bridge". Serial readers plugged into the box, as fast as their
// lines allow: the appliance in its own process (`node dist/main.js`, a temp data dir, HTTP and
// MQTT on port 0, rate limits off), a zone with one access point (direction both, so a holder's
// scans alternate in and out and are granted), 1,000 attendees with rdm6300 credentials (10 hex
// digits: 00000003E8, 00000003E9, ...) by bulk import, and 20 socat pty pairs with a bridge
// device on each (framing rdm6300, debounce_ms 0, feedback grant 06 / deny 15, each its own
// reader identifier, all at the access point), registered over REST.
// Each of the 20 readers runs a closed loop from this process: write one rdm6300 frame, wait for
// its feedback byte on the reader's side of the pty, write the next, cycling through the
// credentials with every tenth value one nobody holds (a denial). The readers' side of each pty
// is opened with a raw fd as a tty stream (libuv's tty handle: a write goes out synchronously,
// not through the thread pool as serialport's does), so the bench adds as little as it can.
// After a warm-up (1 s; 0.5 s quick), for 10 s (3 s with BENCH_QUICK=1), it prints:
//   bridge.scans_per_s                  feedback bytes received in the window / its seconds
//   bridge.p99_frame_to_feedback_ms     a frame's write completed (its last byte in the pty) until
//   bridge.p50_frame_to_feedback_ms     its feedback byte is read on the reader's side
// and on stderr the context: CPU of the appliance, of the 20 socat relays, of this process and of
// the whole machine (2 cores: 2.00 is all of it), grants and denials, the bridge's counters.
// At the end it checks over REST (the access-event export) that the access events with source
// `bridge` are as many as the feedback bytes received: a warning when they differ, a failure when
// by more than the 20 frames that can be in flight.
import { type ChildProcess, spawn } from 'node:child_process';
import { constants, existsSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { ReadStream } from 'node:tty';
import { bucketOf, cpuOf, HIST, line, machineBusy, msOf, sleep } from './process-stats.js';
import { encodeScan } from '../firmware-bridge/framing/encode.js';
import { startApplianceProcess, stopProcess } from './appliance-process.js';

const quick = process.env.BENCH_QUICK === '1';
const SECONDS = quick ? 3 : 10;
const WARMUP_MS = quick ? 500 : 1000;
const READERS = 20;
const ATTENDEES = 1000;
const GRANT = 0x06;
const DENY = 0x15;
const P = '/api/v1/projects/default/default';

const procs: ChildProcess[] = [];
const socats: ChildProcess[] = [];
const dirs: string[] = [];
const lines: ReadStream[] = [];

interface Appliance {
  proc: ChildProcess;
  url: string;
  token: string;
}

/** A valid rdm6300 frame for 10 hex digits (firmware-bridge/framing/encode.ts). */
const rdm6300 = (data: string): Buffer => encodeScan('rdm6300', data).frame;

const hex10 = (n: number) => n.toString(16).toUpperCase().padStart(10, '0');

/** The appliance, allowed to open the pty pairs in `ptyDir` (by default the bridge opens serial ports only: docs/bridge.md). */
async function start(ptyDir: string): Promise<Appliance> {
  const config = join(ptyDir, 'gatehouse.json');
  writeFileSync(config, JSON.stringify({ bridge: { allowedPaths: [`${ptyDir}/`] } }));
  const { proc, url, dataDir, token } = await startApplianceProcess('bridge', {
    GATEHOUSE_BRIDGE_REOPEN_MIN_MS: '50',
    GATEHOUSE_BRIDGE_REOPEN_MAX_MS: '200',
    GATEHOUSE_CONFIG: config,
  });
  procs.push(proc);
  dirs.push(dataDir);
  return { proc, url, token };
}

async function request(app: Appliance, method: string, path: string, body?: unknown, expect = 200): Promise<string> {
  const res = await fetch(`${app.url}${P}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${app.token}`,
      accept: 'application/json',
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status !== expect) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 500)}`);
  return text;
}

async function api<T = Record<string, unknown>>(
  app: Appliance,
  method: string,
  path: string,
  body?: unknown,
  expect = 200,
): Promise<T> {
  const text = await request(app, method, path, body, expect);
  return (text ? JSON.parse(text) : {}) as T;
}

async function until(what: string, check: () => Promise<boolean> | boolean, ms = 30_000, every = 50): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(every);
  }
}

/** A socat pty pair: the bridge opens `device`, the bench holds `lineEnd` (the reader's side). */
async function ptyPair(dir: string, name: string): Promise<{ device: string; lineEnd: string; socat: ChildProcess }> {
  const device = join(dir, `${name}-dev`);
  const lineEnd = join(dir, `${name}-line`);
  const socat = spawn('socat', [`pty,raw,echo=0,link=${device}`, `pty,raw,echo=0,link=${lineEnd}`], {
    stdio: 'ignore',
  });
  socats.push(socat);
  await until(`socat's pty pair ${name}`, () => existsSync(device) && existsSync(lineEnd), 10_000, 20);
  return { device, lineEnd, socat };
}

interface BridgeState {
  connected: boolean;
  frames: number;
  bad_frames: number;
  debounced: number;
  errors: number;
  last_error: string | null;
}

async function main(): Promise<void> {
  const ptyDir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-bridge-pty-'));
  dirs.push(ptyDir);
  const app = await start(ptyDir);

  // The venue: one hall, one door both ways, 1,000 holders of rdm6300 cards.
  const zone = (await api<{ data: { id: number } }>(app, 'POST', '/access-zones', { name: 'Hall' }, 201)).data.id;
  const door = (
    await api<{ data: { id: number } }>(
      app,
      'POST',
      '/access-points',
      { name: 'Door', access_zone_id: zone, direction: 'both' },
      201,
    )
  ).data.id;
  const credentials = Array.from({ length: ATTENDEES }, (_, i) => hex10(1000 + i));
  const imported = await api<{ data: { imported: number; credentials: number } }>(
    app,
    'POST',
    '/attendees/import',
    credentials.map((value, i) => ({
      first_name: 'Card',
      last_name: `No${i}`,
      external_id: `RDM-${i}`,
      credential_value: value,
    })),
  );
  if (imported.data.imported !== ATTENDEES)
    throw new Error(`imported ${imported.data.imported} attendees, not ${ATTENDEES}`);

  // What each reader sends, built once: a cycle of 1,000 frames, every tenth one a card nobody holds.
  const known = credentials.map(rdm6300);
  const cycles = Array.from({ length: READERS }, (_, r) =>
    Array.from({ length: ATTENDEES }, (_, k) =>
      k % 10 === 9 ? rdm6300(hex10(0xff_0000_0000 + r * ATTENDEES + k)) : known[(r * 50 + k) % ATTENDEES]!,
    ),
  );

  // 20 pty pairs, a bridge device on each.
  const pairs = await Promise.all(Array.from({ length: READERS }, (_, r) => ptyPair(ptyDir, `r${r}`)));
  const ids: number[] = [];
  for (let r = 0; r < READERS; r++) {
    const created = await api<{ data: { id: number } }>(
      app,
      'POST',
      '/bridge/devices',
      {
        name: `Bench reader ${r}`,
        path: pairs[r]!.device,
        reader_identifier: `BENCH-RDM-${r}`,
        access_point_id: door,
        framing: 'rdm6300',
        feedback: { grant: '06', deny: '15' },
        debounce_ms: 0,
      },
      201,
    );
    ids.push(created.data.id);
  }
  const states = async () =>
    (await api<{ data: (BridgeState & { id: number })[] }>(app, 'GET', '/bridge/devices?per_page=100')).data.filter(
      (d) => ids.includes(d.id),
    );
  await until(
    'the 20 bridge devices connected',
    async () => (await states()).filter((d) => d.connected).length === READERS,
  );

  // The readers' side: raw fds as tty streams (the pair is raw, no echo: socat set it up so).
  const hist = new Uint32Array(HIST);
  let running = true;
  let measuring = false;
  /** Feedback bytes read in the window; of those, the answers to frames written in it (the histogram's). */
  let windowFeedback = 0;
  let latencies = 0;
  let failure: Error | null = null;
  let feedback = 0;
  let grants = 0;
  let denials = 0;
  let strays = 0;
  const readers = pairs.map((pair, r) => {
    const fd = openSync(pair.lineEnd, constants.O_RDWR | constants.O_NOCTTY | constants.O_NONBLOCK);
    const stream = new ReadStream(fd);
    lines.push(stream);
    /** writtenAt: when the write of the frame in flight completed (0 until then); calledAt: when it was asked for. */
    const state = { k: 0, calledAt: 0, writtenAt: 0, inWindow: false, waiting: false, sent: 0 };
    const next = () => {
      if (!running) return;
      const frame = cycles[r]![state.k++ % ATTENDEES]!;
      state.waiting = true;
      state.sent++;
      state.writtenAt = 0;
      state.inWindow = measuring;
      state.calledAt = performance.now();
      stream.write(frame, (err) => {
        // The frame's last byte is in the pty (a tty write completes synchronously; this runs on the next tick).
        if (!err && state.waiting && state.writtenAt === 0) state.writtenAt = performance.now();
      });
    };
    stream.on('data', (chunk: Buffer) => {
      const now = performance.now();
      for (let i = 0; i < chunk.length; i++) {
        const byte = chunk[i]!;
        if (byte === GRANT) grants++;
        else if (byte === DENY) denials++;
        if (!state.waiting) {
          strays++;
          continue;
        }
        state.waiting = false;
        feedback++;
        // Should the feedback ever be read before the write's callback ran: from the call.
        const from = state.writtenAt || state.calledAt;
        if (measuring) {
          windowFeedback++;
          if (state.inWindow) {
            latencies++;
            hist[bucketOf(now - from)]!++;
          }
        }
      }
      if (!state.waiting) next();
    });
    stream.on('error', (err) => {
      if (running) failure ??= new Error(`reader ${r}'s side of the pty: ${err.message}`);
      running = false;
    });
    return { stream, state, kick: next };
  });

  // Warm-up, then the window.
  for (const reader of readers) reader.kick();
  await sleep(WARMUP_MS);
  const cpuBefore = {
    app: cpuOf(app.proc.pid!),
    socat: socats.reduce((s, p) => s + cpuOf(p.pid!), 0),
    bench: process.cpuUsage(),
    machine: machineBusy(),
  };
  const started = performance.now();
  measuring = true;
  await sleep(SECONDS * 1000);
  measuring = false;
  const seconds = (performance.now() - started) / 1000;
  const benchUsed = process.cpuUsage(cpuBefore.bench);
  const cpu = {
    app: (cpuOf(app.proc.pid!) - cpuBefore.app) / seconds,
    socat: (socats.reduce((s, p) => s + cpuOf(p.pid!), 0) - cpuBefore.socat) / seconds,
    bench: (benchUsed.user + benchUsed.system) / 1e6 / seconds,
    machine: (machineBusy() - cpuBefore.machine) / seconds,
  };
  const windowCount = windowFeedback;
  if (failure) throw failure;

  // Stop sending; the frames in flight get their answers (or are counted as lost).
  running = false;
  await until(
    'the frames in flight answered',
    () => readers.every((r) => !r.state.waiting),
    quick ? 3000 : 10_000,
    10,
  ).catch(() => {});
  const lost = readers.filter((r) => r.state.waiting).length;
  const sent = readers.reduce((s, r) => s + r.state.sent, 0);

  const percentile = (q: number) => {
    const rank = Math.max(1, Math.ceil(q * latencies));
    let seen = 0;
    for (let i = 0; i < HIST; i++) if ((seen += hist[i]!) >= rank) return msOf(i);
    return msOf(HIST - 1);
  };
  let maxBucket = HIST - 1;
  while (maxBucket > 0 && hist[maxBucket] === 0) maxBucket--;

  line('bridge.scans_per_s', (windowCount / seconds).toFixed(0), '/s');
  line('bridge.p99_frame_to_feedback_ms', percentile(0.99).toFixed(2), 'ms');
  line('bridge.p50_frame_to_feedback_ms', percentile(0.5).toFixed(2), 'ms');
  console.error(
    `cpu during the ${seconds.toFixed(1)} s window: appliance ${cpu.app.toFixed(2)}, 20 socat relays ${cpu.socat.toFixed(2)}, bench ${cpu.bench.toFixed(2)}, the machine ${cpu.machine.toFixed(2)} cores (of 2)`,
  );
  console.error(
    `${windowCount} feedback bytes in the window (${READERS} readers, closed loop, after ${WARMUP_MS} ms warm-up), ${latencies} of them timed; p90 ${percentile(0.9).toFixed(2)} ms, p999 ${percentile(0.999).toFixed(2)} ms, max ${msOf(maxBucket).toFixed(2)} ms`,
  );
  console.error(
    `in all: ${sent} frames sent, ${feedback} answered (${grants} grants, ${denials} denials), ${lost} unanswered at the end, ${strays} stray feedback bytes`,
  );
  const finalStates = await states();
  const sum = (k: keyof BridgeState) => finalStates.reduce((s, d) => s + Number(d[k]), 0);
  console.error(
    `bridge counters: frames ${sum('frames')}, bad_frames ${sum('bad_frames')}, debounced ${sum('debounced')}, errors ${sum('errors')}${finalStates.find((d) => d.last_error)?.last_error ? ` (last: ${finalStates.find((d) => d.last_error)!.last_error})` : ''}`,
  );

  // Cross-check: the access events with source bridge (the export waits until every answered scan is in the table).
  const csv = await request(app, 'GET', '/access-events?format=csv');
  const rows = csv.split('\r\n').slice(1);
  const bridgeEvents = rows.filter((row) => /,"?bridge"?$/.test(row)).length;
  const off = Math.abs(bridgeEvents - feedback);
  if (off !== 0)
    console.error(
      `WARNING: ${bridgeEvents} access events with source bridge, but ${feedback} feedback bytes received (off by ${off})`,
    );
  else
    console.error(
      `cross-check: ${bridgeEvents} access events with source bridge = ${feedback} feedback bytes received`,
    );
  if (off > READERS)
    throw new Error(
      `access events with source bridge (${bridgeEvents}) and feedback bytes (${feedback}) differ by ${off}, more than the ${READERS} frames in flight`,
    );
}

try {
  await main();
} finally {
  for (const stream of lines) stream.destroy();
  await Promise.all(procs.map((p) => stopProcess(p)));
  for (const p of socats) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  await sleep(200);
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
}
