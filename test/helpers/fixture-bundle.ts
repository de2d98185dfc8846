import { build } from 'esbuild';

// A test fixture run as a process of its own, bundled into dist/ as the benches are (its TypeScript
// compiled, its npm packages left to resolve from node_modules). Each fixture is bundled once per
// test process.

const bundles = new Map<string, Promise<string>>();

/** `test/fixtures/<name>.ts` bundled to `dist/test-<name>.mjs`; answers the bundle's path. */
export function fixtureBundle(name: string): Promise<string> {
  let bundle = bundles.get(name);
  if (!bundle) {
    const outfile = `dist/test-${name}.mjs`;
    bundle = build({
      entryPoints: [`test/fixtures/${name}.ts`],
      outfile,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      packages: 'external',
      logLevel: 'warning',
    }).then(() => outfile);
    bundles.set(name, bundle);
  }
  return bundle;
}
