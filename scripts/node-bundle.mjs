// esbuild's options for a Node bundle of this repository's TypeScript: one ES module for Node 20,
// npm packages left to load from node_modules (native modules such as better-sqlite3 among them).
// The appliance's build (build.mjs), the benches (bench/run-ts.mjs) and test fixtures run as
// processes of their own (test/helpers/fixture-bundle.ts) all bundle with these.
export const NODE_BUNDLE = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  packages: 'external',
  logLevel: 'warning',
};
