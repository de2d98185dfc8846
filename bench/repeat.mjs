// Runs one bench N times (BENCH_RUNS, default 5) and prints each of its figures as
// min / median / max over the runs (docs/performance.md: one good run is not a figure on a noisy
// shared machine). Each run is a fresh process (`node <script> [args]`: a .mjs bench, or
// bench/run-ts.mjs with a .ts one), so one run's heap, JIT state or slow mode cannot carry into
// the next. A run's own lines go to stderr as they come, prefixed with its number; stdout gets,
// for every `<name>: <number> <unit>` line the bench printed, in the bench's order:
//   <name>: <median> <unit>
//   <name>.min: <min> <unit>
//   <name>.max: <max> <unit>
// plus `bench.runs: N`. Medians are what docs/performance.md reports. A figure missing from a
// run (a bench that skips a baseline) is summarised over the runs that printed it, and the line
// says how many (`(3 of 5 runs)`). A run that fails stops the whole: a failed run is no figure.
import { spawn } from 'node:child_process';

const [script, ...args] = process.argv.slice(2);
if (!script) {
  console.error('usage: node bench/repeat.mjs <bench.mjs | bench.ts> [args]');
  process.exit(2);
}
// BENCH_QUICK=1 is a smoke run (docs/performance.md: under 30 s with the same lines): one run unless BENCH_RUNS says.
const runs = Number.parseInt(process.env.BENCH_RUNS ?? (process.env.BENCH_QUICK === '1' ? '1' : '5'), 10);
if (!Number.isInteger(runs) || runs < 1) {
  console.error(`BENCH_RUNS must be a whole number of at least 1, not "${process.env.BENCH_RUNS}"`);
  process.exit(2);
}
const command = script.endsWith('.ts') ? ['bench/run-ts.mjs', script, ...args] : [script, ...args];
// The unit is the first word after the number; anything after it (a run's own detail, such as
// GC pause totals) stays in that run's lines on stderr.
const figure = /^([\w.:-]+): (-?\d+(?:\.\d+)?(?:e[+-]?\d+)?) ?(\S*)/;

/** name -> { unit, values[] }, in first-seen order. */
const figures = new Map();

function runOnce(k) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, command, { stdio: ['ignore', 'pipe', 'inherit'] });
    let pending = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk) => {
      pending += chunk;
      let newline;
      while ((newline = pending.indexOf('\n')) >= 0) {
        const text = pending.slice(0, newline);
        pending = pending.slice(newline + 1);
        process.stderr.write(`[run ${k}/${runs}] ${text}\n`);
        const match = figure.exec(text);
        if (!match) continue;
        const [, name, value, unit] = match;
        if (!figures.has(name)) figures.set(name, { unit, values: [] });
        figures.get(name).values.push(Number(value));
      }
    });
    child.on('error', reject);
    child.on('exit', (code, signal) =>
      code === 0 ? resolve() : reject(new Error(`run ${k} ended with ${signal ?? `exit code ${code}`}`)),
    );
  });
}

function median(sorted) {
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

function format(value) {
  if (Number.isInteger(value)) return String(value);
  const digits = Math.abs(value) >= 100 ? 1 : Math.abs(value) >= 1 ? 2 : 3;
  return value.toFixed(digits);
}

try {
  for (let k = 1; k <= runs; k++) await runOnce(k);
} catch (error) {
  console.error(`bench failed: ${error.message}`);
  process.exit(1);
}

console.log(`bench.runs: ${runs} runs`);
for (const [name, { unit, values }] of figures) {
  const sorted = [...values].sort((a, b) => a - b);
  const of = values.length < runs ? ` (${values.length} of ${runs} runs)` : '';
  const suffix = unit ? ` ${unit}` : '';
  console.log(`${name}: ${format(median(sorted))}${suffix}${of}`);
  console.log(`${name}.min: ${format(sorted[0])}${suffix}`);
  console.log(`${name}.max: ${format(sorted[sorted.length - 1])}${suffix}`);
}
