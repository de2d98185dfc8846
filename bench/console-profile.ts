import { writeFileSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import type { CdpPage } from './console-browser.js';

// BENCH_CONSOLE_PROFILE=<file.cpuprofile>: Chromium's CPU profile of the page's main thread over a
// few seconds of the load (CDP Profiler, sampling every 200 us), written for DevTools' Performance
// panel, and its heaviest functions by self time on stderr (name and place in the bundle: the
// console's build is minified, so the place says more than the name).

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
}

export async function profilePage(cdp: CdpPage, file: string, ms: number): Promise<void> {
  await cdp.send('Profiler.enable');
  await cdp.send('Profiler.setSamplingInterval', { interval: 200 });
  await cdp.send('Profiler.start');
  await new Promise((done) => setTimeout(done, ms));
  const { profile } = await cdp.send<{ profile: { nodes: ProfileNode[]; samples?: number[]; timeDeltas?: number[] } }>(
    'Profiler.stop',
  );
  writeFileSync(file, JSON.stringify(profile));
  const nodes = new Map<number, ProfileNode>(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  const deltas = profile.timeDeltas ?? [];
  (profile.samples ?? []).forEach((id, i) => {
    const { functionName, url, lineNumber, columnNumber } = nodes.get(id)!.callFrame;
    const key = `${functionName || '(anonymous)'} ${url.split('/').pop()}:${lineNumber + 1}:${columnNumber + 1}`;
    self.set(key, (self.get(key) ?? 0) + (deltas[i] ?? 0) / 1000);
  });
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  console.error(`page CPU profile (${file}), ${(total / 1000).toFixed(1)} s sampled, by self time:`);
  for (const [key, msSelf] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 25))
    console.error(`  ${msSelf.toFixed(0).padStart(6)} ms  ${key}`);
}

interface TraceEvent {
  name: string;
  ph: string;
  pid: number;
  tid: number;
  dur?: number;
  args?: { name?: string };
}

/**
 * BENCH_CONSOLE_TRACE=<file.json>: Chromium's trace (devtools.timeline, all its processes) over a few
 * seconds of the load, for DevTools' Performance panel, and on stderr where each thread of each process spent its
 * time (complete events by name; nested ones are counted inside their parents as well).
 */
export async function traceBrowser(browser: Browser, file: string, ms: number): Promise<void> {
  await browser.startTracing(undefined, {
    path: file,
    categories: [
      'devtools.timeline',
      'disabled-by-default-devtools.timeline',
      'disabled-by-default-devtools.timeline.frame',
      'gpu',
      'cc',
      'viz',
    ],
  });
  await new Promise((done) => setTimeout(done, ms));
  const trace = JSON.parse((await browser.stopTracing()).toString('utf8')) as { traceEvents: TraceEvent[] };
  const threadNames = new Map<string, string>();
  for (const e of trace.traceEvents)
    if (e.ph === 'M' && e.name === 'thread_name') threadNames.set(`${e.pid}:${e.tid}`, e.args?.name ?? '?');
  const byThread = new Map<string, Map<string, number>>();
  for (const e of trace.traceEvents) {
    if (e.ph !== 'X' || !e.dur) continue;
    const thread = `${threadNames.get(`${e.pid}:${e.tid}`) ?? '?'} (${e.pid}:${e.tid})`;
    const names = byThread.get(thread) ?? new Map<string, number>();
    byThread.set(thread, names);
    names.set(e.name, (names.get(e.name) ?? 0) + e.dur / 1000);
  }
  console.error(`page trace (${file}), ${ms / 1000} s, ms by thread and event:`);
  for (const [thread, names] of byThread) {
    const top = [...names].sort((a, b) => b[1] - a[1]).slice(0, 8);
    if ((top[0]?.[1] ?? 0) < 20) continue;
    console.error(`  ${thread}: ${top.map(([name, t]) => `${name} ${t.toFixed(0)}`).join(', ')}`);
  }
}
