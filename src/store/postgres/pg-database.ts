import { randomUUID } from 'node:crypto';
import BetterSqlite3 from 'better-sqlite3';
import { translate, translateSchema } from './dialect.js';
import { endConnection, type Native, native } from './libpq.js';
import { param, sqliteCode } from './sqlite-compat.js';

// The cloud's store on PostgreSQL (docs/decisions.md: the cloud on PostgreSQL), behind the part of
// better-sqlite3's interface the services use: prepare → run / get / all / iterate, pluck, raw;
// transaction(fn) with its immediate / deferred forms; exec; the pragmas the store reads. So every
// service, query and business rule is the one the SQLite store runs; nothing is written twice.
//
// It is synchronous, like better-sqlite3: libpq's synchronous calls (the pg-native package), one
// connection per process. A statement blocks the event loop for its round trip, about 30 µs on a
// local socket here, against ~55 µs per awaited query with the asynchronous driver (measured in
// docs/decisions.md), and SQLite's 1.5 µs. Writes hold one cluster-wide lock from their first
// statement (pg_advisory_xact_lock), as SQLite's BEGIN IMMEDIATE holds its file's: what a write
// transaction reads is still true when it writes, whichever instance runs it, so the numbering
// the services do (change versions, ids) stays what it is on SQLite. Reads are not serialised:
// a read transaction is REPEATABLE READ, one snapshot, as SQLite's.

/** Marks SQL written for PostgreSQL already (a migration's own form): exec runs it untranslated. */
export const PG_VERBATIM = '-- postgres\n';

/** What every write transaction's commit is announced on (LISTEN/NOTIFY), with the writing instance's id. */
export const CHANNEL = 'gatehouse_changes';

/** The lock every write transaction takes first: one writer at a time across the cluster. */
const WRITE_LOCK = 4_711_001;

const parsers: Record<number, (v: string) => unknown> = {
  16: (v) => (v === 't' ? 1 : 0), // bool: SQLite's 0/1
  17: (v) => Buffer.from(v.slice(2), 'hex'), // bytea ('\x…')
  20: Number, // int8: SQLite integers are JS numbers
  21: Number,
  23: Number,
  26: Number,
  700: Number,
  701: Number,
  1700: Number, // numeric (SUM, AVG)
};
const types = { getTypeParser: (oid: number) => parsers[oid] ?? ((v: string) => v) };

export interface RunResult {
  changes: number;
  lastInsertRowid: number;
}

export class PgDatabase {
  readonly #client: Native;
  #depth = 0;
  #writing = false;
  #readOnly = false;
  open = true;
  readonly memory = false;
  readonly readonly = false;
  /** table → its primary key's columns; table → the column SQLite would number (INTEGER PRIMARY KEY). */
  #keys = new Map<string, string[]>();
  #rowids = new Map<string, string>();

  /** This connection's instance, as its commits' notices name it: a notice of its own is not news. */
  readonly instance = randomUUID();

  constructor(readonly name: string) {
    const Client = native();
    this.#client = new Client({ types });
    this.#client.connectSync(name);
    this.#client.querySync('SET client_min_messages = warning');
    this.#client.querySync(
      `DO $$ BEGIN
         IF NOT EXISTS (SELECT 1 FROM pg_collation WHERE collname = 'nocase') THEN
           CREATE COLLATION nocase (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
         END IF;
       END $$`,
    );
    this.#client.querySync(
      'CREATE TABLE IF NOT EXISTS gatehouse_schema (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL)',
    );
    this.#client.querySync('INSERT INTO gatehouse_schema (id, version) VALUES (1, 0) ON CONFLICT DO NOTHING');
    this.#readSchema();
  }

  get inTransaction(): boolean {
    return this.#depth > 0;
  }

  prepare(sql: string): PgStatement {
    return new PgStatement(this, sql);
  }

  /** Schema statements (a migration), several at once. */
  exec(sql: string): this {
    const { text, rowids } = sql.startsWith(PG_VERBATIM)
      ? { text: sql, rowids: new Map<string, string>() }
      : translateSchema(sql);
    if (text.trim()) this.#sql(() => this.#client.querySync(text));
    for (const [table, column] of rowids) this.#numberRows(table, column);
    if (rowids.size > 0 || /\b(CREATE|ALTER|DROP)\b/i.test(text)) this.#readSchema();
    return this;
  }

  /** The pragmas the store and its helpers read or set; the others mean nothing here. */
  pragma(source: string, options: { simple?: boolean } = {}): unknown {
    const [name, value] = source.split('=').map((s) => s.trim().toLowerCase());
    let result: unknown = null;
    if (name === 'user_version') {
      if (value !== undefined) this.#client.querySync('UPDATE gatehouse_schema SET version = $1', [Number(value)]);
      else result = this.#client.querySync('SELECT version FROM gatehouse_schema')[0]!.version;
    } else if (name === 'query_only') {
      if (value !== undefined) this.#readOnly = value === 'on' || value === '1' || value === 'true';
      else result = this.#readOnly ? 1 : 0;
    } else if (name === 'busy_timeout') {
      result = value === undefined ? 5000 : null;
    } else if (name === 'data_version') {
      result = 0;
    }
    return options.simple ? result : result === null ? [] : [{ [name!]: result }];
  }

  transaction<T>(fn: () => T): ((...args: unknown[]) => T) & {
    immediate: () => T;
    deferred: () => T;
    exclusive: () => T;
  } {
    const run = (write: boolean) => () => this.#transaction(fn, write);
    const plain = run(true) as ((...args: unknown[]) => T) & {
      immediate: () => T;
      deferred: () => T;
      exclusive: () => T;
    };
    plain.immediate = run(true);
    plain.exclusive = run(true);
    plain.deferred = run(false);
    return plain;
  }

  /**
   * Whether this connection holds the cluster-wide lease `key` (a session advisory lock): taken when
   * free, held until this process's connection ends (a killed instance's lease is free at once).
   * Work one instance at a time must do (the webhook dispatcher) runs where it is held.
   */
  tryLease(key: number): boolean {
    if (this.#leases.has(key)) return true;
    const got = this.#client.querySync('SELECT pg_try_advisory_lock($1) AS got', [key])[0]!.got === 1;
    if (got) this.#leases.add(key);
    return got;
  }

  readonly #leases = new Set<number>();

  close(): this {
    if (this.open) {
      this.open = false;
      endConnection(this.#client);
    }
    return this;
  }

  // ---- for PgStatement

  /** The statement's translated text and the name it is prepared under on this connection. */
  prepared(sql: string): { name: string; names: string[] | null; count: number; returningRowid: string | null } {
    const known = this.#prepared.get(sql);
    if (known) return known;
    const { text, names, count } = translate(sql, (table) => this.#keys.get(table));
    // run() answers lastInsertRowid: an INSERT into a table SQLite would number says which id it took.
    const into = /^\s*INSERT\s+INTO\s+([A-Za-z_][A-Za-z0-9_]*)/i.exec(text);
    const rowid = into ? (this.#rowids.get(into[1]!) ?? null) : null;
    const returningRowid = rowid && !/\bRETURNING\b/i.test(text) ? rowid : null;
    const name = `s${this.#prepared.size + 1}`;
    this.#sql(() =>
      this.#client.prepareSync(name, returningRowid ? `${text} RETURNING ${returningRowid}` : text, count),
    );
    const entry = { name, names, count, returningRowid };
    this.#prepared.set(sql, entry);
    return entry;
  }

  readonly #prepared = new Map<
    string,
    { name: string; names: string[] | null; count: number; returningRowid: string | null }
  >();

  execute(name: string, values: unknown[], writes: boolean): { rows: Record<string, unknown>[]; changes: number } {
    if (writes && this.#readOnly) throw new Error('attempt to write a readonly database (a read transaction)');
    // A write outside a transaction is a transaction of its own, and takes the lock like any.
    if (writes && this.#depth === 0) return this.#transaction(() => this.execute(name, values, writes), true);
    if (writes && !this.#writing) {
      this.#client.querySync(`SELECT pg_advisory_xact_lock(${WRITE_LOCK})`);
      this.#writing = true;
    }
    const rows = this.#sql(() => this.#client.executeSync(name, values));
    const changes = Number(this.#client.pq.cmdTuples() || 0);
    return { rows, changes };
  }

  /** A statement's failure as better-sqlite3's (SqliteError and its code), so the services' handling of
   * a constraint, a value the store refuses or a busy store is the one they have for SQLite. */
  #sql<T>(fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      if (err instanceof BetterSqlite3.SqliteError) throw err;
      const state = this.#client.pq.resultErrorFields()?.sqlState ?? '';
      throw new BetterSqlite3.SqliteError((err as Error).message, sqliteCode(state));
    }
  }

  #transaction<T>(fn: () => T, write: boolean): T {
    if (this.#depth > 0) {
      const savepoint = `sp${this.#depth}`;
      this.#client.querySync(`SAVEPOINT ${savepoint}`);
      this.#depth++;
      try {
        const result = fn();
        this.#client.querySync(`RELEASE SAVEPOINT ${savepoint}`);
        return result;
      } catch (err) {
        this.#client.querySync(`ROLLBACK TO SAVEPOINT ${savepoint}`);
        throw err;
      } finally {
        this.#depth--;
      }
    }
    // Each pair of statements below is sent as one (a simple query carries several): a round trip
    // each is what a slice of work pays most for on PostgreSQL (docs/decisions.md).
    this.#depth = 1;
    try {
      // The lock before the first read, as BEGIN IMMEDIATE takes SQLite's: then READ COMMITTED reads
      // every write committed before it, and nothing commits beside it.
      this.#client.querySync(
        write
          ? `BEGIN ISOLATION LEVEL READ COMMITTED; SELECT pg_advisory_xact_lock(${WRITE_LOCK})`
          : 'BEGIN ISOLATION LEVEL REPEATABLE READ',
      );
      this.#writing = write;
      const result = fn();
      // Delivered at the commit, to every other instance listening (postgres/notifications.ts).
      this.#client.querySync(this.#writing ? `SELECT pg_notify('${CHANNEL}', '${this.instance}'); COMMIT` : 'COMMIT');
      return result;
    } catch (err) {
      this.#client.querySync('ROLLBACK');
      throw err;
    } finally {
      this.#depth = 0;
      this.#writing = false;
    }
  }

  /** SQLite numbers an INTEGER PRIMARY KEY left out of an INSERT with the highest plus one: so here,
   * by a trigger whose query is static (planned once: a dynamic one cost ~0.2 ms a row). */
  #numberRows(table: string, column: string): void {
    const fn = `gatehouse_rowid_${table}`;
    this.#client.querySync(
      `CREATE OR REPLACE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $f$
       BEGIN
         IF NEW.${column} IS NULL THEN
           SELECT COALESCE(MAX(${column}), 0) + 1 INTO NEW.${column} FROM ${table};
         END IF;
         RETURN NEW;
       END $f$`,
    );
    this.#client.querySync(`DROP TRIGGER IF EXISTS gatehouse_rowid ON ${table}`);
    this.#client.querySync(
      `CREATE TRIGGER gatehouse_rowid BEFORE INSERT ON ${table} FOR EACH ROW EXECUTE FUNCTION ${fn}()`,
    );
    this.#client.querySync(`COMMENT ON TRIGGER gatehouse_rowid ON ${table} IS '${column}'`);
  }

  #readSchema(): void {
    const keys = this.#client.querySync(
      `SELECT c.relname AS tbl, a.attname AS col
         FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace
         JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = ANY(i.indkey)
        WHERE i.indisprimary AND n.nspname = current_schema()
        ORDER BY c.relname, array_position(i.indkey, a.attnum)`,
    ) as { tbl: string; col: string }[];
    this.#keys = new Map();
    for (const k of keys) this.#keys.set(k.tbl, [...(this.#keys.get(k.tbl) ?? []), k.col]);
    const numbered = this.#client.querySync(
      `SELECT c.relname AS tbl, obj_description(t.oid, 'pg_trigger') AS col
         FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
        WHERE t.tgname = 'gatehouse_rowid'`,
    ) as { tbl: string; col: string }[];
    this.#rowids = new Map(numbered.map((r) => [r.tbl, r.col]));
    // A statement prepared before the schema changed may read another shape: prepared again.
    this.#prepared.clear();
    this.#client.querySync('DEALLOCATE ALL');
  }
}

export class PgStatement {
  #pluck = false;
  #raw = false;
  readonly reader: boolean;
  readonly #writes: boolean;

  constructor(
    private readonly db: PgDatabase,
    readonly source: string,
  ) {
    const head = source.trimStart().slice(0, 10).toUpperCase();
    this.reader = head.startsWith('SELECT') || head.startsWith('WITH') || /\bRETURNING\b/i.test(source);
    this.#writes = !(
      head.startsWith('SELECT') ||
      (head.startsWith('WITH') && !/\b(INSERT|UPDATE|DELETE)\b/i.test(source))
    );
  }

  pluck(on = true): this {
    this.#pluck = on;
    if (on) this.#raw = false;
    return this;
  }

  raw(on = true): this {
    this.#raw = on;
    if (on) this.#pluck = false;
    return this;
  }

  run(...args: unknown[]): RunResult {
    const { prepared, values } = this.#bind(args);
    const { rows, changes } = this.db.execute(prepared.name, values, this.#writes);
    const last = prepared.returningRowid ? rows.at(-1)?.[prepared.returningRowid] : undefined;
    return { changes, lastInsertRowid: typeof last === 'number' ? last : 0 };
  }

  get(...args: unknown[]): unknown {
    return this.#rows(args)[0];
  }

  all(...args: unknown[]): unknown[] {
    return this.#rows(args);
  }

  iterate(...args: unknown[]): IterableIterator<unknown> {
    return this.#rows(args)[Symbol.iterator]();
  }

  #rows(args: unknown[]): unknown[] {
    const { prepared, values } = this.#bind(args);
    const { rows } = this.db.execute(prepared.name, values, this.#writes);
    // An INSERT's own RETURNING of its id (for lastInsertRowid) is not the caller's: no rows, as SQLite.
    const shaped = prepared.returningRowid ? [] : rows;
    if (this.#pluck) return shaped.map((r) => Object.values(r as object)[0]);
    if (this.#raw) return shaped.map((r) => Object.values(r as object));
    return shaped;
  }

  #bind(args: unknown[]) {
    const prepared = this.db.prepared(this.source);
    let values: unknown[];
    if (prepared.names) {
      const named = (args[0] ?? {}) as Record<string, unknown>;
      values = prepared.names.map((n) => named[n]);
    } else values = args.length === 1 && Array.isArray(args[0]) ? (args[0] as unknown[]) : args;
    return { prepared, values: values.map(param) };
  }
}

/** Whether this store is PostgreSQL's (what reads a SQLite file in another thread cannot read it). */
export const isPostgres = (db: unknown): boolean => db instanceof PgDatabase;
