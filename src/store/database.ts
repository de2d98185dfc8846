import { join, resolve } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import type { Logger } from '../logger.js';
import type { Migration } from './migration.js';
import { migrations } from './migrations.js';
import { PG_VERBATIM, PgDatabase } from './postgres/pg-database.js';
import { writeTransaction } from './transactions.js';
import { emptyTightened, privateDirectory, privateFile, privateIfExists, reportTightened } from './private-files.js';

export type Database = BetterSqlite3.Database;

export interface StoreOptions {
  dataDir: string;
  synchronous: 'NORMAL' | 'FULL';
  /** false: the appliance checkpoints from a worker (store/checkpointer.ts), never on a commit. */
  autoCheckpoint?: boolean;
  /** How long a write waits for another connection's write lock before it fails busy (default 5000). */
  busyTimeoutMs?: number;
  /** libpq's URL of a PostgreSQL database: the store is there, not in the data directory (the cloud role only). */
  databaseUrl?: string | null;
}

export const DB_FILE = 'gatehouse.db';

/** The local SQLite store: one file under the data directory, WAL mode, migrated on open.
 * synchronous=NORMAL survives a killed process; FULL also survives a power cut (docs/storage.md). */
export class Store {
  #db: Database | null = null;
  readonly file: string;
  /** The data directory (absolute). */
  readonly dir: string;

  constructor(
    private readonly options: StoreOptions,
    private readonly log: Logger,
  ) {
    this.dir = resolve(options.dataDir);
    this.file = join(this.dir, DB_FILE);
  }

  get db(): Database {
    if (!this.#db) throw new Error('store is not open');
    return this.#db;
  }

  get isOpen(): boolean {
    return this.#db?.open ?? false;
  }

  /** Whether the store is PostgreSQL (a cloud's; docs/decisions.md: the cloud on PostgreSQL). */
  get postgres(): boolean {
    return !!this.options.databaseUrl;
  }

  start(): void {
    if (this.options.databaseUrl) {
      const db = new PgDatabase(this.options.databaseUrl) as unknown as Database;
      this.#db = db;
      const applied = migrate(db, migrations);
      this.log.info(
        { database: redactedUrl(this.options.databaseUrl), applied, version: currentVersion(db) },
        'store open',
      );
      return;
    }
    // 0700 and 0600 whatever the umask (store/private-files.ts).
    const report = emptyTightened();
    privateDirectory(this.dir, report);
    privateFile(this.file, report);
    for (const suffix of ['-wal', '-shm']) privateIfExists(this.file + suffix, report);
    reportTightened(this.log, report);
    const db = new BetterSqlite3(this.file);
    // First, so that even switching to WAL waits for a writer in another process.
    db.pragma(`busy_timeout = ${this.options.busyTimeoutMs ?? 5000}`);
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${this.options.synchronous}`);
    db.pragma('foreign_keys = ON');
    if (this.options.autoCheckpoint === false) db.pragma('wal_autocheckpoint = 0');
    this.#db = db;
    const applied = migrate(db, migrations);
    this.log.info({ file: this.file, applied, version: currentVersion(db) }, 'store open');
  }

  stop(): void {
    if (!this.#db) return;
    this.#db.close();
    this.#db = null;
    this.log.info('store closed');
  }
}

function currentVersion(db: Database): number {
  return db.pragma('user_version', { simple: true }) as number;
}

/** Applies every migration above the stored user_version, each in its own transaction. The
 * version is read again under the write lock: a CLI command and the appliance opening the same
 * new file at once apply each migration once. */
export function migrate(db: Database, list: readonly Migration[]): number {
  let applied = 0;
  for (const migration of list) {
    if (migration.version <= currentVersion(db)) continue;
    const ran = writeTransaction(db, () => {
      if (migration.version <= currentVersion(db)) return false;
      // A PostgreSQL store runs a migration's own PostgreSQL form where it has one (store/migration.ts).
      db.exec(
        migration.postgres !== undefined && db instanceof PgDatabase ? PG_VERBATIM + migration.postgres : migration.sql,
      );
      db.pragma(`user_version = ${migration.version}`);
      return true;
    });
    if (ran) applied++;
  }
  return applied;
}

/** A database URL without its password, for the log. */
export function redactedUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return url.replace(/password=\S+/i, 'password=***');
  }
}
