// Where this gatehouse checkout is, from any module in it: src/plugins/... when run from source,
// dist/main.js once bundled. Plugins resolve the toolkit from here (their `gatehouse` dependency
// is this folder, and the Vite plugin aliases @gatehouse/plugin-toolkit into it).
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let found: string | undefined;

/** This checkout: the nearest folder up from this module whose package.json is gatehouse's (looked up once). */
export function checkoutRoot(): string {
  found ??= findCheckout(import.meta.url);
  return found;
}

function findCheckout(from: string): string {
  let dir = dirname(fileURLToPath(from));
  for (;;) {
    const file = join(dir, 'package.json');
    if (existsSync(file) && (JSON.parse(readFileSync(file, 'utf8')) as { name?: string }).name === 'gatehouse')
      return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error(`gatehouse: no gatehouse checkout above ${fileURLToPath(from)}`);
    dir = up;
  }
}

export const toolkitEntry = (): string => join(checkoutRoot(), 'src/plugins/toolkit/index.ts');
