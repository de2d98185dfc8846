// bench:load — cold start of the venue index with 1M credentials (500k attendees, two each),
// in a fresh process with the appliance's V8 flags, so RSS means something: the time from
// VenueIndex.load() to the first scan decided (a credential read last, granted), and the RSS
// after it, next to the RSS of the same process before loading (the baseline of the same run).
// Then the whole appliance restarting on the same data, in another fresh process, until its
// start() resolves and a first scan is decided and journaled (engine.start_1m_credentials_s).
// Beside it, the floor, in another fresh process: reading the same rows the load's way (SQLite's
// JSON in the worker thread, parsed here) and nothing built of them. The data is written straight
// into SQLite first (not measured). BENCH_QUICK=1: 250k.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { AccessEngine } from '../src/access/engine.js';
import { Gatehouse } from '../src/app.js';
import { benchConfig } from './bench-config.js';
import { Occupancy } from '../src/access/occupancy.js';
import { VenueIndex } from '../src/access/venue-index.js';
import { Store } from '../src/store/database.js';
import { readInParallel } from '../src/store/parallel-read.js';
import { seedVenue } from './fixtures.js';
import { nodeFlags } from './process-stats.js';

const log = pino({ level: 'warn' });
const line = (name: string, value: string | number, unit: string) => console.log(`${name}: ${value} ${unit}`);
const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(0);
const seconds = (since: bigint) => Number(process.hrtime.bigint() - since) / 1e9;

if (process.argv[2] === '--child') {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const before = process.memoryUsage().rss;
  const store = new Store({ dataDir: process.argv[3]!, synchronous: 'NORMAL' }, log);
  store.start();
  const { id: gate } = store.db.prepare("SELECT id FROM access_points WHERE slug = 'arena-gate'").get() as {
    id: number;
  };
  const { value } = store.db.prepare('SELECT value FROM credentials ORDER BY id DESC LIMIT 1').get() as {
    value: string;
  };
  const started = process.hrtime.bigint();
  const index = new VenueIndex(store.db);
  index.load();
  const decision = new AccessEngine(index, new Occupancy()).decide({
    projectId: 1,
    accessPointId: gate,
    credentialValue: value,
    at: Date.now(),
  });
  const took = seconds(started);
  if (!decision.granted) throw new Error(`the last credential was denied: ${decision.reason}`);
  gc?.();
  const after = process.memoryUsage().rss;
  console.log(JSON.stringify({ seconds: took, before, after, credentials: index.credentialCount }));
  store.stop();
} else if (process.argv[2] === '--start') {
  // The whole appliance restarting on these rows: store, journal, index, occupancy, MQTT, HTTP,
  // until start() resolves and one scan is decided and journaled.
  const dataDir = process.argv[3]!;
  const peek = new Store({ dataDir, synchronous: 'NORMAL' }, log);
  peek.start();
  const { id: gate } = peek.db.prepare("SELECT id FROM access_points WHERE slug = 'arena-gate'").get() as {
    id: number;
  };
  const { value } = peek.db.prepare('SELECT value FROM credentials ORDER BY id DESC LIMIT 1').get() as {
    value: string;
  };
  peek.stop();
  const started = process.hrtime.bigint();
  const app = new Gatehouse(benchConfig(dataDir), { log });
  await app.start();
  const outcome = await app.services.access.scans.scan({
    projectId: 1,
    accessPointId: gate,
    credentialValue: value,
    source: 'api',
  });
  const took = seconds(started);
  if (!outcome.granted) throw new Error(`the last credential was denied: ${outcome.reason}`);
  await app.stop();
  console.log(JSON.stringify({ seconds: took }));
} else if (process.argv[2] === '--floor') {
  const store = new Store({ dataDir: process.argv[3]!, synchronous: 'NORMAL' }, log);
  store.start();
  const started = process.hrtime.bigint();
  const read = readInParallel(store.db.name, [...VenueIndex.bigTables]);
  let rows = 0;
  for (const _ of read.rows(0)) rows += 1;
  for (const _ of read.rows(1)) rows += 1;
  console.log(JSON.stringify({ seconds: seconds(started), rows }));
  store.stop();
} else {
  const quick = process.env.BENCH_QUICK === '1';
  const credentials = quick ? 250_000 : 1_000_000;
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-load-'));
  // A first start makes the administrator and the default project; the venue goes into its store.
  const app = new Gatehouse(benchConfig(dataDir), { log });
  await app.start();
  await app.stop();
  app.store.start();
  seedVenue(app.store.db, 1, credentials / 2, 2, { keepValues: false });
  app.store.stop();
  const run = (mode: string) => {
    const child = spawnSync(
      process.execPath,
      [
        ...nodeFlags(),
        ...(process.env.BENCH_CHILD_FLAGS?.split(' ') ?? []),
        '--expose-gc',
        process.argv[1]!,
        mode,
        dataDir,
      ],
      {
        encoding: 'utf8',
      },
    );
    if (child.status !== 0) throw new Error(child.stderr);
    return JSON.parse(child.stdout.trim().split('\n').pop()!) as Record<string, number>;
  };
  const floor = run('--floor');
  const result = run('--child') as { seconds: number; before: number; after: number; credentials: number };
  const start = run('--start');
  if (result.credentials !== credentials) throw new Error(`loaded ${result.credentials} of ${credentials}`);
  if (floor.rows !== credentials * 1.5) throw new Error(`the floor read ${floor.rows} rows of ${credentials * 1.5}`);
  const tag = '1m'; // same names in quick mode (docs/performance.md); engine.load_credentials says how many
  line('engine.load_credentials', credentials, 'credentials');
  line(`engine.load_${tag}_credentials_s`, result.seconds.toFixed(2), 's');
  line('engine.load_read_rows_s', floor.seconds!.toFixed(2), 's');
  line('engine.load_to_read_rows_ratio', (result.seconds / floor.seconds!).toFixed(2), 'x');
  line('engine.start_1m_credentials_s', start.seconds!.toFixed(2), 's');
  line(`engine.load_${tag}_credentials_rss_mb`, mb(result.after), 'MB');
  line('engine.load_rss_before_mb', mb(result.before), 'MB');
  line('engine.load_credentials_per_s', Math.round(credentials / result.seconds), '/s');
  rmSync(dataDir, { recursive: true, force: true });
}
