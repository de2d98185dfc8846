import BetterSqlite3 from 'better-sqlite3';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isStoreBusy, readSnapshot, writeTransaction } from '../../src/store/transactions.js';

// Issue 22 item 6: every write transaction takes SQLite's write lock before it reads, so a
// commit by another connection in between (the journal's ingest worker, a CLI command) cannot
// fail it with SQLITE_BUSY_SNAPSHOT. Two real connections on a real WAL file.

const dirs: string[] = [];
afterEach(() =>
  dirs.splice(0).forEach((d) => {
    rmSync(d, { recursive: true, force: true });
  }),
);

function twoConnections(): [BetterSqlite3.Database, BetterSqlite3.Database] {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-tx-'));
  dirs.push(dir);
  const file = join(dir, 'store.db');
  const a = new BetterSqlite3(file);
  a.pragma('journal_mode = WAL');
  a.exec('CREATE TABLE counter (id INTEGER PRIMARY KEY, value INTEGER NOT NULL); INSERT INTO counter VALUES (1, 0);');
  const b = new BetterSqlite3(file);
  b.pragma('busy_timeout = 0'); // the other writer does not wait: it shows who holds the lock
  return [a, b];
}

const value = (db: BetterSqlite3.Database) =>
  (db.prepare('SELECT value FROM counter WHERE id = 1').get() as { value: number }).value;
const bump = (db: BetterSqlite3.Database) => db.prepare('UPDATE counter SET value = value + 1 WHERE id = 1').run();

describe('write transactions', () => {
  it('fails a deferred read-then-write when another connection commits in between (what writeTransaction prevents)', () => {
    const [a, b] = twoConnections();
    let failure: unknown = null;
    try {
      a.transaction(() => {
        const read = value(a);
        bump(b); // another connection commits after the read began
        a.prepare('UPDATE counter SET value = ? WHERE id = 1').run(read + 10);
      }).deferred();
    } catch (err) {
      failure = err;
    }
    expect((failure as { code?: string }).code).toBe('SQLITE_BUSY_SNAPSHOT');
    expect(isStoreBusy(failure)).toBe(true);
    expect(value(a)).toBe(1);
  });

  it('holds the write lock from before its first read, so what it read is still true when it writes', () => {
    const [a, b] = twoConnections();
    let other: unknown = null;
    const written = writeTransaction(a, () => {
      const read = value(a);
      try {
        bump(b);
      } catch (err) {
        other = err; // the other connection waits its turn (here: fails at once, busy_timeout 0)
      }
      a.prepare('UPDATE counter SET value = ? WHERE id = 1').run(read + 10);
      return read + 10;
    });
    expect(written).toBe(10);
    expect(isStoreBusy(other)).toBe(true);
    expect(value(b)).toBe(10);
    bump(b); // and writes once the transaction committed
    expect(value(a)).toBe(11);
  });

  it('rolls back everything when the function throws', () => {
    const [a] = twoConnections();
    expect(() =>
      writeTransaction(a, () => {
        bump(a);
        throw new Error('part-way');
      }),
    ).toThrow('part-way');
    expect(value(a)).toBe(0);
  });

  it('runs a read snapshot that refuses writes, and leaves the connection writable after', () => {
    const [a] = twoConnections();
    expect(readSnapshot(a, () => value(a))).toBe(0);
    expect(() => readSnapshot(a, () => bump(a))).toThrow(/readonly|read-only/i);
    bump(a);
    expect(value(a)).toBe(1);
  });

  it('tells a busy or locked store from other SQLite errors', () => {
    const [a] = twoConnections();
    let constraint: unknown = null;
    try {
      a.exec('INSERT INTO counter VALUES (1, 5)');
    } catch (err) {
      constraint = err;
    }
    expect((constraint as { code: string }).code).toMatch(/^SQLITE_CONSTRAINT/);
    expect(isStoreBusy(constraint)).toBe(false);
    expect(isStoreBusy(new Error('database is locked'))).toBe(false);
    expect(isStoreBusy(new BetterSqlite3.SqliteError('database table is locked', 'SQLITE_LOCKED'))).toBe(true);
  });
});

// Makes the rule above impossible to forget: src/ opens no transaction but through
// writeTransaction() / readSnapshot() (store/transactions.ts); worker threads use them too.

/** Each `.transaction(` call in `source` not followed by `.immediate(` or (in transactions.ts) `.deferred(`. */
function deferredTransactions(source: string): string[] {
  const found: string[] = [];
  for (const match of source.matchAll(/\.transaction\(/g)) {
    let depth = 0;
    let end = match.index + '.transaction'.length;
    for (; end < source.length; end++) {
      if (source[end] === '(') depth++;
      else if (source[end] === ')' && --depth === 0) break;
    }
    const after = source.slice(end + 1, end + 12);
    if (!after.startsWith('.immediate('))
      found.push(source.slice(match.index, Math.min(end + 12, match.index + 80)).replace(/\s+/g, ' '));
  }
  return found;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : [];
  });
}

describe('transactions in src/ and the wings', () => {
  it('finds a plain deferred transaction in source text, and takes an immediate one', () => {
    expect(deferredTransactions('const t = db.transaction(() => { f(g(1)); })();')).toHaveLength(1);
    expect(
      deferredTransactions('db.transaction((rows) => { for (const r of rows) insert.run(r); }).deferred(rows);'),
    ).toHaveLength(1);
    expect(
      deferredTransactions('const store = (rows) => db.transaction(() => { insert.run(rows); }).immediate();'),
    ).toEqual([]);
  });

  it('opens every write transaction with BEGIN IMMEDIATE', () => {
    const offenders: string[] = [];
    for (const file of ['src', 'sync', 'firmware-bridge'].flatMap(sourceFiles)) {
      const name = relative('src', file);
      const text = readFileSync(file, 'utf8');
      // The helpers themselves: writeTransaction is .immediate(); readSnapshot's .deferred() runs query_only.
      const found =
        name === join('store', 'transactions.ts')
          ? deferredTransactions(text).filter((t) => !t.includes('.deferred()'))
          : deferredTransactions(text);
      offenders.push(...found.map((t) => `${name}: ${t}`));
      // No hand-written BEGIN.
      for (const m of text.matchAll(/['"`]BEGIN(?: (DEFERRED|TRANSACTION|EXCLUSIVE))?['"`;]/g))
        offenders.push(`${name}: ${m[0]}`);
    }
    expect(offenders).toEqual([]);
  });
});
