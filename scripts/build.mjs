// Bundles the appliance into dist/main.js with esbuild; npm packages stay external
// (native modules such as better-sqlite3 load from node_modules).
import { build } from 'esbuild';

await build({
  entryPoints: ['src/main.ts'],
  outfile: 'dist/main.js',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  packages: 'external',
  sourcemap: true,
  logLevel: 'warning',
});
