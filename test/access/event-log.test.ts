import BetterSqlite3 from 'better-sqlite3';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EventJournal, type JournalOptions } from '../../src/journal/event-journal.js';
import { journalLine } from '../../src/journal/journal-format.js';
import { AccessEventLog } from '../../src/journal/event-log.js';
import { Store } from '../../src/store/database.js';
import { Checkpointer } from '../../src/store/checkpointer.js';
import { Occupancy } from '../../src/access/occupancy.js';
import { PresenceSnapshots } from '../../src/access/presence.js';
import { eventRow } from '../helpers/access-event-rows.js';
import { client, startAppliance } from '../helpers/appliance.js';

const dirs: string[] = [];
afterAll(() =>
  dirs.forEach((d) => {
    rmSync(d, { recursive: true, force: true });
  }),
);
const log = pino({ level: 'silent' });

const row = eventRow;

describe('the access-event log (group commit into the journal)', () => {
  let store: Store;
  let dataDir: string;
  let other: BetterSqlite3.Database;
  const journals: EventJournal[] = [];
  const count = () => (other.prepare('SELECT COUNT(*) AS n FROM access_events').get() as { n: number }).n;
  const journalDir = () => join(dataDir, 'journal');
  const segments = () => readdirSync(journalDir()).sort();
  const openJournal = (options: Partial<JournalOptions> = {}) => {
    const journal = new EventJournal(
      store.db,
      {
        dir: journalDir(),
        dbFile: store.file,
        synchronous: 'NORMAL',
        segmentBytes: 1 << 26,
        intervalMs: 5,
        ...options,
      },
      log,
    );
    journal.recover();
    journal.start();
    journals.push(journal);
    return journal;
  };

  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-log-'));
    dirs.push(dataDir);
    store = new Store({ dataDir, synchronous: 'NORMAL', autoCheckpoint: false }, log);
    store.start();
    store.db.prepare("INSERT INTO teams (name, slug, created_at, updated_at) VALUES ('t', 't', 'x', 'x')").run();
    store.db
      .prepare(
        "INSERT INTO projects (team_id, name, slug, timezone, created_at, updated_at) VALUES (1, 'p', 'p', 'UTC', 'x', 'x')",
      )
      .run();
    other = new BetterSqlite3(store.file, { readonly: true });
  });
  afterEach(async () => {
    for (const journal of journals.splice(0)) await journal.stop();
    other.close();
    store.stop();
  });

  it('writes the scans of one event-loop turn to the journal in one write, settles them only then, and ingests them into SQLite', async () => {
    const journal = openJournal();
    const eventLog = new AccessEventLog(journal, 512);
    const journalBytes = () => statSync(join(journalDir(), segments()[0]!)).size;
    const seen: number[] = [];
    const promises = Array.from({ length: 100 }, (_, i) =>
      eventLog.append(row(i)).then(() => seen.push(journalBytes())),
    );
    expect(journalBytes()).toBe(0); // nothing written yet in this turn
    await Promise.all(promises);
    expect(new Set(seen).size).toBe(1); // one write held all 100 before anyone was answered
    const lines = readFileSync(join(journalDir(), segments()[0]!), 'utf8').trimEnd().split('\n');
    expect(lines).toHaveLength(100);
    expect(JSON.parse(lines[7]!)[0]).toBe(row(7).uuid);
    expect(eventLog.stats).toEqual({ batches: 1, events: 100 });
    await eventLog.settled();
    expect(count()).toBe(100);
    expect(eventLog.lagging).toBe(false);
    const stored = other
      .prepare('SELECT uuid, credential_value, granted, reason, source FROM access_events WHERE uuid = ?')
      .get(row(7).uuid);
    expect(stored).toEqual({
      uuid: row(7).uuid,
      credential_value: 'V7',
      granted: 0,
      reason: 'invalid_credential',
      source: 'api',
    });
  });

  it('writes at maxBatch without waiting for the turn to end', async () => {
    const journal = openJournal();
    const eventLog = new AccessEventLog(journal, 40);
    const promises = Array.from({ length: 100 }, (_, i) => eventLog.append(row(i)));
    expect(journal.stats.writes).toBe(2); // two full batches written synchronously
    await Promise.all(promises);
    expect(eventLog.stats).toEqual({ batches: 3, events: 100 });
    await eventLog.settled();
    expect(count()).toBe(100);
  });

  it('rejects every scan of a batch that cannot be written, and stores none of it', async () => {
    const journal = new EventJournal(
      store.db,
      { dir: journalDir(), dbFile: store.file, synchronous: 'NORMAL', segmentBytes: 1 << 26, intervalMs: 5 },
      log,
    );
    journal.recover();
    // The segment it is about to open is a link to /dev/full: every write fails with ENOSPC, as on a full disk.
    symlinkSync('/dev/full', join(journalDir(), 'events-0000000001.jsonl'));
    journal.start();
    journals.push(journal);
    const eventLog = new AccessEventLog(journal, 512);
    const results = await Promise.allSettled([eventLog.append(row(1)), eventLog.append(row(2))]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(String((results[0] as PromiseRejectedResult).reason)).toMatch(/ENOSPC/);
    await eventLog.settled();
    expect(count()).toBe(0);
  });

  it('at start, ingests what an earlier run journaled past the stored position, once, and ignores a torn last line', async () => {
    const first = openJournal();
    const eventLog = new AccessEventLog(first, 512);
    await Promise.all([1, 2, 3].map((i) => eventLog.append(row(i))));
    await eventLog.settled(); // rows 1-3 in SQLite, position just after them in segment 1
    await first.stop();
    journals.splice(0);
    expect(segments()).toEqual([]);
    expect(store.db.prepare('SELECT segment, offset FROM event_journal_position').get()).toEqual({
      segment: 1,
      offset: Buffer.byteLength([1, 2, 3].map((i) => `${journalLine(row(i))}\n`).join('')),
    });
    // What a killed run leaves: its segment with rows answered after the last ingest (4, 5),
    // a later segment (6), and half a line a power cut can cut short (never answered).
    const lines = (ids: number[]) => ids.map((i) => `${journalLine(row(i))}\n`).join('');
    writeFileSync(join(journalDir(), 'events-0000000001.jsonl'), lines([1, 2, 3, 4, 5]));
    writeFileSync(join(journalDir(), 'events-0000000002.jsonl'), lines([6]) + journalLine(row(7)).slice(0, 30));

    const second = new EventJournal(
      store.db,
      { dir: journalDir(), dbFile: store.file, synchronous: 'NORMAL', segmentBytes: 1 << 26, intervalMs: 5 },
      log,
    );
    expect(second.recover()).toBe(3); // rows 4, 5 and 6
    expect(count()).toBe(6);
    expect(other.prepare('SELECT COUNT(DISTINCT uuid) AS n FROM access_events').get()).toEqual({ n: 6 });
    expect(segments()).toEqual([]); // recovered segments are removed
    second.start();
    journals.push(second);
    const again = new AccessEventLog(second, 512);
    await again.append(row(8));
    await again.settled();
    expect(count()).toBe(7);
    expect(segments()).toEqual(['events-0000000003.jsonl']); // numbering carries on
  });

  it('at start, recovers lines an older build journaled (17 values, before the clock fields; 19, before reason_detail) with nulls for what they lack', async () => {
    const first = openJournal();
    await first.stop();
    journals.splice(0);
    const cut = (r: ReturnType<typeof row>, n: number) =>
      `${JSON.stringify((JSON.parse(journalLine(r)) as unknown[]).slice(0, n))}\n`;
    const old17 = cut(row(1, { clockOffsetMs: 5, clockUnsynchronised: 1 }), 17);
    const old19 = cut(
      row(2, { clockOffsetMs: 5, clockUnsynchronised: 1, reason: 'not_authorized', reasonDetail: 'already_inside' }),
      19,
    );
    const now = `${journalLine(row(3, { reason: 'not_authorized', reasonDetail: 'access_point_inactive' }))}\n`;
    writeFileSync(join(journalDir(), 'events-0000000002.jsonl'), old17 + old19 + now);
    const second = new EventJournal(
      store.db,
      { dir: journalDir(), dbFile: store.file, synchronous: 'NORMAL', segmentBytes: 1 << 26, intervalMs: 5 },
      log,
    );
    expect(second.recover()).toBe(3);
    expect(
      other.prepare('SELECT uuid, reason, reason_detail, clock_offset_ms FROM access_events ORDER BY id').all(),
    ).toEqual([
      { uuid: row(1).uuid, reason: 'invalid_credential', reason_detail: null, clock_offset_ms: null },
      { uuid: row(2).uuid, reason: 'not_authorized', reason_detail: null, clock_offset_ms: 5 },
      { uuid: row(3).uuid, reason: 'not_authorized', reason_detail: 'access_point_inactive', clock_offset_ms: null },
    ]);
    second.start();
    journals.push(second);
  });

  it('starts a new segment past segmentBytes and deletes each segment once it is ingested', async () => {
    const journal = openJournal({ segmentBytes: 65_536 });
    const eventLog = new AccessEventLog(journal, 100);
    for (let turn = 0; turn < 10; turn++)
      await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          eventLog.append(row(turn * 100 + i, { credentialValue: 'x'.repeat(200) })),
        ),
      );
    expect(journal.stats.bytes).toBeGreaterThan(3 * 65_536);
    await eventLog.settled();
    expect(count()).toBe(1000);
    await expect.poll(() => segments().length).toBe(1); // only the open one is left
    await journal.stop();
    journals.splice(0);
    expect(segments()).toEqual([]);
  });

  it('rebuilds occupancy from a snapshot plus the events after it, skipping deleted attendees', async () => {
    const eventLog = new AccessEventLog(openJournal(), 512);
    const move = (i: number, attendeeId: number, zoneId: number, movement: 'in' | 'out', counted = true) =>
      eventLog.append(row(i, { attendeeId, zoneId, granted: true, reason: null, movement, counted }));
    const live = new Occupancy();
    const snapshots = new PresenceSnapshots(store.db, live, () => true, log);
    await Promise.all([move(1, 1, 10, 'in'), move(2, 2, 10, 'in'), move(3, 3, 20, 'in')]);
    await eventLog.settled();
    live.enter(1, 10);
    live.enter(2, 10);
    live.enter(3, 20);
    snapshots.save(); // 1,2 in zone 10; 3 in zone 20 (as the live picture says)
    // after the snapshot: 1 leaves, 2 moves to 20 (an entry elsewhere), 4 enters 10; an uncounted pass changes nothing
    await Promise.all([
      move(4, 1, 10, 'out'),
      move(5, 2, 20, 'in'),
      move(6, 4, 10, 'in'),
      move(7, 5, 10, 'out', false),
    ]);
    await eventLog.settled();

    const rebuilt = new Occupancy();
    const replayed = new PresenceSnapshots(store.db, rebuilt, (id) => id !== 3, log).restore();
    expect(replayed).toBe(3);
    expect([rebuilt.count(10), rebuilt.count(20)]).toEqual([1, 1]); // 4 in 10; 2 in 20; 3 deleted
    expect(rebuilt.zoneOf(2)).toBe(20);
    expect(rebuilt.zoneOf(1)).toBeUndefined();
  });

  it('checkpoints the WAL from a worker thread while the writers never do', async () => {
    const eventLog = new AccessEventLog(openJournal(), 512);
    for (let turn = 0; turn < 20; turn++)
      await Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          eventLog.append(row(turn * 1000 + i, { credentialValue: 'x'.repeat(500) })),
        ),
      );
    await eventLog.settled();
    const wal = `${store.file}-wal`;
    // wal_autocheckpoint = 0 on both connections: the WAL holds every page written so far
    const [before] = store.db.pragma('wal_checkpoint(NOOP)') as { log: number; checkpointed: number }[];
    expect(before!.log).toBeGreaterThan(500);
    expect(before!.checkpointed).toBe(0);
    const checkpointer = new Checkpointer({ file: store.file, synchronous: 'NORMAL', intervalMs: 50 }, log);
    checkpointer.start();
    await expect
      .poll(() => checkpointer.last?.ok && checkpointer.last.checkpointed === checkpointer.last.log, { timeout: 5000 })
      .toBe(true);
    expect(statSync(wal).size).toBeGreaterThan(0);
    await checkpointer.stop();
    expect(count()).toBe(4000);
  });

  it('checkpoints whatever any connection committed, not only the journal: REST writes on a box with no scans', async () => {
    const checkpointer = new Checkpointer({ file: store.file, synchronous: 'NORMAL', intervalMs: 50 }, log);
    checkpointer.start();
    const write = (n: number) => {
      const other = new BetterSqlite3(store.file); // a writer the checkpointer is told nothing about
      other.pragma('wal_autocheckpoint = 0');
      other.exec('CREATE TABLE IF NOT EXISTS scratch (v TEXT)');
      const insert = other.prepare('INSERT INTO scratch (v) VALUES (?)');
      other.transaction(() => {
        for (let i = 0; i < n; i++) insert.run('y'.repeat(400));
      })();
      other.close();
    };
    const settledAll = () => {
      const [now] = store.db.pragma('wal_checkpoint(NOOP)') as { log: number; checkpointed: number }[];
      return checkpointer.last?.ok === true && now!.log > 0 && now!.checkpointed === now!.log;
    };
    write(500);
    await expect.poll(settledAll, { timeout: 5000 }).toBe(true);
    const first = checkpointer.last!.log;
    write(2000); // later commits, with no notification either
    await expect.poll(() => settledAll() && checkpointer.last!.log !== first, { timeout: 5000 }).toBe(true);
    await checkpointer.stop();
  });
});

describe('occupancy', () => {
  it('keeps counts and who is where for dense and very large attendee ids', () => {
    const occupancy = new Occupancy();
    expect(occupancy.enter(5, 1)).toBeNull();
    expect(occupancy.enter(2 ** 27, 1)).toBeNull(); // past the dense table: kept in a map
    expect(occupancy.enter(70_000, 2)).toBeNull(); // grows the table
    expect([occupancy.count(1), occupancy.count(2), occupancy.inside]).toEqual([2, 1, 3]);
    expect(occupancy.enter(5, 2)).toBe(1); // moved
    expect(occupancy.enter(5, 2)).toBeNull(); // already there: nothing changes
    expect([occupancy.count(1), occupancy.count(2)]).toEqual([1, 2]);
    expect(occupancy.leave(2 ** 27, 2)).toBe(false); // not in that zone
    expect(occupancy.leave(2 ** 27, 1)).toBe(true);
    expect(occupancy.leave(2 ** 27, 1)).toBe(false); // never below zero
    expect(occupancy.count(1)).toBe(0);
    expect(occupancy.entries().sort((a, b) => a[0] - b[0])).toEqual([
      [5, 2],
      [70_000, 2],
    ]);
    occupancy.forget(70_000);
    expect([occupancy.count(2), occupancy.zoneOf(70_000), occupancy.inside]).toEqual([1, undefined, 1]);
  });
});

describe('request ids: a retried scan is decided once', () => {
  it('answers a repeated request_id with the first decision and stores one event, also after a restart', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-req-'));
    dirs.push(dataDir);
    const A = '/api/v1/projects/default/default';
    let gh = await startAppliance({}, { dataDir });
    let api = client(gh, await gh.token());
    // anti_passback: a second scan without an id must be a denial, to tell a new decision from a replay.
    const zone = (await api.post(`${A}/access-zones`, { name: 'Main', capacity: 1, anti_passback: true })).body.data.id;
    const gate = (await api.post(`${A}/access-points`, { name: 'Main gate', access_zone_id: zone })).body.data.id;
    await api.post(`${A}/attendees/import`, [
      { first_name: 'Ann', last_name: 'A', credential_value: 'ANN' },
      { first_name: 'Bob', last_name: 'B', credential_value: 'BOB' },
    ]);
    const scan = (credential_value: string, request_id?: string) =>
      api.post(`${A}/access-points/${gate}/scan`, { credential_value, ...(request_id ? { request_id } : {}) });

    // The same id three times at once, then once more: one grant, one event, one person inside.
    const first = await Promise.all([scan('ANN', 'r-1'), scan('ANN', 'r-1'), scan('ANN', 'r-1')]);
    for (const res of first)
      expect(res.body).toEqual({
        success: true,
        access_granted: true,
        attendee: { id: expect.any(Number), first_name: 'Ann', last_name: 'A' },
        event_id: expect.any(String),
      });
    expect((await scan('ANN', 'r-1')).body.access_granted).toBe(true);
    // Every answer names the one event: the same event_id each time.
    const eventId = first[0]!.body.event_id as string;
    expect(new Set(first.map((r) => r.body.event_id))).toEqual(new Set([eventId]));
    // Without an id, a second scan is a new decision: the zone's anti-passback denies it.
    expect((await scan('ANN')).body).toMatchObject({
      access_granted: false,
      reason: 'not_authorized',
      reason_detail: 'already_inside',
    });
    // A denial is replayed as a denial, even once the reason no longer holds.
    expect((await scan('BOB', 'r-2')).body).toMatchObject({ access_granted: false, reason: 'capacity_exceeded' });
    expect((await api.put(`${A}/access-zones/${zone}`, { name: 'Main', capacity: 10 })).status).toBe(200);
    expect((await scan('BOB', 'r-2')).body).toMatchObject({ access_granted: false, reason: 'capacity_exceeded' });
    expect((await api.get(`${A}/access-zones/${zone}`)).body.data.current_count).toBe(1);
    await gh.stop();

    gh = await startAppliance({}, { dataDir });
    api = client(gh, await gh.token());
    expect((await scan('ANN', 'r-1')).body).toMatchObject({
      access_granted: true,
      attendee: { first_name: 'Ann' },
      event_id: eventId,
    }); // after a restart too
    expect((await scan('BOB', 'r-2')).body).toMatchObject({ access_granted: false, reason: 'capacity_exceeded' });
    expect((await scan('BOB', 'r-3')).body.access_granted).toBe(true);
    const events = (await api.get(`${A}/access-events?per_page=100`)).body;
    expect(events.data.map((e: { uuid: string }) => e.uuid)).toContain(eventId);
    expect(events.meta.total).toBe(4); // ANN r-1, ANN (no id), BOB r-2, BOB r-3
    expect((await api.get(`${A}/access-zones/${zone}`)).body.data.current_count).toBe(2);
    await gh.stop();
  });
});

describe('reading the log while the journal cannot be ingested', () => {
  it('answers 503 event_log_behind with Retry-After rather than a list missing answered scans, and the scan once the ingest catches up', async () => {
    const gh = await startAppliance({ GATEHOUSE_STORE_READ_WAIT_MS: '300' });
    dirs.push(gh.dataDir);
    try {
      const api = client(gh, await gh.token());
      const A = '/api/v1/projects/default/default';
      const zone = (await api.post(`${A}/access-zones`, { name: 'Locked hall' })).body.data.id;
      const gate = (await api.post(`${A}/access-points`, { name: 'Locked door', access_zone_id: zone })).body.data.id;
      // Another connection holds SQLite's write lock: the ingest worker cannot commit.
      const blocker = new BetterSqlite3(join(gh.dataDir, 'gatehouse.db'));
      blocker.pragma('busy_timeout = 0');
      blocker.prepare('BEGIN IMMEDIATE').run();
      let released = false;
      try {
        const scan = await api.post(`${A}/access-points/${gate}/scan`, { credential_value: 'LOCKED-1' });
        expect(scan.status).toBe(200); // decided and durable in the journal all the same
        expect(scan.body).toMatchObject({ access_granted: false, reason: 'invalid_credential' });
        const behind = await api.get(`${A}/access-events`);
        expect(behind.status).toBe(503);
        expect(behind.body.message).toMatch(/not in the access-event log yet/);
        expect(behind.headers.get('retry-after')).toBe('1');
        const metrics = await api.post(`${A}/analytics/metrics`, {
          metric: 'access_summary',
          start_date: '2026-01-01',
          end_date: '2030-01-01',
        });
        expect(metrics.status).toBe(503);
        blocker.prepare('ROLLBACK').run();
        released = true;
        await expect
          .poll(
            async () =>
              (await api.get(`${A}/access-events?access_zone_id=${zone}`)).body.data?.map(
                (e: { credential_value: string }) => e.credential_value,
              ),
            { timeout: 15_000 },
          )
          .toEqual(['LOCKED-1']);
      } finally {
        if (!released) blocker.prepare('ROLLBACK').run();
        blocker.close();
      }
    } finally {
      await gh.stop();
    }
  }, 30_000);
});
