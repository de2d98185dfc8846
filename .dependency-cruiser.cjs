// The rules that keep the house (docs/architecture.md: Rules that keep the house). Run by
// `npm test` (`depcruise src sync firmware-bridge --config .dependency-cruiser.cjs`) and by
// test/house/dependency-rules.test.ts, which also shows on a fixture that each rule bites.
// Type-only imports count (tsPreCompilationDeps), as they do for madge.

/** What the bus and the store may import besides themselves: leaves and the process's basics. */
const BELOW_THE_CORE = [
  '^src/(events|store|resources|config)/',
  '^src/(clock|logger|errors)\\.ts$',
  // commit() writes a change's outbox entries inside its transaction (events/unit-of-work.ts).
  '^src/feed/(catalogue|outbox)\\.ts$',
  // The store's threads find their entry file (store/checkpointer.ts, store/parallel-read.ts).
  '^src/workers/worker-file\\.ts$',
];

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No import cycles, type-only imports included: a module and what it uses read in one direction.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'resources-are-leaves',
      comment: "The contracts' schemas (zod only): everything may import them, so they import nothing of ours.",
      severity: 'error',
      from: { path: '^src/resources/' },
      to: { path: '^(src|sync|firmware-bridge)/', pathNot: '^src/resources/' },
    },
    {
      name: 'core-below-features',
      comment: 'The bus and the store are what every feature builds on: they import no feature (BELOW_THE_CORE).',
      severity: 'error',
      from: { path: '^src/(events|store)/' },
      to: { path: '^(src|sync|firmware-bridge)/', pathNot: BELOW_THE_CORE },
    },
    {
      name: 'domain-not-transport',
      comment: 'The domain knows no transport: HTTP, MQTT and the WebSocket server call it, never the reverse.',
      severity: 'error',
      from: { path: '^src/(access|venue|journal|feed|events)/' },
      to: { path: '^src/(http|mqtt|realtime)/' },
    },
    {
      name: 'core-not-wings',
      comment: 'The core imports a wing only at the composition root (services, app, main); wings import the core.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/(services|service-map|app|main)\\.ts$' },
      to: { path: '^(sync|firmware-bridge)/' },
    },
  ],
  options: {
    includeOnly: '^(src|sync|firmware-bridge)/',
    exclude: { path: '\\.vue$' },
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.mjs', '.cjs', '.json'] },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
