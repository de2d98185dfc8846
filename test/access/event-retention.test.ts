import BetterSqlite3 from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AccessEventRow } from '../../src/journal/access-event-row.js';
import {
  acknowledgedAccessEventId,
  EventRetention,
  RETRY_WINDOW_MS,
  type RetentionConfig,
} from '../../src/journal/event-retention.js';
import { INSERT_EVENT_SQL, journalLine } from '../../src/journal/journal-format.js';
import { Store } from '../../src/store/database.js';
import { eventRow } from '../helpers/access-event-rows.js';
import { client, ManualClock, startAppliance, type TestAppliance } from '../helpers/appliance.js';

const log = pino({ level: 'silent' });
const DAY = 86_400_000;
const NOW = Date.parse('2027-03-01T12:00:00.000Z');
const ago = (days: number) => new Date(NOW - days * DAY).toISOString();

const edge = (edgeRetentionDays: number | null = 30): RetentionConfig => ({
  role: 'edge',
  sync: { edgeRetentionDays, retentionDays: null },
});
const standalone = (retentionDays: number | null): RetentionConfig => ({
  role: 'standalone',
  sync: { edgeRetentionDays: 30, retentionDays },
});

describe('access-event retention over a real store', () => {
  let dataDir: string;
  let store: Store;
  let serial = 0;
  const clock = new ManualClock(NOW);

  /** Inserts events as the journal's ingest does, each scanned and decided `days` ago; answers their ids. */
  const insert = (days: number, count: number, extra: Partial<AccessEventRow> = {}): number[] => {
    const statement = store.db.prepare(INSERT_EVENT_SQL);
    const ids: number[] = [];
    for (let i = 0; i < count; i++) {
      const r = eventRow(++serial, { scannedAt: ago(days), decidedAt: ago(days), ...extra });
      const { lastInsertRowid } = statement.run(...(JSON.parse(journalLine(r)) as unknown[])); // the journal line's values, as the ingest inserts them
      ids.push(Number(lastInsertRowid));
    }
    return ids;
  };
  const ids = () => store.db.prepare('SELECT id FROM access_events ORDER BY id').pluck().all() as number[];
  const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
  const mark = (id: number) => store.db.prepare('UPDATE zone_presence_mark SET last_event_id = ? WHERE id = 1').run(id);
  const cursor = (consumer: string, id: number) =>
    store.db
      .prepare(
        'INSERT INTO feed_cursors (consumer, access_event_id, domain_event_seq) VALUES (?, ?, 0) ON CONFLICT (consumer) DO UPDATE SET access_event_id = excluded.access_event_id',
      )
      .run(consumer, id);
  const retention = (config: RetentionConfig, registry: Registry | null = null, chunkRows?: number) =>
    new EventRetention(store.db, clock, config, log, registry, chunkRows === undefined ? {} : { chunkRows });

  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-retention-'));
    store = new Store({ dataDir, synchronous: 'NORMAL', autoCheckpoint: false }, log);
    store.start();
    store.db.prepare("INSERT INTO teams (name, slug, created_at, updated_at) VALUES ('t', 't', 'x', 'x')").run();
    for (const slug of ['p', 'q'])
      store.db
        .prepare(
          "INSERT INTO projects (team_id, name, slug, timezone, created_at, updated_at) VALUES (1, ?, ?, 'UTC', 'x', 'x')",
        )
        .run(slug, slug);
  });
  afterEach(() => {
    store.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('reads the acknowledged access-event id from the upload cursor, 0 without one', () => {
    expect(acknowledgedAccessEventId(store.db)).toBe(0);
    cursor('webhook:1', 9);
    expect(acknowledgedAccessEventId(store.db)).toBe(0);
    cursor('sync:upload', 7);
    expect(acknowledgedAccessEventId(store.db)).toBe(7);
  });

  it('on an edge, prunes the old events the cloud acknowledged and keeps the unacknowledged and the recent ones', async () => {
    insert(40, 10); // 1-10
    insert(2, 5); // 11-15
    mark(15);
    cursor('sync:upload', 6);
    const registry = new Registry();
    const r = retention(edge(30), registry);
    expect(await r.prune()).toBe(6);
    expect(ids()).toEqual(range(7, 15));
    // The cloud acknowledges everything: the old ones go, the recent ones stay.
    cursor('sync:upload', 15);
    expect(await r.prune()).toBe(4);
    expect(ids()).toEqual(range(11, 15));
    const text = await registry.metrics();
    expect(text).toMatch(/^gatehouse_access_events_pruned_total 10$/m);
    expect(text).toMatch(new RegExp(`^gatehouse_access_events_prune_last_run_timestamp_seconds ${NOW / 1000}$`, 'm'));
  });

  it('on an edge, prunes nothing the cloud has not acknowledged (no upload cursor), nor anything with edgeRetentionDays null', async () => {
    insert(400, 20);
    mark(20);
    expect(await retention(edge(30)).prune()).toBe(0);
    cursor('sync:upload', 20);
    expect(await retention(edge(null)).prune()).toBe(0);
    expect(ids()).toEqual(range(1, 20));
    expect(await retention(edge(30)).prune()).toBe(19); // all but the newest (below)
  });

  it('keeps the events after the presence mark, so occupancy is the snapshot plus them', async () => {
    insert(40, 10);
    mark(4);
    cursor('sync:upload', 10);
    expect(await retention(edge(30)).prune()).toBe(4);
    expect(ids()).toEqual(range(5, 10));
  });

  it('always keeps the newest event: its rowid would be handed out again, behind every cursor and the mark', async () => {
    insert(40, 3);
    mark(3);
    cursor('webhook:1', 3);
    expect(await retention(standalone(30)).prune()).toBe(2);
    expect(ids()).toEqual([3]);
    insert(0, 1);
    expect(ids()).toEqual([3, 4]);
  });

  it('on a standalone box keeps everything with retentionDays null, and prunes what is older than retentionDays when set', async () => {
    insert(100, 5); // 1-5
    insert(20, 5); // 6-10
    insert(1, 5, { projectId: 2 }); // 11-15
    mark(15);
    expect(await retention(standalone(null)).prune()).toBe(0);
    expect(ids()).toHaveLength(15);
    expect(await retention(standalone(30)).prune()).toBe(5);
    expect(ids()).toEqual(range(6, 15));
    expect(await retention(standalone(10)).prune()).toBe(5);
    expect(ids()).toEqual(range(11, 15));
  });

  it('keeps what a feed consumer (an outgoing webhook) has not read yet', async () => {
    insert(60, 10);
    mark(10);
    cursor('webhook:1', 10);
    cursor('webhook:2', 3);
    expect(await retention(standalone(30)).prune()).toBe(3);
    expect(ids()).toEqual(range(4, 10));
  });

  it('never prunes an event inside the request-id retry window, whatever the days say, by scan or by decision time', async () => {
    insert(RETRY_WINDOW_MS / DAY - 0.5, 3); // 1-3: older than 1 day, inside the window
    insert(RETRY_WINDOW_MS / DAY + 0.5, 2, { decidedAt: ago(1) }); // 4-5: scanned long ago, decided yesterday (a replayed backlog)
    insert(RETRY_WINDOW_MS / DAY + 0.5, 2); // 6-7
    insert(0, 1); // 8
    mark(8);
    expect(await retention(standalone(1)).prune()).toBe(2);
    expect(ids()).toEqual([1, 2, 3, 4, 5, 8]);
  });

  it('walks many events in small chunks, both projects, resuming exactly across equal scan times', async () => {
    insert(50, 2500); // one scan time for all: ties across chunks
    insert(50, 500, { projectId: 2 });
    insert(45, 100, { projectId: 2 });
    mark(3100);
    cursor('webhook:1', 2000); // some of each chunk may not go
    const r = retention(standalone(30), null, 64);
    expect(await r.prune()).toBe(2000);
    cursor('webhook:1', 3100);
    expect(await r.prune()).toBe(1099);
    expect(ids()).toEqual([3100]);
  });

  it('stops promptly on stop(), leaving the rest for the next round', async () => {
    insert(50, 5000);
    mark(5000);
    const r = retention(standalone(30), null, 100);
    const round = r.prune();
    await new Promise<void>((resolve) => setImmediate(resolve));
    await r.stop();
    const pruned = await round;
    expect(pruned).toBeGreaterThan(0);
    expect(pruned).toBeLessThan(1000);
    expect(ids()).toHaveLength(5000 - pruned);
  });

  it('treats a store locked by another connection as "next round", pruning nothing and throwing nothing', async () => {
    insert(50, 10);
    mark(10);
    const other = new BetterSqlite3(store.file);
    other.prepare('BEGIN IMMEDIATE').run();
    try {
      const r = new EventRetention(store.db, clock, standalone(30), log, null, { lockWaitMs: 20 });
      expect(await r.prune()).toBe(0);
      expect(store.db.pragma('busy_timeout', { simple: true })).toBe(5000); // the store's own wait is back
    } finally {
      other.prepare('ROLLBACK').run();
      other.close();
    }
    expect(ids()).toHaveLength(10);
    expect(await retention(standalone(30)).prune()).toBe(9);
  });
});

describe('access-event retention in the appliance', () => {
  const A = '/api/v1/projects/default/default';
  let dataDir: string;
  let gh: TestAppliance | null = null;

  const start = async (clock: ManualClock, env: Record<string, string> = {}) => {
    gh = await startAppliance(env, { clock, dataDir });
    return { gh, api: client(gh, await gh.token()) };
  };
  const occupancy = (app: TestAppliance) =>
    [...app.app.services.access.occupancy.entries()].sort((a, b) => a[0] - b[0]);
  const db = () => new BetterSqlite3(join(dataDir, 'gatehouse.db'));
  const eventIds = () => {
    const d = db();
    const rows = d.prepare('SELECT id FROM access_events ORDER BY id').pluck().all() as number[];
    d.close();
    return rows;
  };

  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-retention-app-'));
  });
  afterEach(async () => {
    await gh?.stop();
    gh = null;
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('keeps the events after the presence snapshot: occupancy after a restart is the same before and after pruning', async () => {
    const clock = new ManualClock(NOW - 40 * DAY);
    const first = await start(clock);
    const zone = (await first.api.post(`${A}/access-zones`, { name: 'Arena', capacity: 100 })).body.data.id;
    const entry = (await first.api.post(`${A}/access-points`, { name: 'In', access_zone_id: zone })).body.data.id;
    const exit = (await first.api.post(`${A}/access-points`, { name: 'Out', access_zone_id: zone, direction: 'out' }))
      .body.data.id;
    const rows = Array.from({ length: 10 }, (_, i) => ({
      first_name: `Fan${i}`,
      last_name: 'X',
      credential_value: `FAN-${i}`,
    }));
    expect((await first.api.post(`${A}/attendees/import`, rows)).body.data.imported).toBe(10);
    const scan = async (gate: number, credential: string) =>
      expect(
        (await first.api.post(`${A}/access-points/${gate}/scan`, { credential_value: credential })).body.access_granted,
      ).toBe(true);
    for (const i of [0, 1, 2, 3, 4]) await scan(entry, `FAN-${i}`);
    await first.gh.app.services.access.scans.settled();
    first.gh.app.services.access.presence.save();
    const snapshot = first.gh.app.store.db.prepare('SELECT attendee_id, access_zone_id FROM zone_presence').all() as {
      attendee_id: number;
      access_zone_id: number;
    }[];
    const snapshotMark = first.gh.app.store.db
      .prepare('SELECT last_event_id FROM zone_presence_mark')
      .pluck()
      .get() as number;
    expect(snapshotMark).toBe(5);
    // After the snapshot: two more in, one out.
    await scan(entry, 'FAN-5');
    await scan(entry, 'FAN-6');
    await scan(exit, 'FAN-0');
    const before = occupancy(first.gh);
    expect(before).toHaveLength(6);
    await first.gh.stop();

    // The snapshot as a crash right after it would have left it: the events after its mark are replayed at start.
    const crashed = () => {
      const d = db();
      d.prepare('DELETE FROM zone_presence').run();
      for (const p of snapshot)
        d.prepare('INSERT INTO zone_presence (attendee_id, access_zone_id) VALUES (?, ?)').run(
          p.attendee_id,
          p.access_zone_id,
        );
      d.prepare('UPDATE zone_presence_mark SET last_event_id = ?').run(snapshotMark);
      d.close();
    };
    crashed();
    clock.advance(40 * DAY);
    const second = await start(clock, { GATEHOUSE_SYNC_RETENTION_DAYS: '30' });
    expect(occupancy(second.gh)).toEqual(before);
    expect(await second.gh.app.services.access.retention.prune()).toBe(5);
    expect(eventIds()).toEqual([6, 7, 8]);
    expect((await second.gh.request('GET', '/metrics')).text).toMatch(/^gatehouse_access_events_pruned_total 5$/m);
    await second.gh.stop();

    crashed(); // again, now over the pruned log
    const third = await start(clock, { GATEHOUSE_SYNC_RETENTION_DAYS: '30' });
    expect(occupancy(third.gh)).toEqual(before);
  });

  it('answers a request id retried inside the retry window with its first decision after pruning and a restart', async () => {
    const clock = new ManualClock(NOW - 10 * DAY);
    const first = await start(clock);
    const zone = (await first.api.post(`${A}/access-zones`, { name: 'Arena', capacity: 100 })).body.data.id;
    const gate = (await first.api.post(`${A}/access-points`, { name: 'In', access_zone_id: zone })).body.data.id;
    const rows = Array.from({ length: 5 }, (_, i) => ({
      first_name: `Fan${i}`,
      last_name: 'X',
      credential_value: `FAN-${i}`,
    }));
    expect((await first.api.post(`${A}/attendees/import`, rows)).body.data.imported).toBe(5);
    const scan = (api: typeof first.api, credential: string, requestId: string) =>
      api.post(`${A}/access-points/${gate}/scan`, { credential_value: credential, request_id: requestId });
    const old = (await scan(first.api, 'FAN-0', 'old')).body;
    clock.advance(8 * DAY);
    const recent = (await scan(first.api, 'NOBODY', 'recent')).body; // a denial, 2 days before pruning
    expect(recent.access_granted).toBe(false);
    clock.advance(2 * DAY);
    await scan(first.api, 'FAN-1', 'newest');
    await first.gh.stop();

    const second = await start(clock, { GATEHOUSE_SYNC_RETENTION_DAYS: '1' });
    expect(await second.gh.app.services.access.retention.prune()).toBe(1); // 'old' only: 'recent' is past 1 day, inside the window
    expect(eventIds()).toEqual([2, 3]);
    // From the log (memory went with the restart): the first decision, its event, no second row.
    const retried = (await scan(second.api, 'NOBODY', 'recent')).body;
    expect(retried).toEqual(recent);
    await second.gh.app.services.access.scans.settled();
    expect(eventIds()).toEqual([2, 3]);
    // Past the window a request id is a new request: 'old' is decided again, as a new event.
    const again = (await scan(second.api, 'FAN-0', 'old')).body;
    expect(again.event_id).not.toBe(old.event_id);
  });
});
