import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
    const broken = [...migrations, { version: 999, name: 'broken', sql: 'CREATE TABLE half (id INTEGER); INSERT INTO nope VALUES (1);' }];
    expect(() => migrate(store.db, broken)).toThrow(/no such table: nope/);
    expect(store.db.prepare("SELECT name FROM sqlite_master WHERE name = 'half'").get()).toBeUndefined();
    expect(store.db.pragma('user_version', { simple: true })).toBe(migrations.at(-1)!.version);
    store.stop();
  });
});
