import type { VenueIndex } from '../src/access/venue-index.js';
import type { Database } from '../src/store/database.js';
import { paddedRuns, rowsOf } from '../src/store/batches.js';
import { statement } from '../src/store/statements.js';
import type { NewConflict } from './conflicts.js';
import type { UploadedAccessEvent } from './protocol.js';

// What the cloud flags on an access event an edge uploads, from what the cloud knows when it
// arrives (docs/sync.md: conflicts): an admission with a credential the cloud had revoked or
// blocklisted by the scan time (the event's `review`), and a reader, access point or zone the
// event names that the cloud no longer has (its `deleted_reference`). The two are separate
// columns: one event can be both, and a review is about the person, a deleted reference about
// the place. An event naming anything its edge's project never held (another project's holder,
// ticket or zone, or an id no project holds: the two look the same here) is an
// `unknown_reference`: kept as sent, flagged for review, and it moves no count, shows no name and
// flags nothing (docs/security.md: a stolen edge). Runs inside the upload's transaction
// (upload-apply.ts).

export type ReviewKind = 'revoked_credential' | 'blocklisted' | 'unknown_reference';

/** A reference of an access event its edge's project never held (no row, no tombstone here). */
export interface UnknownReference {
  entity: 'reader' | 'access_point' | 'access_zone' | 'attendee' | 'credential';
  id: number;
}

/** The holder and ticket an event names, after its places (REFERENCES): the order unknown_reference lists them in. */
const HOLDER_REFERENCES = [
  { entity: 'attendee', table: 'attendees', column: 'attendee_id' },
  { entity: 'credential', table: 'credentials', column: 'credential_id' },
] as const;

/** A reference of an access event the cloud does not have: deleted (when), or never known here (null). */
export interface GoneReference {
  entity: 'reader' | 'access_point' | 'access_zone';
  id: number;
  deleted_at: string | null;
}

/** From the scan's reader to the zone it leads into: the order `deleted_reference` lists them in. */
const REFERENCES = [
  { entity: 'reader', table: 'readers', column: 'reader_id', label: 'reader' },
  { entity: 'access_point', table: 'access_points', column: 'access_point_id', label: 'access point' },
  { entity: 'access_zone', table: 'access_zones', column: 'access_zone_id', label: 'access zone' },
] as const;

/** Every reference an event names, as lookUp reads them (its kind is the index here). */
const ALL_REFERENCES = [...REFERENCES, ...HOLDER_REFERENCES];

export class UploadFlags {
  /** Per batch: references found gone, so a backlog at one deleted door looks its tombstone up once. */
  #gone = new Map<string, GoneReference | null>();
  /** Per slice: what its events name, found in their project's rows (true) or not (false), looked up at once. */
  #held = new Map<string, boolean>();

  constructor(
    private readonly db: Database,
    /** The cloud's decision index: a credential's revocation, the blocklist (no query per event). */
    private readonly index: VenueIndex,
  ) {}

  /** A new batch: the project's rows may have changed since the last one. */
  begin(): void {
    this.#gone.clear();
    this.#held.clear();
  }

  /**
   * Everything `events` name (reader, access point, zone, holder, ticket), looked up in their
   * project's rows at once: one statement for all five tables (store/batches.ts), for
   * goneReferences and unknownReferences. The rows an event names are the cloud's, so this holds
   * for the rest of the slice (its access events add none).
   */
  lookUp(projectId: number, events: readonly UploadedAccessEvent[]): void {
    const refs = new Map<string, [kind: number, id: number]>();
    for (const e of events)
      ALL_REFERENCES.forEach((ref, kind) => {
        const id = e[ref.column];
        if (id !== null) refs.set(`${kind}:${id}`, [kind, id]);
      });
    for (const run of paddedRuns([...refs.values()])) {
      // Scalar subqueries: one primary-key read per reference, whatever the planner thinks of a table's size.
      for (const row of statement(
        this.db,
        `WITH refs (kind, id) AS (VALUES ${rowsOf(run.length, '(CAST(? AS INTEGER), CAST(? AS BIGINT))')})
         SELECT kind, id, CASE kind ${ALL_REFERENCES.map(
           (ref, kind) => `WHEN ${kind} THEN (SELECT 1 FROM ${ref.table} t WHERE t.id = refs.id AND t.project_id = ?)`,
         ).join(' ')} END AS held FROM refs`,
      ).all(...run.flat(), ...ALL_REFERENCES.map(() => projectId)) as {
        kind: number;
        id: number;
        held: number | null;
      }[])
        this.#held.set(`${projectId}:${ALL_REFERENCES[row.kind]!.entity}:${row.id}`, row.held !== null);
    }
  }

  /** The event's reader, access point and zone that this project does not have, in that order. */
  goneReferences(projectId: number, e: UploadedAccessEvent): GoneReference[] {
    const gone: GoneReference[] = [];
    for (const ref of REFERENCES) {
      const id = e[ref.column];
      if (id === null) continue;
      const key = `${projectId}:${ref.entity}:${id}`;
      let found = this.#gone.get(key);
      if (found === undefined) {
        const exists =
          this.#held.get(key) ??
          statement(this.db, `SELECT 1 FROM ${ref.table} WHERE id = ? AND project_id = ?`).get(id, projectId) !==
            undefined;
        const deletedAt = exists
          ? null
          : ((statement(
              this.db,
              'SELECT deleted_at FROM tombstones WHERE project_id = ? AND entity = ? AND entity_id = ? ORDER BY version DESC LIMIT 1',
            )
              .pluck()
              .get(projectId, ref.entity, id) as string | undefined) ?? null);
        found = exists ? null : { entity: ref.entity, id, deleted_at: deletedAt };
        this.#gone.set(key, found);
      }
      if (found) gone.push(found);
    }
    return gone;
  }

  /**
   * What the event names that its edge's project never held: the places `gone` found never known
   * here, then the holder and the ticket when neither a row nor a tombstone of this project has
   * them. Never looked up outside the project: another project's row is as unknown as no row.
   */
  unknownReferences(projectId: number, e: UploadedAccessEvent, gone: readonly GoneReference[]): UnknownReference[] {
    const unknown: UnknownReference[] = gone
      .filter((g) => g.deleted_at === null)
      .map((g) => ({ entity: g.entity, id: g.id }));
    for (const ref of HOLDER_REFERENCES) {
      const id = e[ref.column];
      if (id === null) continue;
      const held =
        this.#held.get(`${projectId}:${ref.entity}:${id}`) ??
        statement(this.db, `SELECT 1 FROM ${ref.table} WHERE id = ? AND project_id = ?`).get(id, projectId) !==
          undefined;
      if (held) continue;
      if (
        statement(this.db, 'SELECT 1 FROM tombstones WHERE project_id = ? AND entity = ? AND entity_id = ?').get(
          projectId,
          ref.entity,
          id,
        )
      )
        continue;
      unknown.push({ entity: ref.entity, id });
    }
    return unknown;
  }

  /** Why an admission needs review: the cloud had revoked or blocklisted the credential by its scan time on the
   * cloud's clock (effective_at: docs/sync.md, clocks), from the index; SQL only to date a blocklist hit. */
  review(projectId: number, e: UploadedAccessEvent, effectiveAt: string): ReviewKind | null {
    if (e.credential_id === null) return null;
    const at = Date.parse(effectiveAt);
    const credential = this.index.credentialsById.get(e.credential_id);
    if (
      credential &&
      credential.projectId === projectId &&
      credential.status === 'revoked' &&
      credential.revokedAt !== null &&
      credential.revokedAt <= at
    )
      return 'revoked_credential';
    if (!this.index.isBlocked(e.attendee_id ?? -1, e.credential_id, at)) return null;
    const dated = statement(
      this.db,
      'SELECT 1 FROM blocklist_entries WHERE project_id = ? AND (credential_id = ? OR attendee_id = ?) AND created_at <= ? AND (until IS NULL OR until > ?)',
    ).get(projectId, e.credential_id, e.attendee_id, effectiveAt, effectiveAt);
    return dated ? 'blocklisted' : null;
  }
}

/** The event's `deleted_reference` column: what is gone, comma-separated (`access_point,access_zone`). */
export const deletedReferenceColumn = (gone: readonly GoneReference[]): string => gone.map((g) => g.entity).join(',');

/** The deleted_reference conflict of an event: it names the outermost reference gone (the zone when it is: what
 * occupancy would have counted into), the event's references as
 * sent, and each gone one, deleted when or never known here. */
export function deletedReferenceConflict(
  edgeId: number,
  e: UploadedAccessEvent,
  gone: readonly GoneReference[],
): NewConflict {
  const named = gone[gone.length - 1]!;
  const parts = gone.map((g) => {
    const label = REFERENCES.find((r) => r.entity === g.entity)!.label;
    return g.deleted_at === null
      ? `${label} ${g.id} never known here`
      : `${label} ${g.id} deleted on the cloud at ${g.deleted_at}`;
  });
  return {
    kind: 'deleted_reference',
    edgeId,
    eventUuid: e.uuid,
    entity: named.entity,
    entityId: named.id,
    edgeValue: { reader_id: e.reader_id, access_point_id: e.access_point_id, access_zone_id: e.access_zone_id },
    cloudValue: gone,
    detail: `${parts.join(', ')}: the event is kept as the edge decided it, and moves no one into or out of a zone the cloud does not have`,
  };
}

/** The unknown_reference conflict of an event: it names the first
 * reference unknown, the event's references as sent, and each unknown one. */
export function unknownReferenceConflict(
  edgeId: number,
  e: UploadedAccessEvent,
  unknown: readonly UnknownReference[],
): NewConflict {
  const named = unknown[0]!;
  return {
    kind: 'unknown_reference',
    edgeId,
    eventUuid: e.uuid,
    entity: named.entity,
    entityId: named.id,
    edgeValue: {
      reader_id: e.reader_id,
      access_point_id: e.access_point_id,
      access_zone_id: e.access_zone_id,
      attendee_id: e.attendee_id,
      credential_id: e.credential_id,
    },
    cloudValue: unknown,
    detail: `${unknown.map((u) => `${u.entity.replace('_', ' ')} ${u.id}`).join(', ')}: not in this project; the event is kept as the edge sent it, for review, and moves no one, names no one and flags nothing`,
  };
}
