import type { Clock } from '../src/clock.js';
import { iso } from '../src/clock.js';
import type { Database } from '../src/store/database.js';
import { statement } from '../src/store/statements.js';
import { writeTransaction } from '../src/store/transactions.js';
import type { ConflictKind, SyncConflictResource } from '../src/resources/sync-conflict.js';

// What sync flagged for review (docs/sync.md: conflicts): an entry at one edge
// repeating an entry admitted at another while both were offline (duplicate_entry), an admission
// of a credential the cloud had revoked or blocklisted by then (revoked_credential, blocklisted),
// a field of an attendee changed on both sides (attendee_field: the cloud's value kept), a
// credential value an edge issued that the cloud had given someone else (credential_value), an
// edge's change the cloud could not apply as sent (refused_change: a field naming an attendee type
// the cloud no longer has or an external id it gave someone else, applied without that field; or
// a change its store refused, kept whole in edge_value), a create under an id the cloud already
// holds (id_conflict: never an overwrite), a row edited on one side and deleted on the other
// (deleted_row), an access event naming a reader, access point or zone the cloud deleted
// (deleted_reference), an access event naming an attendee, credential, reader, access point or
// zone its edge's project never held (unknown_reference: kept, moves no count, shows no name).
// A refused change never stops the upload.
// Flags on access events are also columns of the event itself (duplicate_of, review).

interface ConflictRow {
  id: number;
  project_id: number;
  kind: ConflictKind;
  edge_id: number | null;
  event_uuid: string | null;
  related_uuid: string | null;
  entity: string | null;
  entity_id: number | null;
  field: string | null;
  edge_value: string | null;
  cloud_value: string | null;
  detail: string | null;
  created_at: string;
  reviewed_at: string | null;
  cleared_at: string | null;
}

export interface NewConflict {
  kind: ConflictKind;
  edgeId: number | null;
  eventUuid?: string;
  relatedUuid?: string;
  entity?: string;
  entityId?: number;
  field?: string;
  edgeValue?: unknown;
  cloudValue?: unknown;
  detail?: string;
}

export class SyncConflicts {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  /** Inside the caller's transaction; answers the new conflict. */
  record(projectId: number, c: NewConflict): SyncConflictResource {
    const json = (v: unknown) => (v === undefined ? null : JSON.stringify(v));
    const result = statement(
      this.db,
      `INSERT INTO sync_conflicts (project_id, kind, edge_id, event_uuid, related_uuid, entity, entity_id, field, edge_value, cloud_value, detail, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      projectId,
      c.kind,
      c.edgeId,
      c.eventUuid ?? null,
      c.relatedUuid ?? null,
      c.entity ?? null,
      c.entityId ?? null,
      c.field ?? null,
      json(c.edgeValue),
      json(c.cloudValue),
      c.detail ?? null,
      iso(this.clock.now()),
    );
    return this.resource(this.#get(Number(result.lastInsertRowid))!);
  }

  /** Inside the caller's transaction: the event's standing conflicts of this kind, marked cleared (a later arrival
   * explained them) and kept; answers them as cleared. */
  clear(projectId: number, kind: ConflictKind, eventUuid: string): SyncConflictResource[] {
    const rows = statement(
      this.db,
      'UPDATE sync_conflicts SET cleared_at = ? WHERE event_uuid = ? AND kind = ? AND project_id = ? AND cleared_at IS NULL RETURNING *',
    ).all(iso(this.clock.now()), eventUuid, kind, projectId) as ConflictRow[];
    return rows.sort((x, y) => x.id - y.id).map((r) => this.resource(r));
  }

  list(
    projectId: number,
    filter: { kind?: ConflictKind | undefined; reviewed?: boolean | undefined },
    offset: number,
    limit: number,
  ): { items: SyncConflictResource[]; total: number } {
    const where = ['project_id = ?'];
    const args: (string | number)[] = [projectId];
    if (filter.kind) {
      where.push('kind = ?');
      args.push(filter.kind);
    }
    if (filter.reviewed !== undefined) where.push(filter.reviewed ? 'reviewed_at IS NOT NULL' : 'reviewed_at IS NULL');
    const sql = `FROM sync_conflicts WHERE ${where.join(' AND ')}`;
    const rows = statement(this.db, `SELECT * ${sql} ORDER BY id LIMIT ? OFFSET ?`).all(
      ...args,
      limit,
      offset,
    ) as ConflictRow[];
    const total = statement(this.db, `SELECT COUNT(*) ${sql}`)
      .pluck()
      .get(...args) as number;
    return { items: rows.map((r) => this.resource(r)), total };
  }

  get(projectId: number, id: number): SyncConflictResource | null {
    const row = this.#get(id);
    return row && row.project_id === projectId ? this.resource(row) : null;
  }

  markReviewed(projectId: number, id: number): SyncConflictResource | null {
    writeTransaction(this.db, () =>
      statement(
        this.db,
        'UPDATE sync_conflicts SET reviewed_at = COALESCE(reviewed_at, ?) WHERE id = ? AND project_id = ?',
      ).run(iso(this.clock.now()), id, projectId),
    );
    return this.get(projectId, id);
  }

  resource(r: ConflictRow): SyncConflictResource {
    const parse = (v: string | null) => (v === null ? null : (JSON.parse(v) as unknown));
    return {
      id: r.id,
      kind: r.kind,
      edge_id: r.edge_id,
      event_id: r.event_uuid,
      duplicate_of: r.related_uuid,
      entity: r.entity,
      entity_id: r.entity_id,
      field: r.field,
      edge_value: parse(r.edge_value),
      cloud_value: parse(r.cloud_value),
      detail: r.detail,
      created_at: r.created_at,
      reviewed_at: r.reviewed_at,
      cleared_at: r.cleared_at,
    };
  }

  #get(id: number): ConflictRow | null {
    return (statement(this.db, 'SELECT * FROM sync_conflicts WHERE id = ?').get(id) as ConflictRow | undefined) ?? null;
  }
}
