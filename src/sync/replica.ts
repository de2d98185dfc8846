import type { Clock } from '../clock.js';
import { iso } from '../clock.js';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import { writeWhenFree } from '../store/transactions.js';
import { type Change, type Entity, REPLICATED } from './protocol.js';

// The edge's copy of its cloud's reference data (issue 26 item 7). A downloaded page is written
// in one transaction, straight into the venue tables under the cloud's ids (shared ids:
// venue/row-ids.ts), each row taking a change version of the edge's own sequence, each
// deletion leaving a tombstone; then the external-changes reader (access/external-changes.ts)
// takes the new versions into the decision index, as it does for the CLI's writes. Nothing
// goes through commit(), so nothing downloaded enters the outbox and goes back up.
//
// Foreign keys are not enforced while a page is written: the stream is ordered by version,
// and a credential may arrive a page before the attendee whose newer version follows it. The
// replica is eventually consistent; the engine refuses a credential whose holder it does not
// know yet. What the schema's cascades would have done is done here (a deleted zone leaves
// the attendee types that granted it).

/** A unique column besides the id: the cloud's row wins over a different local row holding the same value. */
const UNIQUE: Record<string, string> = {
  access_zones: 'slug',
  access_points: 'slug',
  readers: 'identifier',
  attendee_types: 'slug',
  attendees: 'external_id',
  credentials: 'value',
};

type Statement = import('better-sqlite3').Statement<unknown[]>;

/** The statements of one entity, prepared once. */
interface EntityStatements {
  upsert: Statement;
  dropOther: Statement | null;
  remove: Statement;
}

export class Replica {
  readonly #statements = new Map<Entity, EntityStatements>();

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  /** Writes one downloaded page for the local project; answers how many rows and deletions.
   * The write waits for the lock without holding the event loop (store/transactions.ts). */
  async apply(projectId: number, changes: readonly Change[], afterWrite?: () => void): Promise<{ rows: number; deletions: number }> {
    const counts = { rows: 0, deletions: 0 };
    if (changes.length === 0) {
      if (afterWrite) await writeWhenFree(this.db, afterWrite);
      return counts;
    }
    await writeWhenFree(
      this.db,
      () => {
        counts.rows = 0;
        counts.deletions = 0;
        // One block of the edge's change versions for the page, as a bulk import takes.
        const end = statement(this.db, 'UPDATE change_sequence SET value = value + ? WHERE id = 1 RETURNING value').pluck().get(changes.length) as number;
        let version = end - changes.length + 1;
        const now = iso(this.clock.now());
        for (const change of changes) {
          if (change.op === 'delete') {
            this.#delete(projectId, change, version++, now);
            counts.deletions++;
          } else {
            this.#upsert(projectId, change, version++, now);
            counts.rows++;
          }
        }
        afterWrite?.();
      },
      { foreignKeys: false },
    );
    return counts;
  }

  #of(entity: Entity): EntityStatements {
    let prepared = this.#statements.get(entity);
    if (!prepared) {
      const { table, columns } = REPLICATED[entity];
      const unique = UNIQUE[table];
      prepared = {
        upsert: this.db.prepare(
          `INSERT INTO ${table} (id, project_id, ${columns.join(', ')}, version, created_at, updated_at) VALUES (?, ?, ${columns.map(() => '?').join(', ')}, ?, ?, ?)
           ON CONFLICT (id) DO UPDATE SET ${columns.map((c) => `${c} = excluded.${c}`).join(', ')}, version = excluded.version, updated_at = excluded.updated_at`,
        ),
        dropOther: unique ? this.db.prepare(`DELETE FROM ${table} WHERE project_id = ? AND ${unique} = ? AND id != ?`) : null,
        remove: this.db.prepare(`DELETE FROM ${table} WHERE project_id = ? AND id = ?`),
      };
      this.#statements.set(entity, prepared);
    }
    return prepared;
  }

  #upsert(projectId: number, change: Change, version: number, now: string): void {
    const { table, columns } = REPLICATED[change.entity];
    const data = change.data ?? {};
    const prepared = this.#of(change.entity);
    const values = columns.map((c) => (data[c] === undefined ? null : (data[c] as string | number | null)));
    const created = (data.created_at as string | undefined) ?? now;
    const updated = (data.updated_at as string | undefined) ?? created;
    const args = [change.id, projectId, ...values, version, created, updated];
    try {
      prepared.upsert.run(...args);
    } catch (err) {
      // The cloud's row wins over a different local row holding the same unique value.
      const unique = UNIQUE[table];
      if ((err as { code?: string }).code !== 'SQLITE_CONSTRAINT_UNIQUE' || !prepared.dropOther || data[unique!] == null) throw err;
      prepared.dropOther.run(projectId, data[unique!] as string, change.id);
      prepared.upsert.run(...args);
    }
    if (change.entity === 'attendee_type') {
      statement(this.db, 'DELETE FROM attendee_type_zones WHERE attendee_type_id = ?').run(change.id);
      const insert = statement(this.db, 'INSERT OR IGNORE INTO attendee_type_zones (attendee_type_id, access_zone_id) VALUES (?, ?)');
      for (const zone of (data.zone_ids as number[] | undefined) ?? []) insert.run(change.id, zone);
    }
  }

  #delete(projectId: number, change: Change, version: number, now: string): void {
    const gone = this.#of(change.entity).remove.run(projectId, change.id).changes;
    if (change.entity === 'access_zone') statement(this.db, 'DELETE FROM attendee_type_zones WHERE access_zone_id = ?').run(change.id);
    if (change.entity === 'attendee_type') statement(this.db, 'DELETE FROM attendee_type_zones WHERE attendee_type_id = ?').run(change.id);
    if (gone === 0) return;
    statement(this.db, 'INSERT INTO tombstones (project_id, entity, entity_id, version, deleted_at) VALUES (?, ?, ?, ?, ?)').run(projectId, change.entity, change.id, version, now);
  }
}
