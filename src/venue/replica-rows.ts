import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import { writeTombstone } from './versioned-table.js';

// The venue tables' writes of an edge's replica (sync/replica.ts): rows downloaded from the
// cloud, written under the cloud's ids (shared ids: row-ids.ts) with a change version of the
// edge's own sequence (the replica takes one block per page: versioned-table.ts), each deletion
// leaving a tombstone. Which changes to write, and what the decision index is told, is the
// replica's; how a downloaded row lands in its table is here, with the venue's other writes.

/** A replicated entity's table and the columns a change carries (sync/protocol.ts REPLICATED). */
export interface ReplicatedTable {
  table: string;
  columns: readonly string[];
  /** A column's value when the change lacks it (a cloud older than the column). */
  absent?: Readonly<Record<string, number>>;
}

/** A unique column besides the id: the cloud's row wins over a different local row holding the same value. */
const UNIQUE: Record<string, string | null> = {
  access_zones: 'slug',
  access_points: 'slug',
  readers: 'identifier',
  attendee_types: 'slug',
  attendees: 'external_id',
  credentials: 'value',
  time_restrictions: null,
  blocklist_entries: null,
  credential_keys: null,
};

type Statement = import('better-sqlite3').Statement<unknown[]>;

/** The statements of one table, prepared once (a pull writes 300,000 rows). */
interface TableStatements {
  upsert: Statement;
  /** Returns the ids it removed. */
  dropOther: Statement | null;
  remove: Statement;
}

export class ReplicaRows {
  readonly #statements = new Map<string, TableStatements>();

  constructor(private readonly db: Database) {}

  /**
   * Writes the cloud's row `id` of `entity` (its `data`: the columns, created_at, updated_at) with
   * `version`; answers the ids of other rows it removed because they held one of its unique values.
   */
  upsert(
    projectId: number,
    entity: string,
    spec: ReplicatedTable,
    id: number,
    data: Record<string, unknown>,
    version: number,
    now: string,
  ): number[] {
    const { table, columns, absent } = spec;
    const prepared = this.#of(spec);
    // id, project_id, the columns (null when absent, or the entity's `absent` value), version,
    // created_at, updated_at: one array, filled in place (300,000 rows a pull).
    const n = columns.length;
    const args: unknown[] = new Array(n + 5);
    args[0] = id;
    args[1] = projectId;
    for (let i = 0; i < n; i++) args[i + 2] = data[columns[i]!] ?? absent?.[columns[i]!] ?? null;
    const created = (data.created_at as string | undefined) ?? now;
    args[n + 2] = version;
    args[n + 3] = created;
    args[n + 4] = (data.updated_at as string | undefined) ?? created;
    let dropped: number[] = [];
    try {
      prepared.upsert.run(...args);
    } catch (err) {
      // A project's new signing key may arrive before its predecessor's demotion (one signing key a
      // project): the older one verifies meanwhile, as its own newer change will say. private_key
      // is never written here: an edge holds public keys only.
      if (table === 'credential_keys' && (err as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') {
        statement(
          this.db,
          "UPDATE credential_keys SET status = 'verifying' WHERE project_id = ? AND status = 'signing' AND id != ?",
        ).run(projectId, id);
        prepared.upsert.run(...args);
        return dropped;
      }
      // The cloud's row wins over a different local row holding the same unique value.
      const unique = UNIQUE[table];
      if (
        (err as { code?: string }).code !== 'SQLITE_CONSTRAINT_UNIQUE' ||
        !prepared.dropOther ||
        data[unique!] == null
      )
        throw err;
      dropped = prepared.dropOther.all(projectId, data[unique!] as string, id) as number[];
      prepared.upsert.run(...args);
    }
    if (entity === 'attendee_type') {
      statement(this.db, 'DELETE FROM attendee_type_zones WHERE attendee_type_id = ?').run(id);
      const insert = statement(
        this.db,
        'INSERT OR IGNORE INTO attendee_type_zones (attendee_type_id, access_zone_id) VALUES (?, ?)',
      );
      for (const zone of (data.zone_ids as number[] | undefined) ?? []) insert.run(id, zone);
    }
    return dropped;
  }

  /** Deletes the row (and, for a zone or a type, its grants, as the schema's cascades would); answers whether there
   * was a row, whose tombstone then carries `version`. */
  delete(projectId: number, entity: string, spec: ReplicatedTable, id: number, version: number, now: string): boolean {
    const gone = this.#of(spec).remove.run(projectId, id).changes;
    if (entity === 'access_zone')
      statement(this.db, 'DELETE FROM attendee_type_zones WHERE access_zone_id = ?').run(id);
    if (entity === 'attendee_type')
      statement(this.db, 'DELETE FROM attendee_type_zones WHERE attendee_type_id = ?').run(id);
    if (gone === 0) return false;
    writeTombstone(this.db, projectId, entity, id, version, now);
    return true;
  }

  #of(spec: ReplicatedTable): TableStatements {
    const { table, columns } = spec;
    let prepared = this.#statements.get(table);
    if (!prepared) {
      // Only the venue's replicated tables: the table name is the caller's.
      if (!(table in UNIQUE)) throw new Error(`${table} is not a replicated venue table`);
      const unique = UNIQUE[table];
      prepared = {
        upsert: this.db.prepare(
          `INSERT INTO ${table} (id, project_id, ${columns.join(', ')}, version, created_at, updated_at) VALUES (?, ?, ${columns.map(() => '?').join(', ')}, ?, ?, ?)
           ON CONFLICT (id) DO UPDATE SET ${columns.map((c) => `${c} = excluded.${c}`).join(', ')}, version = excluded.version, updated_at = excluded.updated_at`,
        ),
        dropOther: unique
          ? this.db
              .prepare(`DELETE FROM ${table} WHERE project_id = ? AND ${unique} = ? AND id != ? RETURNING id`)
              .pluck()
          : null,
        remove: this.db.prepare(`DELETE FROM ${table} WHERE project_id = ? AND id = ?`),
      };
      this.#statements.set(table, prepared);
    }
    return prepared;
  }
}
