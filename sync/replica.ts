import type { WrittenChange } from '../src/access/changed-rows.js';
import type { ExternalChanges } from '../src/access/external-changes.js';
import type { Clock } from '../src/clock.js';
import { iso } from '../src/clock.js';
import type { Database } from '../src/store/database.js';
import { statement } from '../src/store/statements.js';
import { writeWhenFree } from '../src/store/transactions.js';
import { ReplicaRows } from '../src/venue/replica-rows.js';
import { reserveVersions } from '../src/venue/versioned-table.js';
import { type Change, type Entity, REPLICATED } from './protocol.js';

// The edge's copy of its cloud's reference data (docs/sync.md). A downloaded page is written in one
// transaction, straight into the venue tables under the cloud's ids (shared ids: venue/row-ids.ts),
// each row taking a change version of the edge's own sequence, each deletion leaving a tombstone
// (the rows' writes: venue/replica-rows.ts). Once the page has committed, the decision index takes
// what was written, before anything else runs (access/external-changes.ts#written): the deletions,
// and the attendees and credentials from the values written, so a pull's 300,000 rows are not read
// back; the versions count as this process's, so the poll for other processes' writes skips them.
// Nothing goes through commit(), so nothing downloaded enters the outbox and goes back up.
//
// A change is applied only when its cloud version is newer than the one the edge holds for the
// row, whichever path brought it (changes or revocations: two loops, each page its own
// transaction, so a page fetched before a revocation may be written after it). replica_versions
// keeps, per (entity, id), the newest cloud version applied, a deletion's included: an older
// upsert never brings back a row a newer change deleted, an older delete never removes a newer
// row. A row with none held is taken: one never downloaded, an edge's own row coming back, every
// row of an edge upgraded in place. One UPSERT both checks and records (no SELECT per row); what
// it leaves alone is not written, so the index is not told of it.
//
// Foreign keys are not enforced while a page is written: the stream is ordered by version,
// and a credential may arrive a page before the attendee whose newer version follows it. The
// replica is eventually consistent; the engine refuses a credential whose holder it does not
// know yet. What the schema's cascades would have done is done there (a deleted zone leaves
// the attendee types that granted it).

/** The columns the index takes of an attendee and a credential (changed-rows.ts: ATTENDEE_COLUMNS,
 * CREDENTIAL_COLUMNS besides id, project_id, version), with the type of value SQLite stores there. */
const INDEXED: Partial<Record<Entity, readonly (readonly [column: string, type: 'text' | 'integer'])[]>> = {
  attendee: [
    ['attendee_type_id', 'integer'],
    ['first_name', 'text'],
    ['last_name', 'text'],
    ['status', 'text'],
  ],
  credential: [
    ['attendee_id', 'integer'],
    ['value', 'text'],
    ['status', 'text'],
    ['valid_from', 'text'],
    ['valid_until', 'text'],
    ['revoked_at', 'text'],
  ],
};

/** An attendee's or a credential's row as the upsert stored it, for the index; undefined for
 * other entities, and when a value is not of its column's type (SQLite would have converted it:
 * that row is read back instead). Not the upsert's RETURNING: it cost more than reading back. */
function asStored(change: Change, version: number): WrittenChange['row'] {
  const indexed = INDEXED[change.entity];
  if (!indexed) return undefined;
  const data = change.data ?? {};
  const row: NonNullable<WrittenChange['row']> = { id: change.id, version };
  for (const [column, type] of indexed) {
    const value = data[column] ?? null;
    if (value !== null && (type === 'text' ? typeof value !== 'string' : !Number.isSafeInteger(value)))
      return undefined;
    row[column] = value;
  }
  return row;
}

/** Records the change's cloud version for its row when newer than the one held (or none is): changes 1; else 0. */
const TAKE_NEWER = `INSERT INTO replica_versions (entity, id, cloud_version) VALUES (?, ?, ?)
  ON CONFLICT (entity, id) DO UPDATE SET cloud_version = excluded.cloud_version WHERE excluded.cloud_version > replica_versions.cloud_version`;

export class Replica {
  readonly #rows: ReplicaRows;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly changes: ExternalChanges,
  ) {
    this.#rows = new ReplicaRows(db);
  }

  /** Writes one downloaded page for the local project and, once it committed, tells the decision
   * index; answers how many rows and deletions it wrote, and how many changes it left alone (not
   * newer than what the edge holds). The write waits for the lock without holding the event loop
   * (store/transactions.ts). */
  async apply(
    projectId: number,
    changes: readonly Change[],
    afterWrite?: () => void,
  ): Promise<{ rows: number; deletions: number; skipped: number }> {
    const counts = { rows: 0, deletions: 0, skipped: 0 };
    if (changes.length === 0) {
      if (afterWrite) await writeWhenFree(this.db, afterWrite);
      return counts;
    }
    let written: WrittenChange[] = [];
    let first = 0;
    await writeWhenFree(
      this.db,
      () => {
        counts.rows = 0;
        counts.deletions = 0;
        counts.skipped = 0;
        written = [];
        const takeNewer = statement(this.db, TAKE_NEWER);
        // One block of the edge's change versions for the page, as a bulk import takes.
        const end = reserveVersions(this.db, changes.length);
        first = end - changes.length + 1;
        let version = first;
        const now = iso(this.clock.now());
        for (const change of changes) {
          const at = version++; // a change left alone leaves its version unused: a gap, as a rolled-back write leaves
          if (takeNewer.run(change.entity, change.id, change.version).changes === 0) {
            counts.skipped++;
          } else if (change.op === 'delete') {
            this.#delete(projectId, change, at, now, written);
            counts.deletions++;
          } else {
            this.#upsert(projectId, change, at, now, written);
            counts.rows++;
          }
        }
        afterWrite?.();
      },
      { foreignKeys: false },
    );
    await this.changes.written(projectId, first, first + changes.length - 1, written);
    return counts;
  }

  /** Inside the caller's write: forgets every cloud version held, before a pull from the start (a cloud restored
   * from a backup numbers its rows anew: docs/sync.md). */
  forgetVersions(): void {
    statement(this.db, 'DELETE FROM replica_versions').run();
  }

  /**
   * Once a pull from the start is through: the project's rows the cloud did not send again (no
   * cloud version held) are rows it no longer has, and go as its deletions would. The edge's own
   * attendees and credentials (ids in its block) stay: the upload sends them again. Answers how many.
   */
  async sweepUnsent(projectId: number, ownBlock: { from: number; to: number }): Promise<number> {
    const unsent: Change[] = [];
    for (const entity of Object.keys(REPLICATED) as Entity[]) {
      const { table } = REPLICATED[entity];
      const ids = statement(
        this.db,
        `SELECT t.id FROM ${table} t WHERE t.project_id = ? AND NOT (t.id >= ? AND t.id < ?)
           AND NOT EXISTS (SELECT 1 FROM replica_versions v WHERE v.entity = ? AND v.id = t.id)`,
      )
        .pluck()
        .all(projectId, ownBlock.from, ownBlock.to, entity) as number[];
      for (const id of ids) unsent.push({ entity, op: 'delete', id, version: 0 });
    }
    return (await this.apply(projectId, unsent)).deletions;
  }

  #upsert(projectId: number, change: Change, version: number, now: string, written: WrittenChange[]): void {
    const { entity, id } = change;
    // The index loses a local row holding one of the row's unique values too, before the row that
    // takes its value is put (a credential's value is its key there).
    for (const other of this.#rows.upsert(projectId, entity, REPLICATED[entity], id, change.data ?? {}, version, now))
      written.push({ entity, op: 'delete', id: other, version });
    written.push({ entity, op: 'upsert', id, version, row: asStored(change, version) });
  }

  #delete(projectId: number, change: Change, version: number, now: string, written: WrittenChange[]): void {
    if (this.#rows.delete(projectId, change.entity, REPLICATED[change.entity], change.id, version, now))
      written.push({ entity: change.entity, op: 'delete', id: change.id, version });
  }
}
