// Runs one bench head to head against an earlier build: `node bench/head-to-head.mjs <rev> <npm script> [rounds]`
// (e.g. `node bench/head-to-head.mjs HEAD~5 bench:mqtt 3`). The earlier revision is checked out in a temporary
// git worktree (this checkout's node_modules linked in), and each round runs the script once there and once here,
// alternating which goes first, so both see the same noisy machine. Every figure either side printed
// (`<name>: <number> <unit>`, as bench/repeat.mjs prints them) is summarised as
//   <name>: before <median> / after <median> <unit> (after/before <ratio>)
// with min and max of each side on the line below. The worktree is removed at the end.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const [rev, script, roundsText = '3'] = process.argv.slice(2);
const rounds = Number.parseInt(roundsText, 10);
if (!rev || !script || !Number.isInteger(rounds) || rounds < 1) {
  console.error('usage: node bench/head-to-head.mjs <git revision> <npm script> [rounds, default 3]');
  process.exit(2);
}
const here = resolve('.');
const before = join(mkdtempSync(join(tmpdir(), 'gatehouse-before-')), 'checkout');
const git = (...args) => {
  const run = spawnSync('git', args, { cwd: here, encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`git ${args.join(' ')}: ${run.stderr.trim()}`);
  return run.stdout.trim();
};
git('worktree', 'add', '--detach', before, rev);
symlinkSync(join(here, 'node_modules'), join(before, 'node_modules'));
if (existsSync(join(here, 'console', 'node_modules')))
  symlinkSync(join(here, 'console', 'node_modules'), join(before, 'console', 'node_modules'));

const figure = /^([\w.:-]+): (-?\d+(?:\.\d+)?(?:e[+-]?\d+)?) ?(\S*)/;
/** name -> { unit, before: number[], after: number[] } in first-seen order. */
const figures = new Map();
function runOnce(side, cwd) {
  console.error(`[${side}] npm run ${script} (${cwd})`);
  const run = spawnSync('npm', ['run', '--silent', script], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, BENCH_RUNS: '1' },
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 64 * 1024 * 1024,
  });
  if (run.status !== 0) throw new Error(`[${side}] npm run ${script} exited ${run.status}`);
  for (const line of run.stdout.split('\n')) {
    const m = figure.exec(line.trim());
    if (!m || /\.(min|max)$/.test(m[1]) || m[1] === 'bench.runs') continue;
    const entry = figures.get(m[1]) ?? { unit: m[3], before: [], after: [] };
    entry[side].push(Number(m[2]));
    figures.set(m[1], entry);
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const round = (x) => Number(x.toPrecision(4));
try {
  console.log(
    `head-to-head: ${script}, ${rounds} rounds, before ${git('rev-parse', '--short', rev)}, after ${git('rev-parse', '--short', 'HEAD')}${git('status', '--porcelain') ? ' + uncommitted changes' : ''}`,
  );
  for (let i = 0; i < rounds; i++) {
    const order = i % 2 === 0 ? ['before', 'after'] : ['after', 'before'];
    for (const side of order) runOnce(side, side === 'before' ? before : here);
  }
  for (const [name, { unit, before: b, after: a }] of figures) {
    if (!b.length || !a.length) {
      console.log(`${name}: printed by one side only (before ${b.length}, after ${a.length} runs)`);
      continue;
    }
    const mb = median(b);
    const ma = median(a);
    const ratio = mb === 0 ? '' : ` (after/before ${round(ma / mb)})`;
    console.log(`${name}: before ${round(mb)} / after ${round(ma)} ${unit}${ratio}`);
    console.log(
      `  ${name}.range: before ${round(Math.min(...b))}–${round(Math.max(...b))} / after ${round(Math.min(...a))}–${round(Math.max(...a))}`,
    );
  }
} finally {
  git('worktree', 'remove', '--force', before);
  rmSync(join(before, '..'), { recursive: true, force: true });
}
