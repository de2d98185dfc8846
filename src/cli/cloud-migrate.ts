import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import BetterSqlite3 from 'better-sqlite3';
import type { Config } from '../config/schema.js';
import { DB_FILE, type Database, migrate, redactedUrl } from '../store/database.js';
import { migrations } from '../store/migrations.js';
import { PgDatabase } from '../store/postgres/pg-database.js';
import { CliError } from './cli-error.js';
import { writeTransaction } from '../store/transactions.js';

// `gatehouse cloud migrate --to postgres://…` (docs/operations.md: moving a cloud to PostgreSQL):
// copies a stopped SQLite cloud into an empty PostgreSQL database, every row as it is: ids,
// change versions, the edges' tokens, cursors, id blocks and upload positions, so enrolled edges
// go on against the cloud on PostgreSQL without noticing (an edge sees a cloud that started again,
// checks what it holds, and finds nothing missing). The target gets this build's schema first and
// must hold nothing; the copy is one transaction, so a failure leaves it empty, and the command
// says which table and row it had reached. The counts are compared table by table before the
// commit.

export const cloudMigrateUsage = 'gatehouse cloud migrate --to postgres://user:password@host:5432/database';

export interface MigrateReport {
  from: string;
  to: string;
  tables: number;
  rows: number;
  copied: Record<string, number>;
  ms: number;
}

/** Rows per INSERT: few round trips, and well under PostgreSQL's 65,535 parameters for any of our tables. */
const BATCH = 500;

export async function runCloudMigrate(config: Readonly<Config>, args: string[]): Promise<MigrateReport> {
  const { values, positionals } = parseArgs({ args, options: { to: { type: 'string' } }, allowPositionals: true });
  if (positionals[0] !== 'migrate' || positionals.length !== 1 || !values.to)
    throw new CliError(`usage: ${cloudMigrateUsage}`);
  if (!/^postgres(ql)?:\/\/./.test(values.to))
    throw new CliError(`--to must be a PostgreSQL URL: ${cloudMigrateUsage}`);
  const file = join(resolve(config.dataDir), DB_FILE);
  if (!existsSync(file)) throw new CliError(`no SQLite store at ${file}: nothing to migrate (dataDir)`);
  const started = performance.now();
  const source = new BetterSqlite3(file, { readonly: true, fileMustExist: true });
  let target: PgDatabase | null = null;
  try {
    const version = source.pragma('user_version', { simple: true }) as number;
    const latest = migrations.at(-1)!.version;
    if (version !== latest)
      throw new CliError(
        `the SQLite store is at schema ${version}, this build's is ${latest}: start the cloud once with this build first`,
      );
    try {
      target = new PgDatabase(values.to);
    } catch (err) {
      throw new CliError(`cannot reach ${redactedUrl(values.to)}: ${(err as Error).message}`);
    }
    migrate(target as unknown as Database, migrations);
    const tables = tablesInOrder(source);
    // A table of one row (CHECK (id = 1)) holds the schema's own start (a sequence at 0): replaced by the source's.
    const singletons = new Set(
      tables.filter((t) =>
        /CHECK\s*\(\s*id\s*=\s*1\s*\)/i.test(
          source.prepare('SELECT sql FROM sqlite_master WHERE name = ?').pluck().get(t) as string,
        ),
      ),
    );
    const full = tables.filter((t) => !singletons.has(t) && count(target!, t) > 0);
    if (full.length > 0)
      throw new CliError(
        `${redactedUrl(values.to)} is not empty (${full.map((t) => `${t}: ${count(target!, t)} rows`).join(', ')}): nothing was copied. Migrate into a new, empty database.`,
      );
    const copied: Record<string, number> = {};
    const pg = target;
    let at = { table: '', row: 0 };
    try {
      writeTransaction(pg as unknown as Database, () => {
        for (const table of tables) {
          at = { table, row: 0 };
          if (singletons.has(table)) pg.prepare(`DELETE FROM ${table}`).run();
          copied[table] = copyTable(source, pg, table, (row) => (at.row = row));
          const landed = count(pg, table);
          if (landed !== copied[table])
            throw new Error(`${table}: ${copied[table]} rows read, ${landed} in PostgreSQL`);
        }
      });
    } catch (err) {
      throw new CliError(
        `the copy stopped at table ${at.table}, row ${at.row} (${(err as Error).message}); it was one transaction: nothing was kept in ${redactedUrl(values.to)}`,
      );
    }
    return {
      from: file,
      to: redactedUrl(values.to),
      tables: tables.length,
      rows: Object.values(copied).reduce((a, b) => a + b, 0),
      copied,
      ms: Math.round(performance.now() - started),
    };
  } finally {
    source.close();
    target?.close();
  }
}

/** The store's tables, each after the tables its foreign keys name (a table naming itself: rows in id order). */
function tablesInOrder(db: BetterSqlite3.Database): string[] {
  const names = db
    .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
    .pluck()
    .all() as string[];
  const needs = new Map(
    names.map((n) => [
      n,
      new Set(
        (db.prepare(`PRAGMA foreign_key_list(${n})`).all() as { table: string }[])
          .map((f) => f.table)
          .filter((t) => t !== n && names.includes(t)),
      ),
    ]),
  );
  const ordered: string[] = [];
  const placed = new Set<string>();
  while (ordered.length < names.length) {
    const next = names.find((n) => !placed.has(n) && [...needs.get(n)!].every((t) => placed.has(t)));
    if (!next) throw new Error(`foreign keys in a cycle among ${names.filter((n) => !placed.has(n)).join(', ')}`);
    ordered.push(next);
    placed.add(next);
  }
  return ordered;
}

function count(db: PgDatabase | BetterSqlite3.Database, table: string): number {
  return Number((db as PgDatabase).prepare(`SELECT count(*) AS n FROM ${table}`).pluck().get());
}

/** Copies one table's rows in id (or rowid) order, generated columns left to PostgreSQL; answers how many. */
function copyTable(
  source: BetterSqlite3.Database,
  target: PgDatabase,
  table: string,
  progress: (row: number) => void,
): number {
  const columns = (source.prepare(`PRAGMA table_xinfo(${table})`).all() as { name: string; hidden: number }[])
    .filter((c) => c.hidden === 0) // 2 and 3: generated columns
    .map((c) => c.name);
  const quoted = columns.map((c) => (c === 'offset' ? '"offset"' : c)).join(', ');
  const hasRowid = !(source.prepare(`SELECT sql FROM sqlite_master WHERE name = ?`).pluck().get(table) as string)
    .toUpperCase()
    .includes('WITHOUT ROWID');
  const rows = source
    .prepare(`SELECT ${quoted} FROM ${table}${hasRowid ? ' ORDER BY rowid' : ''}`)
    .raw(true)
    .iterate() as Iterable<unknown[]>;
  const insert = (n: number) =>
    target.prepare(
      `INSERT INTO ${table} (${quoted}) VALUES ${Array.from({ length: n }, () => `(${columns.map(() => '?').join(', ')})`).join(', ')}`,
    );
  let batch: unknown[] = [];
  let inBatch = 0;
  let done = 0;
  const flush = () => {
    if (inBatch === 0) return;
    insert(inBatch).run(...batch);
    done += inBatch;
    progress(done);
    batch = [];
    inBatch = 0;
  };
  for (const row of rows) {
    for (const v of row) batch.push(v);
    if (++inBatch === BATCH) flush();
  }
  flush();
  return done;
}
