// Evidence for docs/performance.md: a scavenge's pause grows with the old
// generation's size even when almost nothing survives, because V8 walks every old-generation
// page to find the remembered sets. Churns short-lived objects for 3 s with an empty old
// generation, then with 2M old objects (about what bench:engine used to keep alive), at the
// appliance's 64 MB semi-space, and prints the median scavenge pause of each, in the same run.
//   node bench/scavenge-heap-walk.mjs            (runs both cases as child processes)
import { spawnSync } from 'node:child_process';
import { PerformanceObserver, constants } from 'node:perf_hooks';

const oldObjects = process.argv[2];
if (oldObjects === undefined) {
  for (const n of [0, 2_000_000]) {
    const run = spawnSync(
      process.execPath,
      ['--max-semi-space-size=64', '--min-semi-space-size=64', new URL(import.meta.url).pathname, String(n)],
      { encoding: 'utf8' },
    );
    if (run.status !== 0) throw new Error(run.stderr);
    process.stdout.write(run.stdout);
  }
} else {
  const old = [];
  for (let i = 0; i < Number(oldObjects); i++) old.push({ a: `x${i}`, b: i, c: [i] });
  const pauses = [];
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries())
      if (entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR) pauses.push(entry.duration);
  }).observe({ entryTypes: ['gc'] });
  let keep = null;
  const end = Date.now() + 3000;
  const spin = () => {
    for (let i = 0; i < 1000; i++) keep = { x: i, y: [i, i + 1], s: `k${i}` };
    if (Date.now() < end) setImmediate(spin);
    else
      setTimeout(() => {
        pauses.sort((a, b) => a - b);
        const name = oldObjects === '0' ? 'empty_old_generation' : `old_generation_${oldObjects}_objects`;
        console.log(
          `gc.scavenge_median_ms_${name}: ${(pauses[pauses.length >> 1] ?? 0).toFixed(2)} ms (${pauses.length} scavenges, ${old.length + (keep ? 0 : 0)} old objects)`,
        );
      }, 10);
  };
  spin();
}
