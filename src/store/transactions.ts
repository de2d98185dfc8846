import BetterSqlite3 from 'better-sqlite3';

// How the appliance's code opens transactions (docs/storage.md, "Write
// transactions"). Other connections write the same file all the time: the journal's ingest
// worker, a CLI command, the demo seed. A deferred transaction (plain BEGIN, better-sqlite3's
// default) starts as a read; when another connection commits between its first read and its
// first write, SQLite cannot upgrade it (its snapshot is stale) and fails at once with
// SQLITE_BUSY_SNAPSHOT, which busy_timeout does not wait out: a REST write answered 500 under
// load. BEGIN IMMEDIATE takes the write lock before the first read, waiting busy_timeout for it,
// so what the transaction reads is still true when it writes. Every module writes through
// writeTransaction(); test/store/transactions.test.ts fails on a deferred transaction in src/.

type Database = BetterSqlite3.Database;

/** Runs `fn` in a transaction that holds SQLite's write lock from its start (BEGIN IMMEDIATE);
 * a throw rolls everything back. Inside another transaction it is a savepoint of that one. */
export function writeTransaction<T>(db: Database, fn: () => T): T {
  return db.transaction(fn).immediate();
}

/** Runs `fn` in one read transaction, so every query sees the same snapshot. The connection is
 * query_only meanwhile: a write in `fn` fails instead of silently making this a deferred write
 * transaction. Inside a transaction already open it simply runs `fn` there. */
export function readSnapshot<T>(db: Database, fn: () => T): T {
  if (db.inTransaction) return fn();
  db.pragma('query_only = ON');
  try {
    return db.transaction(fn).deferred();
  } finally {
    db.pragma('query_only = OFF');
  }
}

/** SQLite could not give this connection the lock it needed within busy_timeout (SQLITE_BUSY and
 * its extended codes: _SNAPSHOT, _RECOVERY, _TIMEOUT), or a table was locked (SQLITE_LOCKED*).
 * Not a bug of the request: the HTTP layer answers it 503 store_busy with Retry-After. */
export function isStoreBusy(err: unknown): err is InstanceType<typeof BetterSqlite3.SqliteError> {
  return err instanceof BetterSqlite3.SqliteError && /^SQLITE_(BUSY|LOCKED)(_|$)/.test(err.code);
}

/** Runs `work` every `ms` (unref'd): a housekeeping round that finds the store busy past its
 * busy timeout is skipped, the next round does it (docs/storage.md); any other error is thrown. */
export function everyUnlessBusy(work: () => unknown, ms: number): NodeJS.Timeout {
  return setInterval(() => {
    try {
      work();
    } catch (err) {
      if (!isStoreBusy(err)) throw err;
    }
  }, ms).unref();
}

/**
 * A write for background work on the main thread (sync) that must not hold the event loop while
 * another connection (the journal's ingest) has the lock: it tries at once, with busy_timeout
 * 0, and when the store is busy yields a few milliseconds and tries again, for up to
 * `maxWaitMs`; then the busy error is thrown. `fn` may run more than once: it must only write.
 */
export async function writeWhenFree<T>(
  db: Database,
  fn: () => T,
  options: { maxWaitMs?: number; foreignKeys?: boolean } = {},
): Promise<T> {
  const started = performance.now();
  for (let pause = 1; ; pause = Math.min(pause * 2, 20)) {
    const wait = db.pragma('busy_timeout', { simple: true }) as number;
    db.pragma('busy_timeout = 0');
    // foreignKeys: false turns enforcement off for this transaction only (a pragma outside it).
    if (options.foreignKeys === false) db.pragma('foreign_keys = OFF');
    try {
      return writeTransaction(db, fn);
    } catch (err) {
      if (!isStoreBusy(err) || performance.now() - started > (options.maxWaitMs ?? 10_000)) throw err;
    } finally {
      if (options.foreignKeys === false) db.pragma('foreign_keys = ON');
      db.pragma(`busy_timeout = ${wait}`);
    }
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}
