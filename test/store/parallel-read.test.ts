import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { seedVenue } from '../../bench/fixtures.js';
import { VenueIndex } from '../../src/access/venue-index.js';
import { Store } from '../../src/store/database.js';
import { type ChunkMessage, readChunks } from '../../src/store/chunked-read.js';
import { readInParallel } from '../../src/store/parallel-read.js';

const log = pino({ level: 'silent' });

describe('reading tables in a worker thread', () => {
  const dirs: string[] = [];
  afterEach(() =>
    dirs.splice(0).forEach((d) => {
      rmSync(d, { recursive: true, force: true });
    }),
  );
  const seeded = (attendees: number) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-parallel-'));
    dirs.push(dataDir);
    const store = new Store({ dataDir, synchronous: 'NORMAL' }, log);
    store.start();
    store.db.prepare("INSERT INTO teams (name, slug, created_at, updated_at) VALUES ('T', 't', 'x', 'x')").run();
    store.db
      .prepare(
        "INSERT INTO projects (team_id, name, slug, timezone, created_at, updated_at) VALUES (1, 'P', 'p', 'UTC', 'x', 'x')",
      )
      .run();
    seedVenue(store.db, 1, attendees, 2, { keepValues: false });
    return store;
  };

  it('yields every row of each query in id order, across many chunks', () => {
    const store = seeded(25_000); // 50k credentials: three chunks
    const read = readInParallel(store.db.name, [
      { table: 'credentials', columns: ['id', 'value'], after: 10 },
      { table: 'attendees', columns: ['id', 'first_name'], after: 0 },
    ]);
    const credentials = [...read.rows(0)];
    const attendees = [...read.rows(1)];
    expect(credentials).toEqual(
      store.db.prepare('SELECT id, value FROM credentials WHERE id > 10 ORDER BY id').raw(true).all(),
    );
    expect(attendees.length).toBe(25_000);
    expect(attendees[24_999]).toEqual(
      store.db.prepare('SELECT id, first_name FROM attendees ORDER BY id DESC LIMIT 1').raw(true).get(),
    );
    store.stop();
  });

  it('reports a query the worker cannot run as an error, not a hang', () => {
    const store = seeded(10);
    const read = readInParallel(store.db.name, [{ table: 'credentials', columns: ['id', 'nonsense'], after: 0 }]);
    expect(() => [...read.rows(0)]).toThrow(/reading in a worker failed: .*nonsense/);
    const missing = readInParallel(join(dirs[0]!, 'no-such.db'), [{ table: 'credentials', columns: ['id'], after: 0 }]);
    expect(() => [...missing.rows(0)]).toThrow(/reading in a worker failed/);
    store.stop();
  });

  it('loads the same venue index from a file (two threads) as from memory (one)', () => {
    const store = seeded(30_000);
    // Some credentials with validity, revoked, and an attendee without a type, so every column matters.
    store.db
      .prepare(
        "UPDATE credentials SET valid_from = '2026-01-01T00:00:00.000Z', valid_until = '2026-02-01T00:00:00.000Z' WHERE id % 7 = 0",
      )
      .run();
    store.db
      .prepare("UPDATE credentials SET status = 'revoked', revoked_at = '2026-01-15T00:00:00.000Z' WHERE id % 11 = 0")
      .run();
    store.db.prepare("UPDATE attendees SET attendee_type_id = NULL, status = 'cancelled' WHERE id % 13 = 0").run();
    const fromFile = new VenueIndex(store.db);
    fromFile.load();
    const image = store.db.serialize();
    image[18] = image[19] = 1; // a rollback-journal header: an in-memory database cannot be in WAL mode
    const memory = new Database(image);
    const fromMemory = new VenueIndex(memory);
    fromMemory.load();
    expect(fromFile.credentialCount).toBe(60_000);
    expect([...fromFile.credentialsById.entries()].sort((a, b) => a[0] - b[0])).toEqual(
      [...fromMemory.credentialsById.entries()].sort((a, b) => a[0] - b[0]),
    );
    expect([...fromFile.attendees.entries()].sort((a, b) => a[0] - b[0])).toEqual(
      [...fromMemory.attendees.entries()].sort((a, b) => a[0] - b[0]),
    );
    const last = store.db.prepare('SELECT id, value FROM credentials ORDER BY id DESC LIMIT 1').get() as {
      id: number;
      value: string;
    };
    expect(fromFile.credential(1, last.value)?.id).toBe(last.id);
    memory.close();
    store.stop();
  });
});

describe('chunked read (the parallel reader thread, in this thread)', () => {
  it('posts each query as JSON chunks of at most `chunk` rows in id order, then its end', () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-chunks-'));
    const store = new Store({ dataDir, synchronous: 'NORMAL' }, log);
    store.start();
    try {
      const team = store.db.prepare("INSERT INTO teams (name, slug, created_at, updated_at) VALUES ('T', ?, 'x', 'x')");
      for (let i = 0; i < 5; i++) team.run(`t${i}`);
      const posted: ChunkMessage[] = [];
      readChunks(
        {
          file: store.file,
          chunk: 2,
          queries: [
            { table: 'teams', columns: ['id', 'slug'], after: 1 },
            { table: 'teams', columns: ['id'], after: 4 },
          ],
        },
        (m) => posted.push(m),
      );
      expect(posted).toEqual([
        JSON.stringify([
          [2, 't1'],
          [3, 't2'],
        ]),
        JSON.stringify([
          [4, 't3'],
          [5, 't4'],
        ]),
        { end: 0 },
        JSON.stringify([[5]]),
        { end: 1 },
      ]);
      const failed: ChunkMessage[] = [];
      readChunks(
        { file: store.file, chunk: 2, queries: [{ table: 'no_such_table', columns: ['id'], after: 0 }] },
        (m) => failed.push(m),
      );
      expect(failed).toEqual([{ error: expect.stringMatching(/no such table/) }]);
    } finally {
      store.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
