import BetterSqlite3 from 'better-sqlite3';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AccessEventLog, type AccessEventRow } from '../../src/access/event-log.js';
import { Store } from '../../src/store/database.js';
import { Checkpointer } from '../../src/store/checkpointer.js';
import { Occupancy } from '../../src/access/occupancy.js';
import { PresenceSnapshots } from '../../src/access/presence.js';
import { client, startAppliance } from '../helpers/appliance.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
const log = pino({ level: 'silent' });

function row(i: number, extra: Partial<AccessEventRow> = {}): AccessEventRow {
  return {
    uuid: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    projectId: 1,
    accessPointId: 1,
    zoneId: null,
    readerId: null,
    credentialId: null,
    credentialValue: `V${i}`,
    attendeeId: null,
    granted: false,
    reason: 'invalid_credential',
    movement: null,
    counted: false,
    fromZoneId: null,
    scannedAt: '2026-11-23T10:00:00.000Z',
    decidedAt: '2026-11-23T10:00:00.000Z',
    source: 'api',
    requestKey: null,
    ...extra,
  };
}

describe('the access-event log (group commit)', () => {
  let store: Store;
  let other: BetterSqlite3.Database;
  const count = () => (other.prepare('SELECT COUNT(*) AS n FROM access_events').get() as { n: number }).n;

  beforeEach(() => {
    const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-log-'));
    dirs.push(dataDir);
    store = new Store({ dataDir, synchronous: 'NORMAL', autoCheckpoint: false }, log);
    store.start();
    store.db.prepare("INSERT INTO teams (name, slug, created_at, updated_at) VALUES ('t', 't', 'x', 'x')").run();
    store.db.prepare("INSERT INTO projects (team_id, name, slug, timezone, created_at, updated_at) VALUES (1, 'p', 'p', 'UTC', 'x', 'x')").run();
    other = new BetterSqlite3(store.file, { readonly: true });
  });
  afterEach(() => {
    other.close();
    store.stop();
  });

  it('commits the scans of one event-loop turn in one transaction, and settles each only after the commit', async () => {
    const eventLog = new AccessEventLog(store.db, 512);
    const settled: number[] = [];
    const promises = Array.from({ length: 100 }, (_, i) => eventLog.append(row(i)).then(() => settled.push(count())));
    expect(count()).toBe(0); // nothing committed yet in this turn
    await Promise.all(promises);
    expect(settled.every((n) => n === 100)).toBe(true); // every promise saw its row stored
    expect(eventLog.stats).toEqual({ batches: 1, events: 100 });
  });

  it('flushes at maxBatch without waiting for the turn to end', async () => {
    const eventLog = new AccessEventLog(store.db, 40);
    const promises = Array.from({ length: 100 }, (_, i) => eventLog.append(row(i)));
    expect(count()).toBe(80); // two full batches committed synchronously
    await Promise.all(promises);
    expect(eventLog.stats).toEqual({ batches: 3, events: 100 });
  });

  it('rejects every scan of a batch that cannot commit, and stores none of it', async () => {
    const eventLog = new AccessEventLog(store.db, 512);
    const good = eventLog.append(row(1));
    const bad = eventLog.append(row(2, { uuid: row(1).uuid })); // duplicate uuid: the transaction fails
    const results = await Promise.allSettled([good, bad]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(count()).toBe(0);
    await eventLog.append(row(3));
    expect(count()).toBe(1);
  });

  it('rebuilds occupancy from a snapshot plus the events after it, skipping deleted attendees', async () => {
    const eventLog = new AccessEventLog(store.db, 512);
    const move = (i: number, attendeeId: number, zoneId: number, movement: 'in' | 'out', counted = true) =>
      eventLog.append(row(i, { attendeeId, zoneId, granted: true, reason: null, movement, counted }));
    const live = new Occupancy();
    const snapshots = new PresenceSnapshots(store.db, live, () => true, log);
    await Promise.all([move(1, 1, 10, 'in'), move(2, 2, 10, 'in'), move(3, 3, 20, 'in')]);
    snapshots.save(); // 1,2 in zone 10; 3 in zone 20 (as the live picture says)
    live.enter(1, 10);
    live.enter(2, 10);
    live.enter(3, 20);
    snapshots.save();
    // after the snapshot: 1 leaves, 2 moves to 20 (an entry elsewhere), 4 enters 10; an uncounted pass changes nothing
    await Promise.all([move(4, 1, 10, 'out'), move(5, 2, 20, 'in'), move(6, 4, 10, 'in'), move(7, 5, 10, 'out', false)]);

    const rebuilt = new Occupancy();
    const replayed = new PresenceSnapshots(store.db, rebuilt, (id) => id !== 3, log).restore();
    expect(replayed).toBe(3);
    expect([rebuilt.count(10), rebuilt.count(20)]).toEqual([1, 1]); // 4 in 10; 2 in 20; 3 deleted
    expect(rebuilt.zoneOf(2)).toBe(20);
    expect(rebuilt.zoneOf(1)).toBeUndefined();
  });

  it('checkpoints the WAL from a worker thread while the writer never does', async () => {
    const eventLog = new AccessEventLog(store.db, 512);
    for (let turn = 0; turn < 20; turn++) await Promise.all(Array.from({ length: 200 }, (_, i) => eventLog.append(row(turn * 1000 + i, { credentialValue: 'x'.repeat(500) }))));
    const wal = `${store.file}-wal`;
    // wal_autocheckpoint = 0: the WAL holds every page written so far
    const [before] = store.db.pragma('wal_checkpoint(NOOP)') as { log: number; checkpointed: number }[];
    expect(before!.log).toBeGreaterThan(500);
    expect(before!.checkpointed).toBe(0);
    const checkpointer = new Checkpointer({ file: store.file, synchronous: 'NORMAL', intervalMs: 50 }, log);
    checkpointer.start();
    await expect.poll(() => checkpointer.last?.ok && checkpointer.last.checkpointed === checkpointer.last.log, { timeout: 5000 }).toBe(true);
    expect(statSync(wal).size).toBeGreaterThan(0);
    await checkpointer.stop();
    expect(count()).toBe(4000);
  });
});

describe('request ids: a retried scan is decided once', () => {
  it('answers a repeated request_id with the first decision and stores one event, also after a restart', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-req-'));
    dirs.push(dataDir);
    const A = '/api/v1/projects/default/default';
    let gh = await startAppliance({}, { dataDir });
    let api = client(gh, await gh.token());
    const zone = (await api.post(`${A}/access-zones`, { name: 'Main', capacity: 1 })).body.data.id;
    const gate = (await api.post(`${A}/access-points`, { name: 'Main gate', access_zone_id: zone })).body.data.id;
    await api.post(`${A}/attendees/import`, [
      { first_name: 'Ann', last_name: 'A', credential_value: 'ANN' },
      { first_name: 'Bob', last_name: 'B', credential_value: 'BOB' },
    ]);
    const scan = (credential_value: string, request_id?: string) => api.post(`${A}/access-points/${gate}/scan`, { credential_value, ...(request_id ? { request_id } : {}) });

    // The same id three times at once, then once more: one grant, one event, one person inside.
    const first = await Promise.all([scan('ANN', 'r-1'), scan('ANN', 'r-1'), scan('ANN', 'r-1')]);
    for (const res of first) expect(res.body).toEqual({ success: true, access_granted: true, attendee: { id: expect.any(Number), first_name: 'Ann', last_name: 'A' } });
    expect((await scan('ANN', 'r-1')).body.access_granted).toBe(true);
    // Without an id, a second scan is a new decision: anti-passback denies it.
    expect((await scan('ANN')).body).toMatchObject({ access_granted: false, reason: 'not_authorized' });
    // A denial is replayed as a denial, even once the reason no longer holds.
    expect((await scan('BOB', 'r-2')).body).toMatchObject({ access_granted: false, reason: 'capacity_exceeded' });
    await api.put(`${A}/access-zones/${zone}`, { name: 'Main', capacity: 10 });
    expect((await scan('BOB', 'r-2')).body).toMatchObject({ access_granted: false, reason: 'capacity_exceeded' });
    expect((await api.get(`${A}/access-zones/${zone}`)).body.data.current_count).toBe(1);
    await gh.stop();

    gh = await startAppliance({}, { dataDir });
    api = client(gh, await gh.token());
    expect((await scan('ANN', 'r-1')).body).toMatchObject({ access_granted: true, attendee: { first_name: 'Ann' } });
    expect((await scan('BOB', 'r-2')).body).toMatchObject({ access_granted: false, reason: 'capacity_exceeded' });
    expect((await scan('BOB', 'r-3')).body.access_granted).toBe(true);
    const events = (await api.get(`${A}/access-events?per_page=100`)).body;
    expect(events.meta.total).toBe(4); // ANN r-1, ANN (no id), BOB r-2, BOB r-3
    expect((await api.get(`${A}/access-zones/${zone}`)).body.data.current_count).toBe(2);
    await gh.stop();
  });
});
