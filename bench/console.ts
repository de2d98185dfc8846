// bench:console — docs/performance.md, "Staff console": "With 1,000 access events per second arriving, the feed stays
// responsive: the page renders at ≥ 30 frames/s in Chromium, shows the latest events (batching is fine)
// and its memory stays flat over 5 minutes (keep a bounded window of rows)."
// One run: the appliance in its own process (dist/main.js, rate limits off) with the demo venue
// (`gatehouse demo seed` on its data dir before it starts), its six readers logged in as readers do and
// connected over MQTT (bench/console-readers.ts: the scan mix, 95 % grants at the main gates moving the
// Arena's count, 5 % unknown credentials denied at three doors). Debian's Chromium (headless, launched
// by playwright-core) opens the console at 768 × 1024 in a page driven over a DevTools connection of the
// bench's own (bench/console-browser.ts: Playwright's own instrumentation of a page costs its main thread
// per WebSocket message), signs in as the admin by typing into the form (Input.insertText into each
// field) and opens /doors; a probe in the page (bench/console-page.ts) counts frames, long tasks, socket
// events and marker rows. Then:
//   1. a full window: feedWindow + 50 scans, the page shown once it has its 200 rows;
//   2. the idle baseline: IDLE seconds (10; 5 quick) with no scans, frames/s of that same page;
//   3. the load: BENCH_RATE scans/s (default 1,000), paced on the clock in 10-ms ticks, for BENCH_SECONDS
//      (default 300; BENCH_QUICK=1: 20), and every 2 s a marker scan on top (`MARK-<n>`, an unknown
//      credential whose denied row shows the credential).
// It prints, one per line:
//   console.scans_per_second          scans published per second of the load
//   console.events_per_second         decisions the readers received per second of the load: what the
//                                     appliance decided and announced (it announces on the socket what it
//                                     answers), so below the scan rate when this machine cannot keep up
//   console.page_events_per_second    AccessGranted / AccessDenied messages the page's socket received per s
//                                     (counted in the page; each grant also brings a ZoneOccupancyChanged)
//   console.decision_p50_ms / _p99_ms scan published -> decision received, all scans of the load
//   console.fps                       median of the load's 1-s windows of requestAnimationFrame callbacks
//   console.fps_p5                    the 5th percentile window (its line also names the lowest)
//   console.fps_idle_baseline         median window of the idle baseline, same page, same probe
//   console.fps_ratio                 console.fps / console.fps_idle_baseline
//   console.long_task_ms_per_s        the page's main-thread long tasks (> 50 ms) per second of the load
//   console.latest_lag_ms / _max_ms   a marker's publish (Date.now() here) -> its row inserted in the page's
//                                     document (Date.now() there; same machine, same clock): median, max. The
//                                     feed updates at most every 100 ms (console/src/feed.ts), part of this
//   console.markers_missing           markers whose row never showed (3 s of grace after the load): a page
//                                     stalled so long that 200 newer rows replaced a marker before a frame
//                                     drew it shows only those, as the feed's window is meant to
//   console.heap_start_mb / _end_mb   the page's JS heap after a forced GC (CDP HeapProfiler.collectGarbage,
//                                     then Runtime.getHeapUsage) at the load's start and end; sampled every
//                                     15 s between (5 s quick): each sample's GC is one short pause in its window
//   console.heap_slope_mb_per_min     least-squares slope of those samples: flat is ≈ 0
//   console.feed_rows                 the most feed rows the document held at any sample (feedWindow: 200)
//   console.dom_nodes                 elements in the document at the load's end (console.dom_nodes_max:
//                                     the most at any sample)
//   console.appliance_cpu_pct / console.chromium_cpu_pct / console.machine_busy_cores: where this 2-core
//                                     machine's time went (from /proc)
//   console.page_errors               console errors and uncaught exceptions in the page
// and on stderr the Chromium version, every window's frames, long tasks and decisions, every heap sample.
// BENCH_CONSOLE_PROFILE=<file>: a CPU profile of the page over 5 s of the load; BENCH_CONSOLE_TRACE=<file>:
// Chromium's trace over 3 s of it, summarised by thread (bench/console-profile.ts).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Browser } from 'playwright-core';
import { type ApplianceProcess, BENCH_ADMIN, startApplianceProcess, stopProcess } from './appliance-process.js';
import { type CdpPage, openBrowser } from './console-browser.js';
import { installProbe, type Probe } from './console-page.js';
import { chromiumCpu } from './console-cpu.js';
import { profilePage, traceBrowser } from './console-profile.js';
import { MARKER_PREFIX, VenueReaders } from './console-readers.js';
import { cpuOf, freePort, line, machineBusy, sleep } from './process-stats.js';

const quick = process.env.BENCH_QUICK === '1';
const SECONDS = Number(process.env.BENCH_SECONDS ?? (quick ? 20 : 300));
const RATE = Number(process.env.BENCH_RATE ?? 1000);
const IDLE = quick ? 5 : 10;
const HEAP_EVERY_MS = quick ? 5000 : 15_000;
const MARK_EVERY_MS = 2000;
const TICK_MS = 10;
const GRACE_MS = 3000;
const FEED_WINDOW = 200; // console/app-manifest.json settings.feedWindow

interface HeapSample {
  t: number;
  mb: number;
  rows: number;
  elements: number;
  nodes: number;
}

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const at = q * (sorted.length - 1);
  const low = Math.floor(at);
  return sorted[low]! + (sorted[Math.min(low + 1, sorted.length - 1)]! - sorted[low]!) * (at - low);
}

/** Least-squares slope of y over x. */
function slope(xs: number[], ys: number[]): number {
  const n = xs.length;
  if (n < 2) return Number.NaN;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    num += (xs[i]! - mx) * (ys[i]! - my);
    den += (xs[i]! - mx) ** 2;
  }
  return num / den;
}

const windows = (counts: number[], n: number) => Array.from({ length: n }, (_, i) => counts[i] ?? 0);
const fixed = (value: number, digits = 1) => (Number.isFinite(value) ? value.toFixed(digits) : 'NaN');

async function readProbe(page: CdpPage): Promise<Pick<Probe, 'frames' | 'longTaskMs' | 'marks' | 'socketEvents'>> {
  return page.evaluate(`(() => {
    const { frames, longTaskMs, marks, socketEvents } = window.__benchProbe;
    return { frames, longTaskMs, marks, socketEvents };
  })()`);
}

async function heapSample(page: CdpPage, t: number): Promise<HeapSample> {
  await page.send('HeapProfiler.collectGarbage');
  const { usedSize } = await page.send<{ usedSize: number }>('Runtime.getHeapUsage');
  const { metrics } = await page.send<{ metrics: { name: string; value: number }[] }>('Performance.getMetrics');
  const counts = await page.evaluate<{ rows: number; elements: number }>(
    `({ rows: document.querySelectorAll('[data-testid=feed-row]').length, elements: document.getElementsByTagName('*').length })`,
  );
  return {
    t,
    mb: usedSize / 1024 / 1024,
    nodes: metrics.find((m) => m.name === 'Nodes')?.value ?? Number.NaN,
    ...counts,
  };
}

/** Signs in as staff do, typing into the form (DevTools' Input.insertText into each focused field), and waits for the live doors. */
async function signIn(page: CdpPage, url: string): Promise<void> {
  await page.send('Page.navigate', { url: `${url}/doors` });
  await page.waitFor(`location.pathname === '/signin' && document.querySelector('#email')`, 'the sign-in form');
  for (const [field, text] of [
    ['#email', BENCH_ADMIN.email],
    ['#password', BENCH_ADMIN.password],
  ] as const) {
    await page.evaluate(`document.querySelector('${field}').focus()`);
    await page.send('Input.insertText', { text });
  }
  await page.evaluate(`document.querySelector('form button[type=submit]').click()`);
  await page.waitFor(`location.pathname === '/doors'`, 'the live doors after sign-in');
  await page.waitFor(
    `document.querySelector('[data-testid=live-state]')?.textContent === 'Live' && document.querySelector('[data-testid=zone]')`,
    'the live doors connected',
  );
}

interface State {
  dataDirs: string[];
  appliance?: ApplianceProcess;
  browser?: Browser;
  page?: CdpPage;
  readers?: VenueReaders;
}

async function main(state: State): Promise<void> {
  // The demo venue, seeded before the appliance starts, as `npm run demo` does.
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-console-'));
  state.dataDirs.push(dataDir);
  const seeded = spawnSync(process.execPath, ['dist/main.js', 'demo', 'seed'], {
    env: { PATH: process.env.PATH ?? '', GATEHOUSE_DATA_DIR: dataDir },
    encoding: 'utf8',
  });
  if (seeded.status !== 0) throw new Error(`demo seed failed: ${seeded.stderr}`);
  const mqttPort = await freePort();
  const appliance = await startApplianceProcess('console', {
    GATEHOUSE_DATA_DIR: dataDir,
    GATEHOUSE_MQTT_PORT: String(mqttPort),
    GATEHOUSE_READERS_VERIFY_PER_MINUTE: '1000',
  });
  state.appliance = appliance;
  state.dataDirs.push(appliance.dataDir); // made by startApplianceProcess, unused: ours replaced it

  const call =
    (token: string | null) =>
    async <T>(method: string, path: string, body?: unknown): Promise<T> => {
      const res = await fetch(`${appliance.url}${path}`, {
        method,
        headers: {
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
      return (await res.json().catch(() => null)) as T;
    };
  const readers = new VenueReaders();
  state.readers = readers;
  await readers.connect(call(appliance.token), call(null), '127.0.0.1');

  const { browser, page } = await openBrowser(768, 1024);
  state.browser = browser;
  state.page = page;
  const pageErrors: string[] = [];
  page.on('Runtime.exceptionThrown', (e) =>
    pageErrors.push(`uncaught: ${JSON.stringify(e.exceptionDetails).slice(0, 300)}`),
  );
  page.on('Runtime.consoleAPICalled', (e) => {
    if (e.type === 'error') pageErrors.push(`console.error: ${JSON.stringify(e.args).slice(0, 300)}`);
  });
  await page.send('Runtime.enable');
  await page.send('Page.enable'); // Page.addScriptToEvaluateOnNewDocument needs it
  await page.send('Page.addScriptToEvaluateOnNewDocument', {
    source: `(${installProbe.toString()})(${JSON.stringify(MARKER_PREFIX)})`,
  });
  await signIn(page, appliance.url);
  console.error(
    `Chromium ${browser.version()} (headless), ${await page.evaluate("innerWidth + ' × ' + innerHeight")}; ${RATE} scans/s for ${SECONDS} s, idle baseline ${IDLE} s`,
  );

  // 1. A full window, so the idle page is the page under load minus the arrivals.
  for (let i = 0; i < FEED_WINDOW + 50; i++) {
    readers.scan();
    if (i % 25 === 24) await sleep(100);
  }
  await page.waitFor(
    `document.querySelectorAll('[data-testid=feed-row]').length >= ${FEED_WINDOW}`,
    'a full window of rows',
  );
  await sleep(2000);

  // 2. The idle baseline.
  await page.evaluate('window.__benchProbe.start()');
  await sleep(IDLE * 1000 + 200);
  const idle = await readProbe(page);
  const idleFrames = windows(idle.frames, IDLE);
  const idleLong = windows(idle.longTaskMs, IDLE);

  // 3. The load.
  await page.send('Performance.enable');
  const heap: HeapSample[] = [await heapSample(page, 0)];
  readers.resetTally();
  await page.evaluate('window.__benchProbe.start()');
  const started = performance.now();
  const cpu0 = {
    appliance: cpuOf(appliance.proc.pid!),
    machine: machineBusy(),
    chromium: chromiumCpu(appliance.proc.pid!),
  };
  const markers = new Map<string, number>();
  let marked = 0;
  let nextMark = 1000;
  const ticker = setInterval(() => {
    const elapsed = performance.now() - started;
    if (elapsed >= SECONDS * 1000) return;
    const due = Math.floor((elapsed * RATE) / 1000);
    while (readers.tally.sent - marked < due) readers.scan();
    if (elapsed >= nextMark) {
      nextMark += MARK_EVERY_MS;
      markers.set(readers.marker(++marked), Date.now());
    }
  }, TICK_MS);
  try {
    if (process.env.BENCH_CONSOLE_PROFILE) {
      await sleep(2000);
      await profilePage(page, process.env.BENCH_CONSOLE_PROFILE, 5000);
    }
    if (process.env.BENCH_CONSOLE_TRACE) {
      await sleep(2000);
      await traceBrowser(browser, process.env.BENCH_CONSOLE_TRACE, 3000);
    }
    for (let next = HEAP_EVERY_MS; next < SECONDS * 1000; next += HEAP_EVERY_MS) {
      await sleep(next - (performance.now() - started));
      heap.push(await heapSample(page, next / 1000));
    }
    await sleep(SECONDS * 1000 - (performance.now() - started));
  } finally {
    clearInterval(ticker);
  }
  const loadSeconds = (performance.now() - started) / 1000;
  const chromium = chromiumCpu(appliance.proc.pid!);
  const cpu = {
    appliance: cpuOf(appliance.proc.pid!) - cpu0.appliance,
    machine: machineBusy() - cpu0.machine,
    chromium: chromium.all - cpu0.chromium.all,
    renderer: chromium.renderer - cpu0.chromium.renderer,
  };
  const socket = await page.evaluate<{ events: number; messages: number }>(
    '({ events: window.__benchProbe.socketEvents, messages: window.__benchProbe.socketMessages })',
  );
  heap.push(await heapSample(page, SECONDS));
  const tally = readers.tally;
  const decided = windows(tally.perWindow, SECONDS);
  await sleep(GRACE_MS);
  const probe = await readProbe(page);
  const frames = windows(probe.frames, SECONDS);
  const longTasks = windows(probe.longTaskMs, SECONDS);
  const shown = await page.evaluate<{ live: string; arena: string }>(
    `({ live: document.querySelector('[data-testid=live-state]')?.textContent, arena: document.querySelector('[data-zone=Arena] [data-testid=zone-count]')?.textContent })`,
  );

  // Details, then the figures.
  console.error(
    `idle windows (frames): ${idleFrames.join(' ')}; long tasks ${idleLong.reduce((a, b) => a + b, 0).toFixed(0)} ms`,
  );
  console.error(`load windows (frames): ${frames.join(' ')}`);
  console.error(`load windows (long-task ms): ${longTasks.map((ms) => ms.toFixed(0)).join(' ')}`);
  console.error(`load windows (decisions received): ${decided.join(' ')}`);
  for (const s of heap)
    console.error(
      `heap at ${s.t} s: ${s.mb.toFixed(2)} MB; ${s.rows} feed rows, ${s.elements} elements in the document, ${s.nodes} DOM nodes alive (CDP)`,
    );
  const lags: number[] = [];
  const missing: string[] = [];
  for (const [credential, sentAt] of markers) {
    const shown = probe.marks[credential];
    if (shown === undefined) missing.push(credential);
    else lags.push(shown - sentAt);
  }
  console.error(
    `markers: ${markers.size} sent; lags ${lags.map((ms) => ms.toFixed(0)).join(' ')} ms${missing.length ? `; missing ${missing.join(' ')}` : ''}`,
  );
  console.error(
    `scans: ${tally.sent} sent, ${tally.answered} answered (${tally.granted} granted, ${tally.denied} denied), ${readers.inFlight} unanswered ${GRACE_MS / 1000} s after, ${tally.errors} errors; the page's socket: ${(socket.messages / loadSeconds).toFixed(0)} messages/s in all, ${shown.live} at the end; the Arena at the end: ${shown.arena}`,
  );
  for (const problem of pageErrors.slice(0, 10)) console.error(`page error: ${problem}`);

  const fps = quantile(frames, 0.5);
  const idleFps = quantile(idleFrames, 0.5);
  line('console.scans_per_second', fixed(tally.sent / loadSeconds, 0), `/s (target ${RATE}/s, ${SECONDS} s)`);
  line(
    'console.events_per_second',
    fixed(decided.reduce((a, b) => a + b, 0) / SECONDS, 0),
    `/s (decisions received; slowest window ${Math.min(...decided)}/s)`,
  );
  line(
    'console.page_events_per_second',
    fixed(socket.events / loadSeconds, 0),
    '/s (AccessGranted/AccessDenied messages on the page socket)',
  );
  line('console.decision_p50_ms', fixed(quantile(tally.latencies, 0.5)), 'ms');
  line('console.decision_p99_ms', fixed(quantile(tally.latencies, 0.99)), 'ms');
  line('console.fps', fixed(fps), 'frames/s (median 1-s window under load)');
  line(
    'console.fps_p5',
    fixed(quantile(frames, 0.05)),
    `frames/s (5th percentile window; lowest ${Math.min(...frames)})`,
  );
  line('console.fps_idle_baseline', fixed(idleFps), 'frames/s (median 1-s window, no scans)');
  line('console.fps_ratio', fixed(fps / idleFps, 2), 'x (load / idle)');
  line(
    'console.long_task_ms_per_s',
    fixed(longTasks.reduce((a, b) => a + b, 0) / SECONDS),
    'ms/s (long tasks under load)',
  );
  line(
    'console.latest_lag_ms',
    fixed(quantile(lags, 0.5), 0),
    `ms (marker publish -> its row in the document, median of ${lags.length})`,
  );
  line('console.latest_lag_max_ms', fixed(Math.max(...lags), 0), 'ms');
  line('console.markers_missing', missing.length, `markers (of ${markers.size})`);
  line('console.heap_start_mb', fixed(heap[0]!.mb, 2), 'MB');
  line('console.heap_end_mb', fixed(heap[heap.length - 1]!.mb, 2), 'MB');
  line(
    'console.heap_slope_mb_per_min',
    fixed(
      60 *
        slope(
          heap.map((s) => s.t),
          heap.map((s) => s.mb),
        ),
      3,
    ),
    `MB/min (${heap.length} samples)`,
  );
  line(
    'console.feed_rows',
    Math.max(...heap.map((s) => s.rows)),
    `rows (most at any sample; feedWindow ${FEED_WINDOW})`,
  );
  line('console.dom_nodes', heap[heap.length - 1]!.elements, 'elements (in the document at the end)');
  line('console.dom_nodes_max', Math.max(...heap.map((s) => s.elements)), 'elements (most at any sample)');
  line('console.appliance_cpu_pct', fixed((100 * cpu.appliance) / loadSeconds, 0), '% of one core');
  line(
    'console.chromium_cpu_pct',
    fixed((100 * cpu.chromium) / loadSeconds, 0),
    `% of one core (all its processes; the page's renderer ${fixed((100 * cpu.renderer) / loadSeconds, 0)} %)`,
  );
  line(
    'console.machine_busy_cores',
    fixed(cpu.machine / loadSeconds, 2),
    'cores (of 2; Chromium, the appliance, this bench, and whatever else ran)',
  );
  line('console.page_errors', pageErrors.length, 'errors');
}

const state: State = { dataDirs: [] };
// A run ended by a signal (Playwright's handlers exit the process on SIGINT / SIGTERM) leaves nothing behind either.
process.once('exit', () => {
  state.appliance?.proc.kill('SIGKILL');
  for (const dir of state.dataDirs) rmSync(dir, { recursive: true, force: true });
});
try {
  await main(state);
} finally {
  await state.readers?.close().catch(() => {});
  state.page?.close();
  await state.browser?.close().catch(() => {});
  if (state.appliance) await stopProcess(state.appliance.proc);
  for (const dir of state.dataDirs) rmSync(dir, { recursive: true, force: true });
}
