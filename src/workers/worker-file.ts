import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// Where a worker thread's script is. The workers are TypeScript modules in src/workers/, built
// by scripts/build.mjs (esbuild) as extra entry points next to the appliance: dist/main.js and
// dist/workers/<name>.js. From the bundle (dist/main.js, or a bench bundled into dist/) this
// module's URL is the bundle's, so the workers are its siblings; from the TypeScript sources
// (vitest, which runs scripts/build.mjs in its global setup first) they are in the project's
// dist/. Node 20 cannot run a .ts file in a worker, hence the built file in both cases.

export type WorkerName = 'ingest' | 'checkpoint' | 'parallel-read';

export function workerFile(name: WorkerName): URL {
  const here = import.meta.url;
  const url = here.endsWith('.ts')
    ? new URL(`../../dist/workers/${name}.js`, here)
    : new URL(`./workers/${name}.js`, here);
  if (!existsSync(fileURLToPath(url)))
    throw new Error(`worker script ${fileURLToPath(url)} is missing: run npm run build`);
  return url;
}
