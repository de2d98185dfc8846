import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { Store } from '../../src/store/database.js';
import { migrations } from '../../src/store/migrations.js';
import { statement } from '../../src/store/statements.js';
import { readSnapshot, writeTransaction } from '../../src/store/transactions.js';
import { type Postgres, startPostgres } from '../helpers/postgres.js';

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
});
