import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { Store, migrate } from '../../src/store/database.js';
import { migrations } from '../../src/store/migrations.js';

const log = pino({ level: 'silent' });

describe('store', () => {
  const dirs: string[] = [];
  afterEach(() =>
    dirs.splice(0).forEach((d) => {
      rmSync(d, { recursive: true, force: true });
    }),
  );
  const dir = () => {
    const d = join(mkdtempSync(join(tmpdir(), 'gatehouse-store-')), 'nested', 'data');
    dirs.push(d);
    return d;
  };

  it('creates the data directory and the file on first open, in WAL mode, fully migrated', () => {
    const store = new Store({ dataDir: dir(), synchronous: 'NORMAL' }, log);
    store.start();
    expect(store.db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(store.db.pragma('synchronous', { simple: true })).toBe(1); // NORMAL
    expect(store.db.pragma('foreign_keys', { simple: true })).toBe(1);
    expect(store.db.pragma('user_version', { simple: true })).toBe(migrations.at(-1)!.version);
    store.stop();
    expect(store.isOpen).toBe(false);
  });

  it('honours synchronous = FULL for deployments that must survive a power cut', () => {
    const store = new Store({ dataDir: dir(), synchronous: 'FULL' }, log);
    store.start();
    expect(store.db.pragma('synchronous', { simple: true })).toBe(2);
    store.stop();
  });

  it('applies each migration once, and a failing migration leaves nothing half-written', () => {
    const d = dir();
    const store = new Store({ dataDir: d, synchronous: 'NORMAL' }, log);
    store.start();
    expect(migrate(store.db, migrations)).toBe(0);
    const broken = [
      ...migrations,
      { version: 999, name: 'broken', sql: 'CREATE TABLE half (id INTEGER); INSERT INTO nope VALUES (1);' },
    ];
    expect(() => migrate(store.db, broken)).toThrow(/no such table: nope/);
    expect(store.db.prepare("SELECT name FROM sqlite_master WHERE name = 'half'").get()).toBeUndefined();
    expect(store.db.pragma('user_version', { simple: true })).toBe(migrations.at(-1)!.version);
    store.stop();
  });

  it('runs the migrations in version order, and the conflicts table keeps its rows when migration 19 makes it again', () => {
    expect(migrations.map((m) => m.version)).toEqual(migrations.map((_, i) => i + 1));
    // A box at version 18 with a conflict on record (a plain SQLite file), then the rest.
    const folder = mkdtempSync(join(tmpdir(), 'gatehouse-migrate-'));
    dirs.push(folder);
    const db = new BetterSqlite3(join(folder, 'at-18.sqlite'));
    db.pragma('foreign_keys = ON');
    migrate(
      db,
      migrations.filter((m) => m.version <= 18),
    );
    db.prepare("INSERT INTO teams (id, name, slug, created_at, updated_at) VALUES (1, 'T', 't', 'x', 'x')").run();
    db.prepare(
      "INSERT INTO projects (id, team_id, name, slug, timezone, created_at, updated_at) VALUES (1, 1, 'P', 'p', 'UTC', 'x', 'x')",
    ).run();
    db.prepare(
      "INSERT INTO sync_conflicts (project_id, kind, edge_id, field, edge_value, cloud_value, created_at) VALUES (1, 'attendee_field', 2, 'email', '\"a\"', '\"b\"', 'then')",
    ).run();
    expect(() =>
      db.prepare("INSERT INTO sync_conflicts (project_id, kind, created_at) VALUES (1, 'refused_change', 'now')").run(),
    ).toThrow(/CHECK constraint failed/);
    expect(migrate(db, migrations)).toBe(migrations.length - 18);
    expect(
      db
        .prepare(
          'SELECT project_id, kind, edge_id, field, edge_value, cloud_value, detail, created_at FROM sync_conflicts',
        )
        .all(),
    ).toEqual([
      {
        project_id: 1,
        kind: 'attendee_field',
        edge_id: 2,
        field: 'email',
        edge_value: '"a"',
        cloud_value: '"b"',
        detail: null,
        created_at: 'then',
      },
    ]);
    db.prepare(
      "INSERT INTO sync_conflicts (project_id, kind, detail, created_at) VALUES (1, 'refused_change', 'why', 'now')",
    ).run();
    expect(
      db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'sync_conflicts'").pluck().all(),
    ).toContain('sync_conflicts_project');
    db.close();
  });

  it('migration 20 keeps the conflicts, detail included, and takes the new kinds and cleared_at', () => {
    const folder = mkdtempSync(join(tmpdir(), 'gatehouse-migrate-'));
    dirs.push(folder);
    const db = new BetterSqlite3(join(folder, 'at-19.sqlite'));
    db.pragma('foreign_keys = ON');
    migrate(
      db,
      migrations.filter((m) => m.version <= 19),
    );
    db.prepare("INSERT INTO teams (id, name, slug, created_at, updated_at) VALUES (1, 'T', 't', 'x', 'x')").run();
    db.prepare(
      "INSERT INTO projects (id, team_id, name, slug, timezone, created_at, updated_at) VALUES (1, 1, 'P', 'p', 'UTC', 'x', 'x')",
    ).run();
    db.prepare(
      "INSERT INTO sync_conflicts (project_id, kind, edge_id, detail, created_at, reviewed_at) VALUES (1, 'refused_change', 2, 'why', 'then', 'later')",
    ).run();
    expect(() =>
      db.prepare("INSERT INTO sync_conflicts (project_id, kind, created_at) VALUES (1, 'id_conflict', 'now')").run(),
    ).toThrow(/CHECK constraint failed/);
    expect(migrate(db, migrations)).toBe(migrations.filter((m) => m.version > 19).length);
    expect(
      db
        .prepare('SELECT project_id, kind, edge_id, detail, created_at, reviewed_at, cleared_at FROM sync_conflicts')
        .all(),
    ).toEqual([
      {
        project_id: 1,
        kind: 'refused_change',
        edge_id: 2,
        detail: 'why',
        created_at: 'then',
        reviewed_at: 'later',
        cleared_at: null,
      },
    ]);
    for (const kind of ['id_conflict', 'deleted_row', 'deleted_reference'])
      db.prepare("INSERT INTO sync_conflicts (project_id, kind, created_at) VALUES (1, ?, 'now')").run(kind);
    expect(() =>
      db.prepare("INSERT INTO sync_conflicts (project_id, kind, created_at) VALUES (1, 'nonsense', 'now')").run(),
    ).toThrow(/CHECK constraint failed/);
    db.close();
  });

  it('migration 22 seeds the id marks per table and block from the rows and the deletions on record', () => {
    const folder = mkdtempSync(join(tmpdir(), 'gatehouse-migrate-'));
    dirs.push(folder);
    const db = new BetterSqlite3(join(folder, 'at-20.sqlite'));
    migrate(
      db,
      migrations.filter((m) => m.version <= 20),
    );
    const block = 3 * 2 ** 32;
    db.prepare("INSERT INTO teams (id, name, slug, created_at, updated_at) VALUES (1, 'T', 't', 'x', 'x')").run();
    db.prepare(
      "INSERT INTO projects (id, team_id, name, slug, timezone, created_at, updated_at) VALUES (1, 1, 'P', 'p', 'UTC', 'x', 'x')",
    ).run();
    const attendee = db.prepare(
      "INSERT INTO attendees (id, project_id, first_name, last_name, status, extra, version, created_at, updated_at) VALUES (?, 1, 'A', '', 'active', '{}', 1, 'x', 'x')",
    );
    for (const id of [5, block + 1]) attendee.run(id);
    const tomb = db.prepare(
      "INSERT INTO tombstones (project_id, entity, entity_id, version, deleted_at) VALUES (1, ?, ?, 2, 'x')",
    );
    tomb.run('attendee', 9);
    tomb.run('attendee', block + 4);
    tomb.run('credential', block + 7);
    migrate(db, migrations);
    expect(
      db.prepare('SELECT table_name, block_base, high FROM row_id_marks ORDER BY table_name, block_base').all(),
    ).toEqual([
      { table_name: 'attendees', block_base: 0, high: 9 },
      { table_name: 'attendees', block_base: block, high: block + 4 },
      { table_name: 'credentials', block_base: block, high: block + 7 },
    ]);
    db.close();
  });

  it('migration 27 gives edges issued before it the first active administrator as issuer (none: no issuer, so suspended at first use)', () => {
    const folder = mkdtempSync(join(tmpdir(), 'gatehouse-migrate-'));
    dirs.push(folder);
    const at = (name: string) => {
      const db = new BetterSqlite3(join(folder, name));
      db.pragma('foreign_keys = ON');
      migrate(
        db,
        migrations.filter((m) => m.version < 27),
      );
      db.prepare("INSERT INTO teams (id, name, slug, created_at, updated_at) VALUES (1, 'T', 't', 'x', 'x')").run();
      db.prepare(
        "INSERT INTO projects (id, team_id, name, slug, timezone, created_at, updated_at) VALUES (1, 1, 'P', 'p', 'UTC', 'x', 'x')",
      ).run();
      return db;
    };
    const user = (db: BetterSqlite3.Database, id: number, admin: number, active: number) =>
      db
        .prepare(
          "INSERT INTO users (id, name, email, password_hash, is_admin, is_active, created_at, updated_at) VALUES (?, 'U', ?, '-', ?, ?, 'x', 'x')",
        )
        .run(id, `u${id}@example.test`, admin, active);
    const edge = (db: BetterSqlite3.Database) =>
      db
        .prepare("INSERT INTO sync_edges (project_id, name, token_hash, created_at) VALUES (1, 'north', x'00', 'x')")
        .run();

    const db = at('with-admins.sqlite');
    user(db, 1, 0, 1); // staff
    user(db, 2, 1, 0); // an administrator, deactivated
    user(db, 3, 1, 1);
    user(db, 4, 1, 1);
    edge(db);
    migrate(db, migrations);
    expect(db.prepare('SELECT issued_by, suspended_at, suspended_reason FROM sync_edges').all()).toEqual([
      { issued_by: 3, suspended_at: null, suspended_reason: null },
    ]);
    db.prepare('DELETE FROM users WHERE id = 3').run();
    expect(db.prepare('SELECT issued_by FROM sync_edges').pluck().get()).toBeNull(); // a deleted issuer leaves none
    db.close();

    const none = at('no-admin.sqlite');
    user(none, 1, 0, 1);
    edge(none);
    migrate(none, migrations);
    expect(none.prepare('SELECT issued_by FROM sync_edges').pluck().get()).toBeNull();
    none.close();
  });
});
