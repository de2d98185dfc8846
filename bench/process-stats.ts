import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { performance } from 'node:perf_hooks';

// What the benches that run the appliance in its own process share: figure lines, free ports,
// whether dist/ is older than src/, and what a process (or the whole machine) spent from /proc.

export const line = (name: string, value: string | number, unit: string) => console.log(`${name}: ${value} ${unit}`);
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const wallNow = () => performance.timeOrigin + performance.now();

// Latency histogram: 10 us buckets up to 100 ms, then 1 ms buckets up to 120 s.
export const FINE = 10_000;
export const HIST = FINE + 120_000;
export const bucketOf = (ms: number) =>
  ms < 0 ? 0 : ms < 100 ? Math.floor(ms * 100) : Math.min(HIST - 1, FINE + Math.floor(ms - 100));
export const msOf = (bucket: number) => (bucket < FINE ? (bucket + 0.5) / 100 : 100 + (bucket - FINE) + 0.5);

/** The V8 flags the appliance runs with (scripts/node-flags.json; npm start, the Dockerfile and main.ts's hashbang say the same). */
export function nodeFlags(): string[] {
  return JSON.parse(readFileSync('scripts/node-flags.json', 'utf8')) as string[];
}

export function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/** VmRSS of a process in bytes (0 once it is gone). */
export function rssOf(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** User + system CPU seconds of a process (/proc/<pid>/stat fields 14 and 15, in clock ticks of 1/100 s). */
export function cpuOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** Busy CPU seconds of the whole machine, all cores (/proc/stat: user nice system irq softirq steal). */
export function machineBusy(): number {
  const [, user, nice, system, , , irq, softirq, steal] = readFileSync('/proc/stat', 'utf8')
    .split('\n')[0]!
    .trim()
    .split(/\s+/)
    .map(Number);
  return (user! + nice! + system! + irq! + softirq! + steal!) / 100;
}

export const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });

/** Waits until the appliance at `base` answers /ready (15 s at most), or throws `fail`'s error. */
export async function waitUntilReady(
  base: string,
  server: ChildProcess,
  fail: (message: string) => Error,
): Promise<void> {
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`${base}/ready`)).ok) return;
    } catch {}
    if (i > 150 || server.exitCode !== null) throw fail('appliance did not start');
    await sleep(100);
  }
}
