// Bundles the appliance with esbuild: dist/main.js, and each worker thread's script as an entry
// of its own, dist/workers/<name>.js (src/workers/worker-file.ts finds them there). npm packages
// stay external (native modules such as better-sqlite3 load from node_modules).
// Then the staff console (console/, docs/console.md) into dist/console: its Vite build is
// TypeScript (our Vite plugin), so it is bundled the same way into dist/build-console.mjs and
// run here; it skips itself when its inputs have not changed since the last build.
import { build } from 'esbuild';
import { pathToFileURL } from 'node:url';
import { NODE_BUNDLE } from './node-bundle.mjs';

export const entryPoints = {
  main: 'src/main.ts',
  'workers/ingest': 'src/workers/ingest.ts',
  'workers/checkpoint': 'src/workers/checkpoint.ts',
  'workers/parallel-read': 'src/workers/parallel-read.ts',
};

const common = NODE_BUNDLE;

await build({ ...common, entryPoints, outdir: 'dist', sourcemap: true });

await build({ ...common, entryPoints: ['scripts/build-console.ts'], outfile: 'dist/build-console.mjs' });
const { buildConsole } = await import(pathToFileURL('dist/build-console.mjs').href);
await buildConsole({ force: process.argv.includes('--force-console') });
