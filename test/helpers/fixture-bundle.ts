import { build } from 'esbuild';
// @ts-expect-error a plain ES module of the scripts folder, without types
import { NODE_BUNDLE } from '../../scripts/node-bundle.mjs';

// A test fixture run as a process of its own, bundled into dist/ as the benches are
// (scripts/node-bundle.mjs). Each fixture is bundled once per test process.

const bundles = new Map<string, Promise<string>>();

/** `test/fixtures/<name>.ts` bundled to `dist/test-<name>.mjs`; answers the bundle's path. */
export function fixtureBundle(name: string): Promise<string> {
  let bundle = bundles.get(name);
  if (!bundle) {
    const outfile = `dist/test-${name}.mjs`;
    bundle = build({
      entryPoints: [`test/fixtures/${name}.ts`],
      outfile,
      ...NODE_BUNDLE,
    }).then(() => outfile);
    bundles.set(name, bundle);
  }
  return bundle;
}
