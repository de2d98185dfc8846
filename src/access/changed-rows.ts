import { setImmediate as turn } from 'node:timers/promises';
import type { EventBus } from '../events/bus.js';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import type { Venue } from '../venue/index.js';
import { zoneResource, type AccessZoneRow } from '../venue/access-zones.js';
import type { AccessPointRow } from '../venue/access-points.js';
import { readerResource } from '../venue/readers.js';
import type { AttendeeTypeRow } from '../venue/attendee-types.js';
import { timeRestrictionResource, type TimeRestrictionRow } from '../venue/time-restrictions.js';
import { blocklistResource, type BlocklistRow } from '../venue/blocklist.js';
import type { VersionRange } from './local-versions.js';
import type { VenueIndex } from './venue-index.js';
import type { DomainEvents, EventName } from '../events/types.js';

// Reads one project's venue rows and tombstones whose change versions fall in ranges written
// by another process (external-changes.ts) and applies them as the appliance's own write of them
// would have been (docs/engine.md, "Changes by another process"):
// - zones, access points, readers, attendee types with their zones, time restrictions and the
//   blocklist are announced on the bus with the same events and resources as a local write, so
//   the index takes them through index-sync.ts and everything else that listens reacts as to a
//   local change (AccessPointUpdated / AccessPointDeleted on the dashboards, a deleted reader's
//   MQTT connection closed);
// - attendees and credentials go straight into the index, in chunks, as a bulk import's do
//   (the bus carries one attendee.imported per import, never a million per-row events);
// - deletions (tombstones) are announced as `<entity>.deleted` for every entity, unless the id
//   is in its table again (SQLite reuses the highest rowid) by a write outside the ranges read.
// Tombstones go first, then the tables in the order a decision needs them: a blocklist entry
// is known before the credentials of whom it blocks. Reads are chunked and the event loop gets
// a turn between chunks, so a million imported credentials never hold up scans for long.
// Forms and their submissions are left out: nothing in the process holds or announces them.
//
// applyWritten() takes what this process itself wrote without announcing it (the edge's
// replica, sync/replica.ts), just after the write committed, from what was written: the same
// deletions announced, attendees and credentials put from the values written (not read back),
// and only the other tables' rows, few, read back to be announced as above.

const CHUNK = 2000;

type Row = Record<string, unknown> & { id: number; version: number };

interface Announced {
  table: string;
  created: EventName;
  updated: EventName;
  resource: (row: Row) => Record<string, unknown>;
}

/** Entity (as tombstones name it) → its table and deletion event. */
const DELETIONS: Record<string, { table: string; event: EventName }> = {
  access_zone: { table: 'access_zones', event: 'access_zone.deleted' },
  access_point: { table: 'access_points', event: 'access_point.deleted' },
  reader: { table: 'readers', event: 'reader.deleted' },
  attendee_type: { table: 'attendee_types', event: 'attendee_type.deleted' },
  time_restriction: { table: 'time_restrictions', event: 'time_restriction.deleted' },
  blocklist_entry: { table: 'blocklist_entries', event: 'blocklist_entry.deleted' },
  attendee: { table: 'attendees', event: 'attendee.deleted' },
  credential: { table: 'credentials', event: 'credential.deleted' },
};

/** The columns the index takes of an attendee and a credential. */
const ATTENDEE_COLUMNS = 'id, project_id, attendee_type_id, first_name, last_name, status, version';
const CREDENTIAL_COLUMNS = 'id, project_id, attendee_id, value, status, valid_from, valid_until, revoked_at, version';

export interface Applied {
  rows: number;
  deletions: number;
}

/** One change this process wrote straight into a venue table, announcing nothing (the edge's replica). */
export interface WrittenChange {
  /** As tombstones name it: 'attendee', 'credential', 'access_zone', ... */
  entity: string;
  /** delete: a row the write removed (a tombstone's, or a row that gave way to one holding its unique value). */
  op: 'upsert' | 'delete';
  id: number;
  /** The change version the write took. */
  version: number;
  /** An attendee's or a credential's upsert: the columns the index takes, as stored (but project_id);
   * without it, the row is read back. */
  row?: Row;
}

export class ChangedRows {
  readonly #announced: Announced[];

  constructor(
    private readonly db: Database,
    private readonly index: VenueIndex,
    private readonly bus: EventBus,
    venue: Venue,
  ) {
    const as = <R>(resource: (row: R) => object) => resource as unknown as (row: Row) => Record<string, unknown>;
    this.#announced = [
      {
        table: 'access_zones',
        created: 'access_zone.created',
        updated: 'access_zone.updated',
        resource: as((r: AccessZoneRow) => zoneResource(r)),
      },
      {
        table: 'access_points',
        created: 'access_point.created',
        updated: 'access_point.updated',
        resource: as((r: AccessPointRow) => venue.accessPoints.resource(r)),
      },
      { table: 'readers', created: 'reader.created', updated: 'reader.updated', resource: as(readerResource) },
      {
        table: 'attendee_types',
        created: 'attendee_type.created',
        updated: 'attendee_type.updated',
        resource: as((r: AttendeeTypeRow) => venue.attendeeTypes.resource(r)),
      },
      {
        table: 'time_restrictions',
        created: 'time_restriction.created',
        updated: 'time_restriction.updated',
        resource: as((r: TimeRestrictionRow) => timeRestrictionResource(r)),
      },
      {
        table: 'blocklist_entries',
        created: 'blocklist_entry.created',
        updated: 'blocklist_entry.updated',
        resource: as((r: BlocklistRow) => blocklistResource(r)),
      },
    ];
  }

  /** Applies the project's changes with versions in `ranges` (ascending); `stopped` is asked between chunks. */
  async apply(projectId: number, ranges: readonly VersionRange[], stopped: () => boolean): Promise<Applied> {
    const applied: Applied = { rows: 0, deletions: 0 };
    const inRanges = (version: number) => ranges.some(([from, to]) => version >= from && version <= to);
    for await (const tombstones of this.#chunks(
      'SELECT entity, entity_id AS id, version FROM tombstones',
      projectId,
      ranges,
      stopped,
    )) {
      for (const t of tombstones) {
        const deletion = DELETIONS[t.entity as string];
        if (!deletion) continue;
        // The id taken again (SQLite reuses the highest rowid): a new row read below follows the
        // deletion as it happened; one written outside these ranges is what the index already
        // holds (the appliance's own) or will read next time, and must not be dropped.
        const again = statement(this.db, `SELECT version FROM ${deletion.table} WHERE id = ?`).get(t.id) as
          | { version: number }
          | undefined;
        if (again && !inRanges(again.version)) continue;
        this.#emit(deletion.event, { projectId, id: t.id, version: t.version });
        applied.deletions++;
      }
    }
    applied.rows += await this.#keys(projectId, ranges, stopped);
    applied.rows += await this.#announce(projectId, ranges, stopped);
    applied.rows += await this.#holders(projectId, ranges, stopped);
    return applied;
  }

  /**
   * Applies what this process wrote in one transaction that took the versions in `range`, in the
   * order written. Nothing else can have been decided on in between: deletions and the holders'
   * rows are in the index before this yields; the other tables' rows (read back) follow.
   */
  async applyWritten(
    projectId: number,
    range: VersionRange,
    changes: readonly WrittenChange[],
    stopped: () => boolean,
  ): Promise<void> {
    let announced = false;
    let holders = false;
    let keys = false;
    for (const change of changes) {
      if (change.entity === 'credential_key') {
        if (change.op === 'delete') this.index.keys.drop(change.id);
        else keys = true;
      } else if (change.op === 'delete') {
        const deletion = DELETIONS[change.entity];
        if (deletion) this.#emit(deletion.event, { projectId, id: change.id, version: change.version });
      } else if (change.entity === 'attendee' || change.entity === 'credential') {
        const row = change.row;
        if (!row) {
          holders = true;
          continue;
        }
        // An upsert keeps the project of a row it updates, as the index holds it.
        if (change.entity === 'attendee') {
          row.project_id = this.index.attendees.get(change.id)?.projectId ?? projectId;
          this.index.putAttendee(row);
        } else {
          row.project_id = this.index.credentialsById.get(change.id)?.projectId ?? projectId;
          this.index.putCredential(row);
        }
      } else announced = true;
    }
    // A row upserted and then deleted in the same write is not read back: its deletion went above.
    if (keys) await this.#keys(projectId, [range], stopped);
    if (announced) await this.#announce(projectId, [range], stopped);
    if (holders) await this.#holders(projectId, [range], stopped);
  }

  /** Announces the rows of the tables with bus events (zones …
   * blocklist) whose versions are in the ranges; answers how many. */
  async #announce(projectId: number, ranges: readonly VersionRange[], stopped: () => boolean): Promise<number> {
    let count = 0;
    for (const spec of this.#announced) {
      for await (const rows of this.#chunks(`SELECT * FROM ${spec.table}`, projectId, ranges, stopped)) {
        for (const row of rows) {
          // A row whose creation and last change are one write is new
          // to the appliance, as far as anyone listening can tell.
          const event = row.created_at === row.updated_at ? spec.created : spec.updated;
          this.#emit(event, { projectId, resource: spec.resource(row), version: row.version });
        }
        count += rows.length;
      }
    }
    return count;
  }

  /** Puts the projects' public keys whose versions are in the ranges into the index (signing-keys.ts). */
  async #keys(projectId: number, ranges: readonly VersionRange[], stopped: () => boolean): Promise<number> {
    let count = 0;
    const select = 'SELECT id, project_id, public_key, status, version FROM credential_keys';
    for await (const rows of this.#chunks(select, projectId, ranges, stopped)) {
      for (const row of rows) this.index.keys.put(row);
      count += rows.length;
    }
    return count;
  }

  /** Puts the attendees and credentials whose versions are in the ranges into the index; answers how many. */
  async #holders(projectId: number, ranges: readonly VersionRange[], stopped: () => boolean): Promise<number> {
    let count = 0;
    for await (const rows of this.#chunks(`SELECT ${ATTENDEE_COLUMNS} FROM attendees`, projectId, ranges, stopped)) {
      for (const row of rows) this.index.putAttendee(row);
      count += rows.length;
    }
    for await (const rows of this.#chunks(
      `SELECT ${CREDENTIAL_COLUMNS} FROM credentials`,
      projectId,
      ranges,
      stopped,
    )) {
      for (const row of rows) this.index.putCredential(row);
      count += rows.length;
    }
    return count;
  }

  #emit(event: EventName, payload: unknown): void {
    this.bus.emit(event, payload as DomainEvents[EventName]);
  }

  /** The rows of `select` with versions in the ranges, by version,
   * CHUNK at a time with a turn of the event loop between. */
  async *#chunks(
    select: string,
    projectId: number,
    ranges: readonly VersionRange[],
    stopped: () => boolean,
  ): AsyncGenerator<Row[]> {
    // Versions are unique per table (each write takes its own), so the last one read is a sound place to go on from.
    const query = statement(
      this.db,
      `${select} WHERE project_id = ? AND version >= ? AND version <= ? ORDER BY version LIMIT ${CHUNK}`,
    );
    for (const [from, to] of ranges) {
      let next = from;
      for (;;) {
        if (stopped()) return;
        const rows = query.all(projectId, next, to) as Row[];
        if (rows.length > 0) yield rows;
        if (rows.length < CHUNK) break;
        next = rows[rows.length - 1]!.version + 1;
        await turn();
      }
    }
  }
}
