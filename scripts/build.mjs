// Bundles the appliance with esbuild: dist/main.js, and each worker thread's script as an entry
// of its own, dist/workers/<name>.js (src/workers/worker-file.ts finds them there). npm packages
// stay external (native modules such as better-sqlite3 load from node_modules).
import { build } from 'esbuild';

export const entryPoints = {
  main: 'src/main.ts',
  'workers/ingest': 'src/workers/ingest.ts',
  'workers/checkpoint': 'src/workers/checkpoint.ts',
  'workers/parallel-read': 'src/workers/parallel-read.ts',
};

await build({
  entryPoints,
  outdir: 'dist',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  packages: 'external',
  sourcemap: true,
  logLevel: 'warning',
});
