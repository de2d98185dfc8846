import type { Clock } from '../src/clock.js';
import { iso } from '../src/clock.js';
import type { EventBus } from '../src/events/bus.js';
import type { Work } from '../src/events/unit-of-work.js';
import { outboxEntryOf } from '../src/feed/catalogue.js';
import type { Database } from '../src/store/database.js';
import { statement } from '../src/store/statements.js';
import { deleteAttendee } from '../src/venue/attendee-writer.js';
import type { SyncConflicts } from './conflicts.js';
import type { EdgeRow } from './edges.js';
import type { UploadedChange } from './protocol.js';

// An edge's deletion of an attendee, and an attendee edited on one side and deleted on the other,
// or a credential revoked at an edge that the cloud deleted (docs/sync.md: conflicts, deleted_row).
// The deletion wins both ways: an edge's edit of an attendee the cloud deleted is not applied
// (the tombstone reaches the edge, which drops its copy), and an edge's deletion of an attendee
// the cloud changed meanwhile is applied. Either way nothing is lost silently: a deleted_row
// conflict keeps both sides (the edge's change as sent; the cloud's deletion time, or its row as
// the deletion found it) and is announced (sync.conflict). Runs inside the upload's
// transaction, in the change's savepoint (upload-changes.ts).

type Emit = () => void;

/** The fields an edge's deletion compares with the cloud's row: what an attendee is, not its bookkeeping. */
const COMPARED = ['first_name', 'last_name', 'email', 'attendee_type_id', 'external_id', 'status', 'extra'] as const;

export class DeletedRows {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly bus: EventBus,
    private readonly conflicts: SyncConflicts,
  ) {}

  /**
   * An edge's attendee.created or .updated for an attendee the cloud deleted: recorded, not applied. Answers whether
   * it was one.
   */
  editOfDeleted(
    edge: EdgeRow,
    projectId: number,
    c: UploadedChange,
    id: number,
    announce: Emit[],
    work: Work,
  ): boolean {
    const deletedAt = this.#deletedAt('attendee', projectId, id);
    if (deletedAt === undefined) return false;
    this.#record(
      edge,
      projectId,
      id,
      c,
      { deleted_at: deletedAt },
      `deleted on the cloud at ${deletedAt}; the edge's ${c.event} was not applied: the deletion wins`,
      announce,
      work,
    );
    return true;
  }

  /**
   * An edge's credential.revoked for a credential the cloud deleted (with its attendee): recorded, nothing to apply.
   * Answers whether it was one.
   */
  revocationOfDeleted(
    edge: EdgeRow,
    projectId: number,
    c: UploadedChange,
    id: number,
    announce: Emit[],
    work: Work,
  ): boolean {
    const deletedAt = this.#deletedAt('credential', projectId, id);
    if (deletedAt === undefined) return false;
    this.#record(
      edge,
      projectId,
      id,
      c,
      { deleted_at: deletedAt },
      `deleted on the cloud at ${deletedAt}; the edge's revocation had nothing left to revoke`,
      announce,
      work,
      'credential',
    );
    return true;
  }

  /**
   * An edge's attendee.deleted: the attendee goes with their blocklist entries and credentials, each
   * leaving a tombstone (docs/venue.md: attendees). Every statement is this project's. Answers
   * false when the project never held the attendee (the caller refuses the change).
   */
  deleteAttendee(
    edge: EdgeRow,
    projectId: number,
    id: number,
    c: UploadedChange,
    resourceOf: (id: number) => Record<string, unknown>,
    announce: Emit[],
    work: Work,
  ): boolean {
    const row = statement(this.db, 'SELECT * FROM attendees WHERE id = ? AND project_id = ?').get(id, projectId) as
      | Record<string, unknown>
      | undefined;
    if (!row) return this.#heldBefore(projectId, 'attendee', id); // deleted here too: both sides agree
    const resource = resourceOf(id);
    this.#deletionOfEdited(edge, projectId, c, row, resource, announce, work);
    deleteAttendee(this.db, projectId, id, iso(this.clock.now()));
    work.record({
      event: 'attendee.deleted',
      projectId,
      data: { attendee_id: id, id, previous_attributes: resource },
    });
    return true;
  }

  /** Whether this project held the row and deleted it (its tombstone). */
  #heldBefore(projectId: number, entity: 'attendee' | 'credential', id: number): boolean {
    return (
      statement(this.db, 'SELECT 1 FROM tombstones WHERE project_id = ? AND entity = ? AND entity_id = ?').get(
        projectId,
        entity,
        id,
      ) !== undefined
    );
  }

  /**
   * An edge's attendee.deleted, before the cloud applies it: when the cloud's row differs from
   * the attendee as the edge last held it (`previous_attributes`), the cloud changed it
   * meanwhile and the conflict keeps the cloud's row. Without a readable base (an older edge,
   * a malformed one) nothing can be told and nothing is recorded.
   */
  #deletionOfEdited(
    edge: EdgeRow,
    projectId: number,
    c: UploadedChange,
    row: Record<string, unknown>,
    resource: Record<string, unknown>,
    announce: Emit[],
    work: Work,
  ): void {
    const seen = c.data.previous_attributes;
    if (seen === null || typeof seen !== 'object' || Array.isArray(seen)) return;
    const base = seen as Record<string, unknown>;
    const changed = COMPARED.filter((field) => field in base && !sameValue(field, row[field], base[field]));
    if (changed.length === 0) return;
    const detail = `deleted at the edge; the cloud had changed ${changed.join(', ')} meanwhile: the deletion applied, the cloud's row as it found it is kept here`;
    this.#record(edge, projectId, Number(row.id), c, resource, detail, announce, work);
  }

  /** When the cloud deleted this row of the project, or undefined: the row is there, or was never deleted. */
  #deletedAt(entity: 'attendee' | 'credential', projectId: number, id: number): string | undefined {
    const table = entity === 'attendee' ? 'attendees' : 'credentials';
    if (statement(this.db, `SELECT 1 FROM ${table} WHERE id = ? AND project_id = ?`).get(id, projectId))
      return undefined;
    return statement(
      this.db,
      'SELECT deleted_at FROM tombstones WHERE project_id = ? AND entity = ? AND entity_id = ? ORDER BY version DESC LIMIT 1',
    )
      .pluck()
      .get(projectId, entity, id) as string | undefined;
  }

  #record(
    edge: EdgeRow,
    projectId: number,
    id: number,
    c: UploadedChange,
    cloudValue: unknown,
    detail: string,
    announce: Emit[],
    work: Work,
    entity: 'attendee' | 'credential' = 'attendee',
  ): void {
    const conflict = this.conflicts.record(projectId, {
      kind: 'deleted_row',
      edgeId: edge.id,
      entity,
      entityId: id,
      edgeValue: { event: c.event, data: c.data },
      cloudValue,
      detail,
    });
    work.record(outboxEntryOf('sync.conflict', { projectId, conflict })!);
    announce.push(() => this.bus.emit('sync.conflict', { projectId, conflict }));
  }
}

/** The cloud's column against the edge's resource field: extra is
 * JSON text here and an object there (compared with keys sorted). */
function sameValue(field: string, cloud: unknown, edge: unknown): boolean {
  if (field === 'extra') return canonical(JSON.parse(String(cloud ?? '{}'))) === canonical(edge ?? {});
  return (cloud ?? null) === (edge ?? null);
}

function canonical(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
}
