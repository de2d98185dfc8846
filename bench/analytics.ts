// bench:analytics — the analytics metrics over 1M access events (docs/engine.md): zone
// occupancy by hour and by 15 minutes over a week, and the access summary of that week, each
// timed through the same functions the route calls. Baseline in the same run: COUNT(*) over
// the range, the least any query over those events can cost. BENCH_QUICK=1: 250k events.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { eventId } from '../src/access/event-id.js';
import { accessSummary, zoneOccupancy } from '../src/access/analytics.js';
import { Store } from '../src/store/database.js';

const quick = process.env.BENCH_QUICK === '1';
const EVENTS = quick ? 250_000 : 1_000_000;
const line = (name: string, value: string | number, unit: string) => console.log(`${name}: ${value} ${unit}`);
const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-analytics-'));
const store = new Store({ dataDir, synchronous: 'NORMAL' }, pino({ level: 'warn' }));
store.start();
const db = store.db;
db.prepare("INSERT INTO teams (name, slug, created_at, updated_at) VALUES ('Bench', 'bench', 'x', 'x')").run();
db.prepare(
  "INSERT INTO projects (team_id, name, slug, timezone, created_at, updated_at) VALUES (1, 'Bench', 'bench', 'Europe/Berlin', 'x', 'x')",
).run();
const start = Date.parse('2026-11-16T00:00:00Z');
const week = 7 * 24 * 3600_000;
const insert = db.prepare(
  `INSERT INTO access_events (uuid, project_id, access_point_id, access_zone_id, credential_id, credential_value, attendee_id, granted, reason, movement, counted, from_zone_id, scanned_at, decided_at, source)
   VALUES (?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'mqtt')`,
);
const reasons = [
  'invalid_credential',
  'not_authorized',
  'expired',
  'capacity_exceeded',
  'time_restricted',
  'blocklisted',
];
db.transaction(() => {
  for (let i = 0; i < EVENTS; i++) {
    const at = new Date(start + Math.floor((i / EVENTS) * week)).toISOString();
    const zone = 1 + (i % 4);
    const granted = i % 10 !== 0;
    const attendee = (i * 7919) % 50_000;
    insert.run(
      eventId(),
      zone * 10 + (i % 3),
      zone,
      attendee,
      `C-${attendee}`,
      attendee,
      granted ? 1 : 0,
      granted ? null : reasons[i % 6],
      granted ? (i % 2 ? 'in' : 'out') : null,
      granted ? 1 : 0,
      granted && i % 7 === 0 ? 1 + ((i + 1) % 4) : null,
      at,
      at,
    );
  }
})();

const time = <T>(fn: () => T): [T, number] => {
  const t0 = process.hrtime.bigint();
  const result = fn();
  return [result, Number(process.hrtime.bigint() - t0) / 1e6];
};
const range = { start, end: start + week };
const [, countMs] = time(() =>
  db
    .prepare('SELECT COUNT(*) FROM access_events WHERE project_id = 1 AND scanned_at >= ? AND scanned_at < ?')
    .get(new Date(range.start).toISOString(), new Date(range.end).toISOString()),
);
const [hourly, hourMs] = time(() =>
  zoneOccupancy(db, { zoneId: 1, interval: 'hour', ...range, timeZone: 'Europe/Berlin' }),
);
const [, quarterMs] = time(() =>
  zoneOccupancy(db, { zoneId: 1, interval: '15min', ...range, timeZone: 'Europe/Berlin' }),
);
const [summary, summaryMs] = time(() => accessSummary(db, { projectId: 1, ...range }));
if (!hourly || summary.granted + summary.denied !== EVENTS) throw new Error('analytics did not see every event');
line('analytics.events', EVENTS, 'events');
line('analytics.zone_occupancy_hour_week_ms', hourMs.toFixed(0), 'ms');
line('analytics.zone_occupancy_15min_week_ms', quarterMs.toFixed(0), 'ms');
line('analytics.access_summary_week_ms', summaryMs.toFixed(0), 'ms');
line('analytics.baseline_count_week_ms', countMs.toFixed(0), 'ms');
store.stop();
rmSync(dataDir, { recursive: true, force: true });
