// The sync screen's logic without a browser (docs/sync.md): what GET
// .../sync/status says about this box (standalone, an edge and its link, a cloud and its edges),
// and the conflicts the cloud flagged, kept current by SyncConflict events and reviews.

export interface EdgeResource {
  id: number;
  name: string;
  last_contact_at: string | null;
  last_upload_at: string | null;
  revoked_at: string | null;
  protocol_version: number | null;
  backlog: number | null;
  clock_offset_ms: number | null;
  /** The user the edge stands on (who issued or last re-confirmed it); null once deleted. Absent from an older appliance. */
  issued_by?: number | null;
  /** Set while the cloud refuses the edge because its issuer lost access, until an administrator re-confirms it. */
  suspended_at?: string | null;
  suspended_reason?: string | null;
}

export interface SyncStatus {
  role: 'standalone' | 'edge' | 'cloud';
  state: string;
  edge_id: number | null;
  online: boolean;
  last_error: string | null;
  last_upload_at: string | null;
  last_download_at: string | null;
  backlog: number;
  oldest_unsynced_at: string | null;
  cursor: string | null;
  clock_offset_ms: number | null;
  clock_synchronised: boolean;
  latency_ms: number | null;
  /** Edge: the cloud URL its link uses now (one of several, docs/sync.md); absent from an older appliance. */
  cloud_url?: string | null;
  edges?: EdgeResource[];
  /** Not in every appliance's answer yet: absent and null both mean never. */
  cloud_rollback?: CloudRollback | null;
}

/** The last time this edge found its cloud behind it (a cloud restored from a backup): it uploaded again what the cloud no longer had and pulled from the start. */
export interface CloudRollback {
  detected_at: string;
  resent_items: number;
  pulled_from_start: boolean;
}

// The cloud's kinds, in its order (sync/conflicts.ts).
export const CONFLICT_KINDS = [
  'duplicate_entry',
  'revoked_credential',
  'blocklisted',
  'attendee_field',
  'credential_value',
  'refused_change',
  'id_conflict',
  'deleted_row',
  'deleted_reference',
  'unknown_reference',
] as const;
export type ConflictKind = (typeof CONFLICT_KINDS)[number];

export interface Conflict {
  id: number;
  kind: ConflictKind;
  edge_id: number | null;
  event_id: string | null;
  duplicate_of: string | null;
  entity: string | null;
  entity_id: number | null;
  field: string | null;
  /** attendee_field, refused_change: the edge's value; a change refused whole, id_conflict, deleted_row: the change as sent ({event, data}); deleted_reference: the event's references. */
  edge_value: unknown;
  /** attendee_field, refused_change: the cloud's value (kept); id_conflict: the row it holds (null: none in this project); deleted_row: {deleted_at} or its row as the deletion found it; deleted_reference: what is gone. */
  cloud_value: unknown;
  /** refused_change, id_conflict, deleted_row, deleted_reference: what happened, in words. */
  detail: string | null;
  created_at: string;
  reviewed_at: string | null;
  /** A flag a later arrival explained, kept for the record; it still counts as unreviewed until marked. */
  cleared_at: string | null;
}

export interface ConflictFilter {
  kind: ConflictKind | '';
  /** 'false': to review (the default view), 'true': reviewed, '': all. */
  reviewed: 'false' | 'true' | '';
}

/** What the screen shows: nothing to sync here, an edge's link, or a cloud's edges and conflicts. */
export type SyncMode = 'standalone' | 'not-synced' | 'edge' | 'cloud';

export function modeOf(status: SyncStatus): SyncMode {
  if (status.role === 'edge') return 'edge';
  if (status.role === 'cloud') return 'cloud';
  // An edge answers 'not synced here' for a project other than the one it syncs (sync/index.ts).
  return status.state === 'not synced here' ? 'not-synced' : 'standalone';
}

/** The link as one word the page colours: online, offline, starting, incompatible, refused, suspended. */
export function linkState(status: SyncStatus): string {
  if (status.online) return 'online';
  return ['starting', 'incompatible', 'refused', 'suspended'].includes(status.state) ? status.state : 'offline';
}

/** An edge re-confirmed on the cloud (its answer) in the place of the listed one. */
export function replaceEdge(edges: readonly EdgeResource[], edge: EdgeResource): EdgeResource[] {
  return edges.map((e) => (e.id === edge.id ? edge : e));
}

/** The last time the edge and its cloud got through to each other, either way. */
export function lastSuccess(status: Pick<SyncStatus, 'last_upload_at' | 'last_download_at'>): string | null {
  const { last_upload_at: up, last_download_at: down } = status;
  if (up === null) return down;
  if (down === null) return up;
  return Date.parse(up) >= Date.parse(down) ? up : down;
}

export function matches(c: Conflict, filter: ConflictFilter): boolean {
  if (filter.kind && c.kind !== filter.kind) return false;
  if (filter.reviewed === 'false' && c.reviewed_at !== null) return false;
  if (filter.reviewed === 'true' && c.reviewed_at === null) return false;
  return true;
}

/**
 * A conflict from the socket (SyncConflict) or a review's answer: it replaces the listed one
 * (a review shown where it was, so the reviewer sees it done), or joins the list at its place
 * (oldest first, as the API lists them) when it matches the filter.
 */
export function applyConflict(list: readonly Conflict[], c: Conflict, filter: ConflictFilter): Conflict[] {
  if (list.some((x) => x.id === c.id)) return list.map((x) => (x.id === c.id ? c : x));
  if (!matches(c, filter)) return [...list];
  return [...list, c].sort((a, b) => a.id - b.id);
}

/** A uuid shortened for a row ("0193a9c4…"); the whole one is in the title. */
export const shortId = (uuid: string | null): string => (uuid ? `${uuid.slice(0, 8)}…` : '');

/** An edge or cloud value of an attendee field as text. */
export function valueText(v: unknown): string {
  if (v === null || v === undefined) return '—';
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/** Clock offset in words: "+120 ms", "−2.5 s". */
export function offsetText(ms: number | null): string {
  if (ms === null) return '';
  const sign = ms > 0 ? '+' : ms < 0 ? '−' : '';
  const abs = Math.abs(ms);
  return abs >= 1000 ? `${sign}${(abs / 1000).toFixed(1)} s` : `${sign}${abs} ms`;
}
