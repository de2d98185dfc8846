// Runs a TypeScript bench against the sources: bundles it with esbuild into dist/ (so npm
// packages resolve from node_modules as for the appliance), then runs it with the same args.
// The appliance's build first: its worker threads' scripts (dist/workers/) are found next to
// the bench's bundle.
import { build } from 'esbuild';
import '../scripts/build.mjs';
import { NODE_BUNDLE } from '../scripts/node-bundle.mjs';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';

const [entry, ...args] = process.argv.slice(2);
const outfile = `dist/bench-${basename(entry, '.ts')}.mjs`;
await build({
  entryPoints: [entry],
  outfile,
  ...NODE_BUNDLE,
});
// The appliance's own V8 flags (scripts/node-flags.json), as benches run it in-process.
const nodeFlags = JSON.parse(readFileSync('scripts/node-flags.json', 'utf8'));
const result = spawnSync(process.execPath, ['--expose-gc', ...nodeFlags, outfile, ...args], { stdio: 'inherit' });
process.exit(result.status ?? 1);
