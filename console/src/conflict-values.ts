// The two sides of a sync conflict in words (docs/sync.md "Conflicts"; the shapes per kind are
// conflictSchema's in sync/conflicts.ts): an edge's change as sent ({event, data}), a row the
// cloud holds, a deletion ({deleted_at}), an access event's references and the ones gone.

/** An uploaded change as the edge sent it (id_conflict, deleted_row, a refused_change kept whole). */
export interface SentChange {
  event: string;
  data: Record<string, unknown>;
}

/** One reference of an access event the cloud no longer has (deleted_reference); deleted_at null: never known here. */
export interface GoneReference {
  entity: string;
  id: number;
  deleted_at: string | null;
}

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

export function sentChange(v: unknown): SentChange | null {
  if (!isRecord(v) || typeof v.event !== 'string' || !isRecord(v.data)) return null;
  return { event: v.event, data: v.data };
}

/** deleted_row's cloud side when the cloud deleted: `{deleted_at}` alone (otherwise it is the cloud's row). */
export function deletedAt(v: unknown): string | null {
  return isRecord(v) && typeof v.deleted_at === 'string' && Object.keys(v).length === 1 ? v.deleted_at : null;
}

// Bookkeeping, not what the row says: the id is on the conflict's own line, the base of an
// update is the edge's, not a value it sent.
const HIDDEN = new Set(['id', 'project_id', 'previous_attributes', 'created_at', 'updated_at', 'version']);

const fieldValue = (v: unknown): string => (typeof v === 'string' ? `“${v}”` : JSON.stringify(v));

/** A row or a change's data as `field “value”` pairs, empty fields left out (and an attendee's own id named twice, as its changes do). */
export function rowText(v: unknown): string {
  if (!isRecord(v)) return v === null || v === undefined ? '—' : fieldValue(v);
  const parts = Object.entries(v)
    .filter(
      ([k, x]) =>
        !HIDDEN.has(k) &&
        !(k === 'attendee_id' && x === v.id) &&
        x !== null &&
        x !== undefined &&
        x !== '' &&
        !(isRecord(x) && Object.keys(x).length === 0),
    )
    .map(([k, x]) => `${k} ${fieldValue(x)}`);
  return parts.length ? parts.join(', ') : '—';
}

/** deleted_reference's and unknown_reference's edge side, the event's {reader_id, access_point_id, access_zone_id, attendee_id?, credential_id?}, in that order, the ones it has. */
export function eventReferences(v: unknown): { entity: string; id: number }[] {
  if (!isRecord(v)) return [];
  const out: { entity: string; id: number }[] = [];
  for (const entity of ['reader', 'access_point', 'access_zone', 'attendee', 'credential']) {
    const id = v[`${entity}_id`];
    if (typeof id === 'number') out.push({ entity, id });
  }
  return out;
}

/** unknown_reference's cloud side: each reference the edge's project never held. */
export function unknownReferences(v: unknown): { entity: string; id: number }[] {
  if (!Array.isArray(v)) return [];
  return v
    .filter(
      (u): u is { entity: string; id: number } =>
        isRecord(u) && typeof u.entity === 'string' && typeof u.id === 'number',
    )
    .map((u) => ({ entity: u.entity, id: u.id }));
}

/** deleted_reference's cloud side: each reference gone. */
export function goneReferences(v: unknown): GoneReference[] {
  if (!Array.isArray(v)) return [];
  return v
    .filter((g): g is GoneReference => isRecord(g) && typeof g.entity === 'string' && typeof g.id === 'number')
    .map((g) => ({ entity: g.entity, id: g.id, deleted_at: typeof g.deleted_at === 'string' ? g.deleted_at : null }));
}
