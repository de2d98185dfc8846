import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { PgNotifications } from '../../src/store/postgres/notifications.js';
import { PgDatabase } from '../../src/store/postgres/pg-database.js';
import { pino } from 'pino';
import { Store } from '../../src/store/database.js';
import { migrations } from '../../src/store/migrations.js';
import { statement } from '../../src/store/statements.js';
import { readSnapshot, writeTransaction } from '../../src/store/transactions.js';
import { type Postgres, startPostgres } from '../helpers/postgres.js';
import { fixtureBundle } from '../helpers/fixture-bundle.js';

describe('the store on PostgreSQL', () => {
  let pg: Postgres;
  beforeAll(() => {
    pg = startPostgres();
  }, 60_000);
  afterAll(() => pg?.stop());

  it('applies every migration to an empty database, and none again', () => {
    const url = pg.database();
    const store = new Store(
      { dataDir: '/nonexistent', synchronous: 'NORMAL', databaseUrl: url },
      pino({ level: 'silent' }),
    );
    store.start();
    expect(store.db.pragma('user_version', { simple: true })).toBe(migrations.at(-1)!.version);
    store.stop();
    const again = new Store(
      { dataDir: '/nonexistent', synchronous: 'NORMAL', databaseUrl: url },
      pino({ level: 'silent' }),
    );
    again.start();
    const db = again.db;
    // Numbered as SQLite numbers an INTEGER PRIMARY KEY, lastInsertRowid included.
    const t = writeTransaction(db, () => {
      const a = statement(db, "INSERT INTO teams (name, slug, created_at, updated_at) VALUES (?, ?, 'x', 'x')").run(
        'A',
        'a',
      );
      const b = statement(db, "INSERT INTO teams (name, slug, created_at, updated_at) VALUES (?, ?, 'x', 'x')").run(
        'B',
        'b',
      );
      return [a.lastInsertRowid, b.lastInsertRowid];
    });
    expect(Number(t[1])).toBe(Number(t[0]) + 1);
    expect(readSnapshot(db, () => statement(db, 'SELECT count(*) FROM teams').pluck().get())).toBe(2);
    expect(statement(db, 'SELECT name FROM teams WHERE slug = @slug').get({ slug: 'b' })).toEqual({ name: 'B' });
    again.stop();
  }, 60_000);

  it("hears another instance's commits, not its own, and only once they commit", async () => {
    const url = pg.database();
    const a = new PgDatabase(url);
    const b = new PgDatabase(url);
    let heard = 0;
    const notices = new PgNotifications(a, () => heard++, pino({ level: 'silent' }));
    notices.start();
    try {
      // Listening once the connection is up (its LISTEN runs asynchronously).
      await vi.waitFor(() => {
        b.transaction(() => b.prepare('UPDATE gatehouse_schema SET version = version').run())();
        expect(heard).toBeGreaterThan(0);
      }, 10_000);
      // The attempts' notices may still be on their way: counted once they are all in.
      await new Promise((r) => setTimeout(r, 500));
      const before = heard;
      a.transaction(() => a.prepare('UPDATE gatehouse_schema SET version = version').run())(); // its own
      expect(() =>
        b.transaction(() => {
          b.prepare('UPDATE gatehouse_schema SET version = version').run();
          throw new Error('rolled back');
        })(),
      ).toThrow('rolled back');
      b.prepare('SELECT 1').get(); // a read: no commit of a write
      await new Promise((r) => setTimeout(r, 300));
      expect(heard).toBe(before);
      b.transaction(() => b.prepare('UPDATE gatehouse_schema SET version = version').run())();
      await vi.waitFor(() => expect(heard).toBe(before + 1), 10_000);
    } finally {
      notices.stop();
      a.close();
      b.close();
    }
  }, 60_000);

  it('survives connections opened and closed with the garbage collector running between them', async () => {
    // The process aborted in libuv when a closed connection's object was collected too soon.
    const bundle = await fixtureBundle('pg-connections');
    const url = pg.database();
    const run = spawnSync(process.execPath, ['--expose-gc', bundle, url, '150'], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    expect(run.stderr).not.toMatch(/Assertion/);
    expect({ status: run.status, signal: run.signal }).toEqual({ status: 0, signal: null });
    expect(JSON.parse(run.stdout)).toEqual({ closed: 150 });
  }, 150_000);
});
