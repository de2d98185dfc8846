import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import BetterSqlite3 from 'better-sqlite3';
import type { Config } from '../config/schema.js';
import { foldJournalTail, journalPosition, readJournalTail } from '../journal/journal-tail.js';
import { DB_FILE } from '../store/database.js';
import { CliError } from './cli-error.js';

// `gatehouse backup <file>` (docs/operations.md: backups): a consistent copy of a box's SQLite
// store while the appliance runs and writes. SQLite's online backup API copies every page in one
// step, so within one read transaction (WAL: the writers go on); the access events answered but
// not yet ingested are taken from the journal into the copy (journal/journal-tail.ts), so the
// backup is one file with every decision answered before it began. It is written under a
// temporary name beside the target, checked, and renamed: the target's name never holds half a
// backup.

/** The rows a backup reports, so a restore can be checked against them. */
const COUNTED = ['access_events', 'attendees', 'credentials', 'users', 'projects', 'domain_events'] as const;

/** Pages per backup step: all of them, so the copy is one snapshot (a step restarts on a change). */
const ALL_PAGES = 0x7fffffff;

const backupUsage = 'gatehouse backup FILE [--force]';

export interface BackupReport {
  file: string;
  /** The source database. */
  source: string;
  bytes: number;
  pages: number;
  page_size: number;
  schema_version: number;
  /** When the journal was read: every decision answered and every change committed before it is in the backup. */
  taken_at: string;
  /** The whole run, and of it the copy (one read transaction on the box's store) and the integrity check. */
  ms: number;
  copy_ms: number;
  check_ms: number;
  integrity: 'ok';
  /** Access events answered but not yet in access_events when the copy was taken, added to it from the journal. */
  journal_events: number;
  /** Where a journal line could not be read (the rest of that segment is not in the backup). */
  journal_unreadable: { segment: number; offset: number }[];
  rows: Record<(typeof COUNTED)[number], number>;
  replaced: boolean;
  created_folder: string | null;
}

/** Refusals of the file system, worded for an operator. */
function reason(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  const words: Record<string, string> = {
    EACCES: 'permission denied',
    EPERM: 'operation not permitted',
    EROFS: 'read-only file system',
    ENOTDIR: 'a part of the path is a file, not a folder',
    ENOSPC: 'no space left on the device',
    EEXIST: 'it exists',
  };
  return e.code && words[e.code] ? `${words[e.code]} (${e.code})` : e.message;
}

/** The target, checked: refused when it exists (unless `force`) or is a folder; its folder made when missing. */
function prepareTarget(
  file: string,
  source: string,
  force: boolean,
): { target: string; replaced: boolean; created: string | null } {
  const target = resolve(file);
  if (target === source || target.startsWith(`${source}-`))
    throw new CliError(`${target} is the box's own database: write the backup somewhere else`);
  let replaced = false;
  if (existsSync(target)) {
    if (statSync(target).isDirectory()) throw new CliError(`${target} is a folder: name the backup file to write`);
    if (!force) throw new CliError(`${target} exists: give --force to replace it`);
    replaced = true;
  }
  const folder = dirname(target);
  let created: string | null = null;
  if (existsSync(folder) && !statSync(folder).isDirectory())
    throw new CliError(`cannot write the backup in ${folder}: it is a file, not a folder`);
  if (!existsSync(folder)) {
    try {
      // 0700: the backup holds what the data directory holds (docs/security.md).
      created = mkdirSync(folder, { recursive: true, mode: 0o700 }) ?? null;
    } catch (err) {
      throw new CliError(`cannot create the folder ${folder} for the backup: ${reason(err)}`);
    }
  }
  return { target, replaced, created };
}

/** The source store, opened without creating or migrating anything; refused when it is not a Gatehouse store. */
function openSource(source: string, busyTimeoutMs: number): BetterSqlite3.Database {
  if (!existsSync(source) || !statSync(source).isFile())
    throw new CliError(`no database at ${source}: give the box's data directory (--data-dir, GATEHOUSE_DATA_DIR)`);
  let db: BetterSqlite3.Database | null = null;
  try {
    db = new BetterSqlite3(source, { fileMustExist: true });
    db.pragma(`busy_timeout = ${busyTimeoutMs}`);
    const ours = db
      .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'event_journal_position'")
      .get();
    if (!ours) throw new CliError(`${source} is not a Gatehouse database (it has no event_journal_position table)`);
    return db;
  } catch (err) {
    db?.close();
    if (err instanceof CliError) throw err;
    throw new CliError(`cannot read ${source}: ${(err as Error).message}`);
  }
}

function fsyncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Checks the copy, folds the journal's tail into it, and counts what it holds. */
function finishCopy(temporary: string, tail: ReturnType<typeof readJournalTail>) {
  const copy = new BetterSqlite3(temporary, { fileMustExist: true });
  try {
    // One self-contained file (the source's header says WAL; the box that opens it sets WAL again).
    copy.pragma('journal_mode = DELETE');
    const folded = foldJournalTail(copy, tail.lines);
    const problems = (copy.pragma('integrity_check') as { integrity_check: string }[]).map((r) => r.integrity_check);
    if (problems.length !== 1 || problems[0] !== 'ok')
      throw new CliError(`the copy failed SQLite's integrity check: ${problems.slice(0, 5).join('; ')}`);
    const rows = {} as BackupReport['rows'];
    for (const table of COUNTED)
      rows[table] = (copy.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n;
    return {
      folded,
      rows,
      pages: copy.pragma('page_count', { simple: true }) as number,
      pageSize: copy.pragma('page_size', { simple: true }) as number,
      version: copy.pragma('user_version', { simple: true }) as number,
    };
  } finally {
    copy.close();
  }
}

/** Writes the backup; answers what it did. */
export async function runBackup(config: Readonly<Config>, args: string[]): Promise<BackupReport> {
  const { values, positionals } = parseArgs({
    args,
    options: { force: { type: 'boolean' } },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length !== 1) throw new CliError(`name one file to write the backup to: ${backupUsage}`);
  if (config.databaseUrl)
    throw new CliError(
      "this cloud's store is PostgreSQL (databaseUrl): back it up with pg_dump or point-in-time recovery (docs/operations.md: PostgreSQL)",
    );
  const started = performance.now();
  const source = join(resolve(config.dataDir), DB_FILE);
  const db = openSource(source, config.store.busyTimeoutMs);
  let temporary = '';
  try {
    const { target, replaced, created } = prepareTarget(positionals[0]!, source, values.force ?? false);
    const name = join(dirname(target), `.${basename(target)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
    try {
      closeSync(openSync(name, 'wx', 0o600)); // 0600 from the start: the copy holds secrets' hashes
    } catch (err) {
      throw new CliError(`cannot write the backup in ${dirname(target)}: ${reason(err)}`);
    }
    temporary = name;
    const takenAt = new Date();
    const tail = readJournalTail(join(resolve(config.dataDir), 'journal'), journalPosition(db));
    const copying = performance.now();
    await db.backup(temporary, { progress: () => ALL_PAGES });
    db.close();
    const checking = performance.now();
    const copy = finishCopy(temporary, tail);
    const checked = performance.now();
    fsyncPath(temporary);
    renameSync(temporary, target);
    fsyncPath(dirname(target));
    return {
      file: target,
      source,
      bytes: statSync(target).size,
      pages: copy.pages,
      page_size: copy.pageSize,
      schema_version: copy.version,
      taken_at: takenAt.toISOString(),
      ms: Math.round(performance.now() - started),
      copy_ms: Math.round(checking - copying),
      check_ms: Math.round(checked - checking),
      integrity: 'ok',
      journal_events: copy.folded.events,
      journal_unreadable: tail.unreadable,
      rows: copy.rows,
      replaced,
      created_folder: created,
    };
  } catch (err) {
    if (temporary) for (const suffix of ['', '-journal', '-wal', '-shm']) rmSync(temporary + suffix, { force: true });
    if (err instanceof CliError) throw err;
    // The file system or SQLite refused (a full disk, an I/O error): said on one line. Anything else is a bug.
    if ((err as NodeJS.ErrnoException).code !== undefined)
      throw new CliError(`backup failed, nothing written: ${reason(err)}`);
    throw err;
  } finally {
    if (db.open) db.close();
  }
}
