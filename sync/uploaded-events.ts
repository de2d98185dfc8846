import type { UploadedEventRow } from '../src/journal/access-event-rows.js';
import type { Movement } from './double-entries.js';
import type { UploadBody, UploadedAccessEvent } from './protocol.js';

// An upload's items as the cloud takes them (upload-apply.ts): in which order, and what an
// access event is stored as.

/**
 * A batch's change items before its access events: an event may name a walk-in the same batch
 * creates, and the edge's feed orders the two by its clock, which a step back can invert. Every
 * change is dated on its own, so nothing else depends on the order.
 */
export function changesFirst(items: UploadBody['items']): UploadBody['items'] {
  return [...items.filter((i) => i.kind === 'change'), ...items.filter((i) => i.kind === 'access')];
}

/** What an uploaded access event is stored as. Its clock: the offset and state the edge stamped
 * on it (a null offset: never measured), or the batch's when the edge stamped none. */
export function uploadedEventRow(
  e: UploadedAccessEvent,
  projectId: number,
  edgeId: number,
  now: string,
  clock: UploadBody['clock'],
): UploadedEventRow {
  return {
    uuid: e.uuid,
    projectId,
    accessPointId: e.access_point_id,
    accessZoneId: e.access_zone_id,
    readerId: e.reader_id,
    credentialId: e.credential_id,
    credentialValue: e.credential_value,
    attendeeId: e.attendee_id,
    granted: e.granted,
    reason: e.reason,
    reasonDetail: e.reason_detail ?? null,
    movement: e.movement,
    scannedAt: e.scanned_at,
    decidedAt: e.decided_at,
    source: e.source,
    edgeId,
    uploadedAt: now,
    clockOffsetMs: e.clock_offset_ms !== undefined ? e.clock_offset_ms : clock.offset_ms,
    clockSynchronised: e.clock_synchronised !== undefined ? e.clock_synchronised : clock.synchronised,
    offlineVerified: e.offline_verified ?? false,
  };
}

/**
 * Whether the store keeps the row's scan time as its effective time unchanged: the clock it was
 * decided by was synchronised, or its offset is unknown or nil. The negation of the condition under
 * which access_events.effective_at corrects the time (src/store/sync-migrations.ts, the migration
 * that adds the column): the correction itself is the store's alone.
 */
export const effectiveAsScanned = (row: UploadedEventRow): boolean =>
  row.clockSynchronised || row.clockOffsetMs === null || row.clockOffsetMs === 0;

/** A new granted movement as the duplicate rule reads it (double-entries.ts): not flagged yet. */
export const storedMovement = (id: number, e: UploadedAccessEvent, edgeId: number, at: string): Movement => ({
  id,
  uuid: e.uuid,
  attendee_id: e.attendee_id!,
  edge_id: edgeId,
  movement: e.movement!,
  access_zone_id: e.access_zone_id,
  effective_at: at,
  duplicate_of: null,
});
