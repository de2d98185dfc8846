import type { Clock } from '../clock.js';
import { iso } from '../clock.js';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import { writeTransaction } from '../store/transactions.js';
import { nextVersion } from '../venue/versioned-table.js';
import { type Change, REPLICATED } from './protocol.js';

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

export class Replica {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  /** Writes one downloaded page for the local project; answers how many rows and deletions. */
  apply(projectId: number, changes: readonly Change[], afterWrite?: () => void): { rows: number; deletions: number } {
    const counts = { rows: 0, deletions: 0 };
    if (changes.length === 0) {
      if (afterWrite) writeTransaction(this.db, afterWrite);
      return counts;
    }
    this.db.pragma('foreign_keys = OFF');
    try {
      writeTransaction(this.db, () => {
        for (const change of changes) {
          if (change.op === 'delete') {
            this.#delete(projectId, change);
            counts.deletions++;
          } else {
            this.#upsert(projectId, change);
            counts.rows++;
          }
        }
        afterWrite?.();
      });
    } finally {
      this.db.pragma('foreign_keys = ON');
    }
    return counts;
  }

  #upsert(projectId: number, change: Change): void {
    const { table, columns } = REPLICATED[change.entity];
    const data = change.data ?? {};
    const unique = UNIQUE[table];
    if (unique && data[unique] !== null && data[unique] !== undefined) {
      statement(this.db, `DELETE FROM ${table} WHERE project_id = ? AND ${unique} = ? AND id != ?`).run(projectId, data[unique] as string, change.id);
    }
    const version = nextVersion(this.db);
    const values = columns.map((c) => (data[c] === undefined ? null : (data[c] as string | number | null)));
    const created = (data.created_at as string | undefined) ?? iso(this.clock.now());
    const updated = (data.updated_at as string | undefined) ?? created;
    const sets = columns.map((c) => `${c} = excluded.${c}`).join(', ');
    statement(
      this.db,
      `INSERT INTO ${table} (id, project_id, ${columns.join(', ')}, version, created_at, updated_at) VALUES (?, ?, ${columns.map(() => '?').join(', ')}, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET ${sets}, version = excluded.version, updated_at = excluded.updated_at`,
    ).run(change.id, projectId, ...values, version, created, updated);
    if (change.entity === 'attendee_type') {
      statement(this.db, 'DELETE FROM attendee_type_zones WHERE attendee_type_id = ?').run(change.id);
      const insert = statement(this.db, 'INSERT OR IGNORE INTO attendee_type_zones (attendee_type_id, access_zone_id) VALUES (?, ?)');
      for (const zone of (data.zone_ids as number[] | undefined) ?? []) insert.run(change.id, zone);
    }
  }

  #delete(projectId: number, change: Change): void {
    const { table } = REPLICATED[change.entity];
    const gone = statement(this.db, `DELETE FROM ${table} WHERE project_id = ? AND id = ?`).run(projectId, change.id).changes;
    if (change.entity === 'access_zone') statement(this.db, 'DELETE FROM attendee_type_zones WHERE access_zone_id = ?').run(change.id);
    if (change.entity === 'attendee_type') statement(this.db, 'DELETE FROM attendee_type_zones WHERE attendee_type_id = ?').run(change.id);
    if (gone === 0) return;
    statement(this.db, 'INSERT INTO tombstones (project_id, entity, entity_id, version, deleted_at) VALUES (?, ?, ?, ?, ?)').run(
      projectId,
      change.entity,
      change.id,
      nextVersion(this.db),
      iso(this.clock.now()),
    );
  }
}
