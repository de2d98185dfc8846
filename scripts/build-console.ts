// Builds the staff console (console/, a plugin made with our toolkit: docs/console.md) into
// dist/console with Vite's programmatic build(), @vitejs/plugin-vue and our Vite plugin, as
// `gatehouse plugin build` does, except for `base: '/'`: the appliance serves the console at the
// root with history routing, so asset URLs must not depend on the page's path. scripts/build.mjs
// bundles this file with esbuild (Node 20 cannot import the TypeScript Vite plugin) and runs it.
//
// The build is skipped when its inputs are unchanged since the last one: a SHA-256 over the
// console's files, the toolkit, the Vite plugin and package-lock.json, kept in
// dist/console/.build-stamp (a dot file: never served). Every test run and `npm start` calls
// scripts/build.mjs, and a Vite build costs seconds on this machine.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { checkoutRoot } from '../src/plugins/checkout.js';
import { gatehouse } from '../src/plugins/vite/index.js';

const INPUTS = [
  'console',
  'src/plugins/toolkit',
  'src/plugins/vite/index.ts',
  'scripts/build-console.ts',
  'package-lock.json',
];
const STAMP = '.build-stamp';

function files(path: string): string[] {
  if (!existsSync(path)) return [];
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path)
    .filter((name) => name !== 'node_modules' && name !== 'dist')
    .sort()
    .flatMap((name) => files(join(path, name)));
}

function inputsHash(root: string): string {
  const hash = createHash('sha256');
  for (const file of INPUTS.flatMap((input) => files(join(root, input)))) {
    hash.update(relative(root, file)).update('\0').update(readFileSync(file)).update('\0');
  }
  return hash.digest('hex');
}

/** Builds console/ into dist/console unless it is up to date; answers whether it built. */
export async function buildConsole(options: { force?: boolean } = {}): Promise<boolean> {
  const root = checkoutRoot();
  const outDir = join(root, 'dist/console');
  const stamp = inputsHash(root);
  const stampFile = join(outDir, STAMP);
  if (
    !options.force &&
    existsSync(join(outDir, 'index.html')) &&
    existsSync(stampFile) &&
    readFileSync(stampFile, 'utf8') === stamp
  )
    return false;
  const [{ build }, { default: vue }] = await Promise.all([import('vite'), import('@vitejs/plugin-vue')]);
  // Built aside and swapped in with two renames: an appliance serving dist/console meanwhile (another
  // test run, npm start) never sees a half-written folder.
  const fresh = `${outDir}.building-${process.pid}`;
  const old = `${outDir}.old-${process.pid}`;
  try {
    await build({
      root: join(root, 'console'),
      configFile: false,
      logLevel: 'warn',
      base: '/',
      // Templates' src attributes stay as written (src/plugins/vite/dev.ts): images are the manifest's assets.
      plugins: [vue({ template: { transformAssetUrls: false } }), gatehouse()],
      build: { outDir: fresh, emptyOutDir: true, reportCompressedSize: false, target: 'es2022' },
    });
    writeFileSync(join(fresh, STAMP), stamp);
    if (existsSync(outDir)) renameSync(outDir, old);
    renameSync(fresh, outDir);
  } finally {
    rmSync(fresh, { recursive: true, force: true });
    rmSync(old, { recursive: true, force: true });
  }
  return true;
}
