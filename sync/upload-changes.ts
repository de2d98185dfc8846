import BetterSqlite3 from 'better-sqlite3';
import type { Clock } from '../src/clock.js';
import { iso } from '../src/clock.js';
import type { EventBus } from '../src/events/bus.js';
import type { Work } from '../src/events/unit-of-work.js';
import { outboxEntryOf } from '../src/feed/catalogue.js';
import type { Database } from '../src/store/database.js';
import { statement } from '../src/store/statements.js';
import { writeTransaction } from '../src/store/transactions.js';
import { writeAttendees } from '../src/venue/attendee-writer.js';
import type { NewConflict, SyncConflicts } from './conflicts.js';
import { DeletedRows } from './deleted-rows.js';
import { UploadCredentials } from './upload-credentials.js';
import type { EdgeRow } from './edges.js';
import type { UploadedChange } from './protocol.js';
import { idClash, noteUploadedId } from './upload-ids.js';

// The change items of an upload, on the cloud (docs/sync.md): attendees and
// credentials an edge made or changed, under the shared ids (venue/row-ids.ts), each applied
// once by its outbox uuid; an attendee changed on both sides is merged per field with the
// edge's previous_attributes (the cloud keeps a field it changed meanwhile, and the conflict
// is recorded); an attendee edited on one side and deleted on the other stays deleted, recorded
// (deleted-rows.ts); reader and gateway status go to the cloud's outbox with the edge's id. Each
// change goes to the cloud's outbox too, so its webhooks hear it. A create under an id the
// cloud holds or held is an id_conflict, never an overwrite (upload-ids.ts); credentials in
// upload-credentials.ts. Runs inside the upload's transaction (upload-apply.ts).

type Emit = () => void;

/** A row a change names that this project never held: refused
 * as if no project held it (docs/security.md: a stolen edge). */
interface Missing {
  entity: 'attendee' | 'credential';
  id: number;
  verb: string;
}

export class UploadChanges {
  readonly #deletedRows: DeletedRows;
  readonly #credentials: UploadCredentials;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly bus: EventBus,
    private readonly conflicts: SyncConflicts,
  ) {
    this.#deletedRows = new DeletedRows(db, clock, bus, conflicts);
    this.#credentials = new UploadCredentials(db, clock, bus, conflicts, this.#deletedRows);
  }

  /**
   * Applies one change item once (by its uuid); answers false when it was not new. A change the store
   * refuses (a constraint, a value it cannot hold) is rolled back alone, in a savepoint, and kept
   * as a refused_change conflict: one bad change must not stop every later upload of its edge.
   */
  apply(
    edge: EdgeRow,
    projectId: number,
    c: UploadedChange,
    now: string,
    announce: Emit[],
    work: Work,
  ): 'applied' | 'refused' | false {
    const fresh =
      statement(
        this.db,
        'INSERT INTO sync_applied_changes (uuid, edge_id, applied_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING',
      ).run(c.uuid, edge.id, now).changes === 1;
    if (!fresh) return false;
    noteUploadedId(this.db, edge, c);
    const clash = idClash(this.db, edge, projectId, c);
    if (clash) {
      this.#record(
        edge,
        projectId,
        {
          kind: clash.kind,
          entity: clash.entity,
          entityId: clash.entityId,
          edgeValue: { event: c.event, data: c.data },
          cloudValue: clash.cloudValue,
          detail: clash.detail,
        },
        announce,
        work,
      );
      return 'refused';
    }
    const announced = announce.length;
    try {
      // inside the upload's transaction: a savepoint of it
      const missing = writeTransaction(this.db, () => this.#apply(edge, projectId, c, now, announce, work));
      if (missing) {
        this.#refused(
          edge,
          projectId,
          {
            entity: missing.entity,
            entityId: missing.id,
            edgeValue: { event: c.event, data: c.data },
            detail: `no ${missing.entity} ${missing.id} in this project: nothing to ${missing.verb}`,
          },
          announce,
          work,
        );
        return 'refused';
      }
    } catch (err) {
      if (!isRefusal(err)) throw err;
      announce.length = announced; // what the rolled-back change would have announced
      this.#refused(
        edge,
        projectId,
        {
          entity: c.event.split('.')[0]!,
          entityId: idOf(c.data),
          edgeValue: { event: c.event, data: c.data },
          detail: `the cloud's store refused it: ${(err as Error).message}`,
        },
        announce,
        work,
      );
      return 'refused';
    }
    return 'applied';
  }

  /** Applies one change; answers what it names that this project never held (nothing applied then), or undefined. */
  #apply(
    edge: EdgeRow,
    projectId: number,
    c: UploadedChange,
    now: string,
    announce: Emit[],
    work: Work,
  ): Missing | undefined {
    const data = c.data;
    switch (c.event) {
      case 'attendee.created':
      case 'attendee.updated':
        if (this.#deletedRows.editOfDeleted(edge, projectId, c, Number(data.id), announce, work)) break; // the deletion wins
        this.#attendee(
          edge,
          projectId,
          data,
          c.event === 'attendee.updated'
            ? ((data.previous_attributes as Record<string, unknown> | undefined) ?? {})
            : null,
          announce,
          work,
        );
        break;
      case 'attendee.deleted': {
        const id = Number(data.id ?? data.attendee_id);
        const resourceOf = (held: number) => this.#attendeeResource(held);
        if (!this.#deletedRows.deleteAttendee(edge, projectId, id, c, resourceOf, announce, work))
          return { entity: 'attendee', id, verb: 'delete' };
        break;
      }
      case 'credential.created':
        this.#credentials.created(edge, projectId, data, announce, work);
        break;
      case 'credential.revoked':
        if (!this.#credentials.revoked(edge, projectId, c, now, announce, work))
          return { entity: 'credential', id: Number(c.data.id), verb: 'revoke' };
        break;
      default:
        // Reader and gateway status from the edge: told to the cloud's webhooks with the edge's id.
        work.record({ event: c.event, projectId, data: { ...data, edge_id: edge.id } });
    }
    return undefined;
  }

  /** Records a refused change, announced after the commit as every conflict is. */
  #refused(
    edge: EdgeRow,
    projectId: number,
    r: {
      entity: string;
      entityId: number | undefined;
      field?: string;
      edgeValue: unknown;
      cloudValue?: unknown;
      detail: string;
    },
    announce: Emit[],
    work: Work,
  ): void {
    this.#record(edge, projectId, { kind: 'refused_change', ...r }, announce, work);
  }

  #record(
    edge: EdgeRow,
    projectId: number,
    r: Omit<NewConflict, 'edgeId'> & { entityId: number | undefined },
    announce: Emit[],
    work: Work,
  ): void {
    const conflict = this.conflicts.record(projectId, { ...r, edgeId: edge.id });
    work.record(outboxEntryOf('sync.conflict', { projectId, conflict })!);
    announce.push(() => this.bus.emit('sync.conflict', { projectId, conflict }));
  }

  /**
   * The fields of an attendee the cloud cannot take as the edge sent them: an external id another
   * attendee holds here, an attendee type this project no longer has. Each is recorded and
   * answered so the caller applies the change without it.
   */
  #unplaceable(
    edge: EdgeRow,
    projectId: number,
    id: number,
    fields: Record<string, unknown>,
    kept: Record<string, unknown> | null,
    announce: Emit[],
    work: Work,
  ): Set<string> {
    const refused = new Set<string>();
    const externalId = fields.external_id;
    if (externalId !== null && externalId !== undefined) {
      const holder = statement(this.db, 'SELECT id FROM attendees WHERE project_id = ? AND external_id = ? AND id != ?')
        .pluck()
        .get(projectId, externalId, id) as number | undefined;
      if (holder !== undefined) {
        refused.add('external_id');
        this.#refused(
          edge,
          projectId,
          {
            entity: 'attendee',
            entityId: id,
            field: 'external_id',
            edgeValue: externalId,
            cloudValue: kept?.external_id ?? null,
            detail: `attendee ${holder} holds this external id on the cloud`,
          },
          announce,
          work,
        );
      }
    }
    const typeId = fields.attendee_type_id;
    if (
      typeId !== null &&
      typeId !== undefined &&
      !statement(this.db, 'SELECT 1 FROM attendee_types WHERE id = ? AND project_id = ?').get(typeId, projectId)
    ) {
      refused.add('attendee_type_id');
      this.#refused(
        edge,
        projectId,
        {
          entity: 'attendee',
          entityId: id,
          field: 'attendee_type_id',
          edgeValue: typeId,
          cloudValue: kept?.attendee_type_id ?? null,
          detail: `the cloud has no attendee type ${typeId} in this project (deleted meanwhile)`,
        },
        announce,
        work,
      );
    }
    return refused;
  }

  #attendee(
    edge: EdgeRow,
    projectId: number,
    data: Record<string, unknown>,
    previous: Record<string, unknown> | null,
    announce: Emit[],
    work: Work,
  ): void {
    const id = Number(data.id);
    const row = statement(this.db, 'SELECT * FROM attendees WHERE id = ? AND project_id = ?').get(id, projectId) as
      | Record<string, unknown>
      | undefined;
    const now = iso(this.clock.now());
    const fields = {
      first_name: data.first_name,
      last_name: data.last_name,
      email: data.email,
      attendee_type_id: data.attendee_type_id,
      external_id: data.external_id,
      status: data.status,
      extra: JSON.stringify(data.extra ?? {}),
    } as Record<string, unknown>;
    if (!row) {
      for (const field of this.#unplaceable(edge, projectId, id, fields, null, announce, work)) fields[field] = null; // the edge hears the row back without it
      writeAttendees(
        this.db,
        projectId,
        [{ op: 'create', id, values: fields, createdAt: (data.created_at as string) ?? now }],
        now,
      );
      this.#outbox('attendee.created', projectId, this.#attendeeResource(id), work);
      return;
    }
    // The cloud wins per field: an edge's change applies to a field the cloud left as the edge saw it.
    const updates: Record<string, unknown> = {};
    const keys =
      previous === null
        ? Object.keys(fields)
        : Object.keys(previous).map((k) => (k === 'attendee_type' ? 'attendee_type_id' : k));
    for (const key of new Set(keys)) {
      if (!(key in fields)) continue;
      const edgeValue = fields[key];
      const cloudValue = row[key];
      const base =
        previous === null
          ? cloudValue
          : key === 'extra'
            ? JSON.stringify(previous.extra ?? {})
            : key === 'attendee_type_id'
              ? (previous.attendee_type_id ?? row[key])
              : previous[key];
      if (same(cloudValue, edgeValue)) continue;
      if (same(cloudValue, base)) updates[key] = edgeValue;
      else {
        const conflict = this.conflicts.record(projectId, {
          kind: 'attendee_field',
          edgeId: edge.id,
          entity: 'attendee',
          entityId: id,
          field: key,
          edgeValue: shown(key, edgeValue),
          cloudValue: shown(key, cloudValue),
        });
        work.record(outboxEntryOf('sync.conflict', { projectId, conflict })!);
        announce.push(() => this.bus.emit('sync.conflict', { projectId, conflict }));
      }
    }
    const refused = this.#unplaceable(edge, projectId, id, updates, row, announce, work);
    for (const field of refused) delete updates[field];
    if (Object.keys(updates).length === 0) {
      // A new version all the same (no field set), so the edge hears the cloud's row back instead
      // of keeping what was refused.
      if (refused.size > 0) writeAttendees(this.db, projectId, [{ op: 'update', id, values: {} }], now);
      return;
    }
    writeAttendees(this.db, projectId, [{ op: 'update', id, values: updates }], now);
    this.#outbox(
      'attendee.updated',
      projectId,
      {
        ...this.#attendeeResource(id),
        previous_attributes: Object.fromEntries(Object.keys(updates).map((k) => [k, shown(k, row[k])])),
      },
      work,
    );
  }

  /** Told to the cloud's webhooks now; the bus hears of the attendee through the index refresh after the commit. */
  #outbox(
    event: 'attendee.created' | 'attendee.updated',
    projectId: number,
    data: Record<string, unknown>,
    work: Work,
  ): void {
    work.record({ event, projectId, data: { attendee_id: data.id, ...data } });
  }

  #attendeeResource(id: number): Record<string, unknown> {
    const row = statement(
      this.db,
      'SELECT a.*, t.slug AS attendee_type FROM attendees a LEFT JOIN attendee_types t ON t.id = a.attendee_type_id WHERE a.id = ?',
    ).get(id) as Record<string, unknown>;
    const { project_id: _p, ...rest } = row;
    return { ...rest, extra: JSON.parse(String(row.extra ?? '{}')) as unknown };
  }
}

/** What the store refuses of a change as sent: a constraint, or a value
 * SQLite cannot bind. Not a busy store or a full disk: those are retried. */
function isRefusal(err: unknown): boolean {
  if (err instanceof BetterSqlite3.SqliteError)
    return err.code.startsWith('SQLITE_CONSTRAINT') || err.code === 'SQLITE_MISMATCH' || err.code === 'SQLITE_RANGE';
  return err instanceof TypeError || err instanceof RangeError; // better-sqlite3's refusals to bind a value
}

function idOf(data: Record<string, unknown>): number | undefined {
  const id = Number(data.id ?? data.attendee_id);
  return Number.isSafeInteger(id) ? id : undefined;
}

const same = (a: unknown, b: unknown) => (a ?? null) === (b ?? null);
const shown = (key: string, value: unknown) =>
  key === 'extra' && typeof value === 'string' ? (JSON.parse(value) as unknown) : value;
