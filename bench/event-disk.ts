// bench:event-disk — the disk one access event takes in the store, with its indexes
// (docs/storage.md, "Retention of access events"): 200,000 festival-like events
// inserted as the journal's ingest inserts them (INSERT_EVENT_SQL, 2,000 per transaction) into
// a fresh store; the used pages (page_count - freelist_count) x page_size before and after, so
// the baseline is the empty store of the same run. Then retention: half of them pruned by
// EventRetention (rows/s, its longest write transaction), and as many new events inserted
// again, to show the freed pages are reused (the file stops growing; it does not shrink).
// BENCH_QUICK=1: 50,000 events. CHUNK=n: prune n rows per transaction instead of the default.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { eventId } from '../src/access/event-id.js';
import { EventRetention } from '../src/journal/event-retention.js';
import { INSERT_EVENT_SQL } from '../src/journal/journal-format.js';
import { Store } from '../src/store/database.js';

const EVENTS = process.env.BENCH_QUICK === '1' ? 50_000 : 200_000;
const ATTENDEES = 50_000;
const CHUNK = Number(process.env.CHUNK ?? 0);
const READERS = 120;
const DAY = 86_400_000;
const line = (name: string, value: string | number, unit: string) => console.log(`${name}: ${value} ${unit}`);

const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-event-disk-'));
const log = pino({ level: 'warn' });
// As the appliance opens it: no checkpoint inside a commit (the checkpointer thread does them).
const store = new Store({ dataDir, synchronous: 'NORMAL', autoCheckpoint: false }, log);
store.start();
const db = store.db;
db.prepare("INSERT INTO teams (name, slug, created_at, updated_at) VALUES ('Bench', 'bench', 'x', 'x')").run();
db.prepare(
  "INSERT INTO projects (team_id, name, slug, timezone, created_at, updated_at) VALUES (1, 'Festival', 'festival', 'Europe/Berlin', 'x', 'x')",
).run();

/** Bytes of the pages in use, the WAL folded back first. */
const used = () => {
  db.pragma('wal_checkpoint(TRUNCATE)');
  const pages =
    (db.pragma('page_count', { simple: true }) as number) - (db.pragma('freelist_count', { simple: true }) as number);
  return pages * (db.pragma('page_size', { simple: true }) as number);
};
const fileBytes = () => {
  db.pragma('wal_checkpoint(TRUNCATE)');
  return statSync(store.file).size;
};

// A festival's scans: 16-character ticket codes, readers' own request ids (MQTT: every scan has
// one), 92 % granted (in and out, one in five a move from another zone), the denials mostly
// unknown codes. Scan times spread over four days, ids v7 at the scan time (as live scans).
const start = Date.parse('2027-07-01T10:00:00.000Z');
const code = (n: number) => `GH${(n * 2654435761).toString(36).toUpperCase().padStart(14, '0').slice(-14)}`;
const REASONS = ['not_authorized', 'expired', 'capacity_exceeded', 'time_restricted', 'blocklisted'] as const;
let serial = 0;
const insert = db.prepare(INSERT_EVENT_SQL);
const insertEvents = (count: number, from: number, span: number) => {
  for (let done = 0; done < count; done += 2000) {
    db.transaction(() => {
      for (let i = done; i < Math.min(count, done + 2000); i++) {
        const n = ++serial;
        const ms = from + Math.floor((i / count) * span);
        const at = new Date(ms).toISOString();
        const reader = 1 + (n % READERS);
        const point = 1 + (reader % 40);
        const zone = 1 + (point % 6);
        const attendee = 1 + ((n * 7919) % ATTENDEES);
        const roll = n % 100;
        const granted = roll >= 8;
        const known = granted || roll >= 3;
        const movement = granted ? (n % 2 ? 'in' : 'out') : null;
        const fromZone = granted && movement === 'in' && n % 5 === 0 ? 1 + ((zone + 1) % 6) : null;
        insert.run(
          eventId(ms),
          1,
          point,
          zone,
          reader,
          known ? attendee : null,
          known ? code(attendee) : code(ATTENDEES + n),
          known ? attendee : null,
          granted ? 1 : 0,
          granted ? null : known ? REASONS[n % REASONS.length] : 'invalid_credential',
          movement,
          granted ? 1 : 0,
          fromZone,
          at,
          at,
          'mqtt',
          `r${reader}:${reader.toString(36)}-${n.toString(36)}`,
        );
      }
    })();
  }
};

const empty = used();
const t0 = performance.now();
insertEvents(EVENTS, start, 4 * DAY);
const insertMs = performance.now() - t0;
const full = used();
line('event_disk.events', EVENTS, 'events');
line('event_disk.baseline_empty_store_bytes', empty, 'bytes');
line('event_disk.bytes_per_event', ((full - empty) / EVENTS).toFixed(1), 'bytes');
line('event_disk.insert_events_per_s', Math.round(EVENTS / (insertMs / 1000)), 'events/s');
try {
  // What each part takes (the dbstat table, when SQLite was built with it).
  const parts = db
    .prepare(
      "SELECT name, SUM(pgsize) AS bytes FROM dbstat WHERE name = 'access_events' OR name LIKE 'access_events_%' OR name LIKE 'sqlite_autoindex_access_events%' GROUP BY name ORDER BY bytes DESC",
    )
    .all() as { name: string; bytes: number }[];
  for (const p of parts) line(`event_disk.part.${p.name}_bytes_per_event`, (p.bytes / EVENTS).toFixed(1), 'bytes');
} catch {
  // no dbstat in this build: the total above is the figure
}

// Retention: the first two days go (older than 30 days by now), the newest always stays.
db.prepare('UPDATE zone_presence_mark SET last_event_id = (SELECT MAX(id) FROM access_events) WHERE id = 1').run();
const sizeBefore = fileBytes();
const retention = new EventRetention(
  db,
  { now: () => start + 32 * DAY },
  { role: 'standalone', sync: { edgeRetentionDays: 30, retentionDays: 30 } },
  log,
  null,
  CHUNK ? { chunkRows: CHUNK } : {},
);
const t1 = performance.now();
const pruned = await retention.prune();
const pruneMs = performance.now() - t1;
if (pruned !== EVENTS / 2) throw new Error(`pruned ${pruned} events, expected ${EVENTS / 2}`);
line('event_disk.pruned_events', pruned, 'events');
line('event_disk.prune_events_per_s', Math.round(pruned / (pruneMs / 1000)), 'events/s');
line(
  'event_disk.prune_mean_transaction_ms',
  (retention.stats.lastWriteMs / retention.stats.lastChunks).toFixed(2),
  'ms',
);
line('event_disk.prune_longest_transaction_ms', retention.stats.lastLongestChunkMs.toFixed(1), 'ms');
line('event_disk.file_after_prune_bytes', fileBytes() - sizeBefore, 'bytes');
insertEvents(pruned, start + 4 * DAY, 2 * DAY);
line('event_disk.file_growth_refilled_bytes', fileBytes() - sizeBefore, 'bytes');
line('event_disk.baseline_file_growth_first_insert_bytes', sizeBefore - empty, 'bytes');

store.stop();
rmSync(dataDir, { recursive: true, force: true });
