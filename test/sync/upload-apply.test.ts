import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { pino } from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Occupancy } from '../../src/access/occupancy.js';
import { VenueIndex } from '../../src/access/venue-index.js';
import { ProjectRepository } from '../../src/accounts/projects.js';
import { TeamRepository } from '../../src/accounts/teams.js';
import { systemClock } from '../../src/clock.js';
import { EventBus } from '../../src/events/bus.js';
import { Store } from '../../src/store/database.js';
import { PG_VERBATIM } from '../../src/store/postgres/pg-database.js';
import { SyncConflicts } from '../../sync/conflicts.js';
import { type EdgeRow, SyncEdges } from '../../sync/edges.js';
import type { UploadBody, UploadedAccessEvent } from '../../sync/protocol.js';
import { UploadApply } from '../../sync/upload-apply.js';
import { newDatabase, onPostgres } from '../helpers/test-store.js';

// A batch applied in slices (docs/sync.md: limits), through the cloud's UploadApply into a real
// store (a SQLite file, or PostgreSQL when the cloud's tests run there), two items a slice: the
// event loop turns between slices; a batch cut short (its second slice refused by the store)
// keeps what its first slice stored, claims no feed position, and sent again stores the rest once
// and then keeps its position; double entries are settled across the cut as on the merged
// history. In one slice, an event sent twice is stored once.

const BASE = Date.parse('2026-06-01T18:00:00.000Z');

describe('an upload applied in slices', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-slices-'));
  // The cloud's store: SQLite, or PostgreSQL when the cloud's tests run there (test-store.ts).
  const store = new Store(
    { dataDir: dir, synchronous: 'NORMAL', ...(onPostgres() ? { databaseUrl: newDatabase() } : {}) },
    pino({ level: 'silent' }),
  );
  const bus = new EventBus(pino({ level: 'silent' }));
  let projectId = 0;
  let north: EdgeRow;
  let south: EdgeRow;
  let edges: SyncEdges;
  let uploads: UploadApply;
  let conflicts: SyncConflicts;
  let index: VenueIndex;

  const movement = (attendee: number, movement: 'in' | 'out', seconds: number): UploadedAccessEvent => {
    const at = new Date(BASE + seconds * 1000).toISOString();
    return {
      kind: 'access',
      uuid: randomUUID(),
      access_point_id: 1,
      access_zone_id: 1,
      reader_id: null,
      credential_id: null,
      credential_value: `T-${attendee}`,
      attendee_id: attendee,
      granted: true,
      reason: null,
      movement,
      scanned_at: at,
      decided_at: at,
      source: 'api',
      clock_offset_ms: 0,
      clock_synchronised: true,
    };
  };
  const body = (items: UploadedAccessEvent[], feed?: UploadBody['feed']): UploadBody => ({
    clock: { offset_ms: 0, synchronised: true },
    backlog: 0,
    items,
    ...(feed ? { feed } : {}),
  });
  const stored = (uuid: string) =>
    store.db.prepare('SELECT duplicate_of FROM access_events WHERE uuid = ?').get(uuid) as
      | { duplicate_of: string | null }
      | undefined;

  beforeAll(() => {
    store.start();
    const team = new TeamRepository(store.db, systemClock).create('Default', 'default');
    projectId = new ProjectRepository(store.db, systemClock).create({
      teamId: team.id,
      name: 'Default',
      slug: 'default',
      timezone: 'UTC',
    }).id;
    const now = new Date().toISOString();
    store.db
      .prepare(
        "INSERT INTO access_zones (id, project_id, name, slug, version, created_at, updated_at) VALUES (1, ?, 'Hall', 'hall', 1, ?, ?)",
      )
      .run(projectId, now, now);
    store.db
      .prepare(
        "INSERT INTO access_points (id, project_id, access_zone_id, name, slug, direction, version, created_at, updated_at) VALUES (1, ?, 1, 'Door', 'door', 'both', 1, ?, ?)",
      )
      .run(projectId, now, now);
    store.db
      .prepare(
        "INSERT INTO access_zones (id, project_id, name, slug, version, created_at, updated_at) VALUES (2, ?, 'Bar', 'bar', 1, ?, ?)",
      )
      .run(projectId, now, now);
    store.db
      .prepare(
        "INSERT INTO access_points (id, project_id, access_zone_id, name, slug, direction, version, created_at, updated_at) VALUES (2, ?, 2, 'Bar door', 'bar-door', 'both', 1, ?, ?)",
      )
      .run(projectId, now, now);
    for (const holder of [1, 2]) {
      // The holders are the project's (an event naming anyone else is an unknown_reference: upload-flags.ts).
      store.db
        .prepare(
          "INSERT INTO attendees (id, project_id, first_name, last_name, status, extra, version, created_at, updated_at) VALUES (?, ?, ?, 'Holder', 'active', '{}', 1, ?, ?)",
        )
        .run(holder, projectId, `Holder${holder}`, now, now);
    }
    const issuer = Number(
      store.db
        .prepare(
          "INSERT INTO users (name, email, password_hash, is_admin, created_at, updated_at) VALUES ('Admin', 'admin@example.test', '-', 1, ?, ?)",
        )
        .run(now, now).lastInsertRowid,
    );
    edges = new SyncEdges(store.db, systemClock, bus);
    north = edges.create(projectId, 'north', issuer).edge;
    south = edges.create(projectId, 'south', issuer).edge;
    index = new VenueIndex(store.db);
    index.load();
    conflicts = new SyncConflicts(store.db, systemClock);
    uploads = new UploadApply(store.db, systemClock, bus, new Occupancy(), index, conflicts, async () => {}, edges, {
      sliceItems: 2,
    });
    uploads.prepare();
  });
  const clear = () => {
    for (const table of ['access_events', 'sync_conflicts', 'domain_events'])
      store.db.prepare(`DELETE FROM ${table}`).run();
  };
  beforeEach(clear);
  afterAll(() => {
    store.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('stores an event sent twice in one batch once, beside one stored before, each counted as what it is', async () => {
    // One slice for the whole batch: its access events are stored together (upload-apply.ts).
    const whole = new UploadApply(store.db, systemClock, bus, new Occupancy(), index, conflicts, async () => {}, edges);
    const earlier = movement(1, 'in', 0);
    expect(await whole.apply(north, projectId, body([earlier]))).toEqual({ accepted: 1, duplicates: 0, refused: 0 });
    const entry = movement(2, 'in', 1);
    const exit = movement(2, 'out', 2);
    const outcome = await whole.apply(north, projectId, body([earlier, entry, entry, exit, exit]));
    expect(outcome).toEqual({ accepted: 2, duplicates: 3, refused: 0 });
    const rows = store.db.prepare('SELECT uuid, counted FROM access_events ORDER BY id').all() as {
      uuid: string;
      counted: number;
    }[];
    // Each stored once; each moved its holder (in, then out), the repeats nothing.
    expect(rows).toEqual([
      { uuid: earlier.uuid, counted: 1 },
      { uuid: entry.uuid, counted: 1 },
      { uuid: exit.uuid, counted: 1 },
    ]);
    // An exit before an entry already stored, in a later batch: history, not presence.
    const late = movement(2, 'out', 1.5);
    await whole.apply(south, projectId, body([late]));
    expect(store.db.prepare('SELECT counted FROM access_events WHERE uuid = ?').pluck().get(late.uuid)).toBe(0);
  });

  it('lets the event loop turn between slices', async () => {
    let turns = 0;
    let applying = true;
    const turn = () => {
      turns++;
      if (applying) setImmediate(turn);
    };
    setImmediate(turn);
    const outcome = await uploads.apply(
      north,
      projectId,
      body([1, 2, 1, 2, 1].map((n, i) => movement(n, i < 2 ? 'in' : i < 4 ? 'out' : 'in', i))),
    );
    applying = false;
    expect(outcome).toEqual({ accepted: 5, duplicates: 0, refused: 0 });
    expect(turns).toBeGreaterThanOrEqual(2); // three slices: two turns between them
  });

  it('keeps what a batch cut short stored, claims no feed position for it, and stores the rest once when it is sent again', async () => {
    const feed = {
      from: { access_event_id: 0, domain_event_seq: 0 },
      to: { access_event_id: 40, domain_event_seq: 7 },
    };
    const before = edges.uploadedPosition(north.id);
    // South's entry first; then north's batch: an entry that repeats it, another holder's, and
    // (in the second slice) north's exit of the first holder just before its entry, by scan time.
    const southIn = movement(1, 'in', 0);
    await uploads.apply(south, projectId, body([southIn]));
    const northIn = movement(1, 'in', 10);
    const other = movement(2, 'in', 11);
    const northOut = movement(1, 'out', 5);
    const last = movement(2, 'out', 12);
    const batch = body([northIn, other, northOut, last], feed);
    // The store refuses one row of the second slice (a trigger in each store's own language).
    store.db.exec(
      onPostgres()
        ? `${PG_VERBATIM}CREATE FUNCTION refuse_one() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN
             IF NEW.uuid = '${northOut.uuid}' THEN RAISE EXCEPTION 'refused by the test'; END IF; RETURN NEW; END $f$;
           CREATE TRIGGER refuse_one BEFORE INSERT ON access_events FOR EACH ROW EXECUTE FUNCTION refuse_one()`
        : `CREATE TRIGGER refuse_one BEFORE INSERT ON access_events WHEN NEW.uuid = '${northOut.uuid}' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`,
    );
    try {
      await expect(uploads.apply(north, projectId, batch)).rejects.toThrow(/refused by the test/);
    } finally {
      store.db.exec(
        onPostgres()
          ? `${PG_VERBATIM}DROP TRIGGER refuse_one ON access_events; DROP FUNCTION refuse_one()`
          : 'DROP TRIGGER refuse_one',
      );
    }
    // The first slice is in, flagged on what the cloud held then; the second is not; no position claimed.
    expect(stored(northIn.uuid)).toEqual({ duplicate_of: southIn.uuid });
    expect(stored(other.uuid)).toBeDefined();
    expect(stored(northOut.uuid)).toBeUndefined();
    expect(edges.uploadedPosition(north.id)).toEqual(before);

    const again = await uploads.apply(north, projectId, batch);
    expect(again).toEqual({ accepted: 2, duplicates: 2, refused: 0 });
    expect(edges.uploadedPosition(north.id)).toEqual(feed.to);
    // North's exit sits between the two entries: the flag is cleared, its conflict kept as cleared.
    expect(stored(northIn.uuid)).toEqual({ duplicate_of: null });
    const listed = conflicts.list(projectId, { kind: 'duplicate_entry' }, 0, 100).items;
    expect(listed.map((c) => [c.event_id, c.cleared_at === null])).toEqual([[northIn.uuid, false]]);
    expect(store.db.prepare('SELECT COUNT(*) FROM access_events').pluck().get()).toBe(5);
  });
  it('stores the same outcomes whether a run is worked out before it is stored or after (property)', async () => {
    // A run whose events keep their scan times is worked out first and written once; one with a
    // corrected clock is stored first (upload-apply.ts). The same batches, once with the edges' clocks
    // in step and once 1 ms off (every effective time moved alike, so every order the same), must
    // end with the same counts, zones left, flags and conflicts.
    const event = fc.record({
      holder: fc.constantFrom(1, 2),
      zone: fc.constantFrom(1, 2),
      movement: fc.constantFrom<'in' | 'out'>('in', 'out'),
      second: fc.nat({ max: 12 }),
    });
    const batch = fc.record({
      edge: fc.constantFrom(0, 1),
      events: fc.array(event, { minLength: 1, maxLength: 6 }),
      again: fc.array(fc.nat(), { maxLength: 2 }), // earlier events sent again in this batch
    });
    const outcomes = async (
      batches: { edge: number; events: UploadedAccessEvent[] }[],
      sliceItems: number,
      offsetMs: number,
    ) => {
      clear();
      const apply = new UploadApply(
        store.db,
        systemClock,
        bus,
        new Occupancy(),
        index,
        conflicts,
        async () => {},
        edges,
        {
          sliceItems,
        },
      );
      const clock = { offset_ms: offsetMs, synchronised: offsetMs === 0 };
      for (const b of batches)
        await apply.apply(b.edge === 0 ? north : south, projectId, {
          clock,
          backlog: 0,
          items: b.events.map((e) => ({ ...e, clock_offset_ms: offsetMs, clock_synchronised: offsetMs === 0 })),
        });
      return {
        events: store.db
          .prepare(
            'SELECT uuid, counted, from_zone_id, duplicate_of, review, deleted_reference FROM access_events ORDER BY uuid',
          )
          .all(),
        conflicts: store.db
          .prepare(
            'SELECT kind, event_uuid, related_uuid, cleared_at IS NULL AS standing FROM sync_conflicts ORDER BY event_uuid, kind',
          )
          .all(),
      };
    };
    const seed = process.env.SEED ? Number(process.env.SEED) : Math.floor(Math.random() * 2 ** 31);
    console.log(`upload paths: seed ${seed} (SEED=${seed} runs it again)`);
    await fc.assert(
      fc.asyncProperty(
        fc.array(batch, { minLength: 1, maxLength: 4 }),
        fc.constantFrom(1, 3, 200),
        async (drawn, sliceItems) => {
          const sent: UploadedAccessEvent[] = [];
          const batches = drawn.map((b) => {
            const fresh = b.events.map((e) => {
              const made = movement(e.holder, e.movement, e.second);
              return { ...made, access_point_id: e.zone, access_zone_id: e.zone };
            });
            const again = sent.length > 0 ? b.again.map((n) => sent[n % sent.length]!) : [];
            sent.push(...fresh);
            return { edge: b.edge, events: [...fresh, ...again] };
          });
          const inStep = await outcomes(batches, sliceItems, 0);
          const off = await outcomes(batches, sliceItems, 1);
          expect(off).toEqual(inStep);
          expect(inStep.events).toHaveLength(sent.length);
        },
      ),
      { numRuns: onPostgres() ? 25 : 100, seed },
    );
  });
});
