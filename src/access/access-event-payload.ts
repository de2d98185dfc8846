import type { AccessDeniedPayload, AccessGrantedPayload } from '../resources/access-events.js';
import type { Decision, DenialReason, ReasonDetail } from './engine.js';

// An access event as the world is shown it (spec: Real-time events): AccessGranted's fields or
// AccessDenied's, in the order they go on the wire. One builder, reached two ways: from a decision
// just made (the scan service's announcement, scan-service.ts) and from an access_events row
// (the outgoing webhooks' feed, feed/feed.ts, which adds the uuid and an uploaded event's fields;
// the cloud's announcement of an uploaded event, sync/upload-apply.ts). A stored row may hold
// nulls the engine never decides (an uploaded grant naming no holder, a holder deleted since), so
// the builder passes each field's type through: from a decision, nothing is null.

/** An access event's fields the payload shows, named as access_events names them. */
export interface AccessEventRow {
  granted: boolean | number;
  attendee_id: number | null;
  /** The holder's name, as a join (or the decision index) found it. */
  first_name: string | null;
  last_name: string | null;
  access_point_id: number;
  access_zone_id: number | null;
  credential_id: number | null;
  credential_value: string;
  reason: string | null;
  reason_detail: string | null;
  scanned_at: string;
}

/** A row whose reasons are the engine's own values (an uploaded one: sync/protocol.ts holds them to these). */
export type DecidedRow = AccessEventRow & { reason: DenialReason | null; reason_detail: ReasonDetail | null };

function grantedFields<Id extends number | null, Name extends string | null>(
  attendeeId: Id,
  firstName: Name,
  lastName: Name,
  accessPointId: number,
  zoneId: Id,
  credentialId: Id,
  timestamp: string,
) {
  return {
    attendee_id: attendeeId,
    attendee: { first_name: firstName, last_name: lastName },
    access_point_id: accessPointId,
    access_zone_id: zoneId,
    credential_id: credentialId,
    timestamp,
  };
}

function deniedFields<Reason extends string | null, Detail extends string | null>(
  credentialValue: string,
  accessPointId: number,
  reason: Reason,
  detail: Detail,
  timestamp: string,
) {
  return {
    credential_value: credentialValue,
    access_point_id: accessPointId,
    reason,
    reason_detail: detail,
    timestamp,
  };
}

type Granted = Extract<Decision, { granted: true }>;
type Denied = Extract<Decision, { granted: false }>;

/** From a decision just made: its AccessGranted or AccessDenied payload. `timestamp`: the scan's time as stored. */
export function decisionPayload(
  decision: Granted,
  accessPointId: number,
  credentialValue: string,
  timestamp: string,
): AccessGrantedPayload;
export function decisionPayload(
  decision: Denied,
  accessPointId: number,
  credentialValue: string,
  timestamp: string,
): AccessDeniedPayload;
export function decisionPayload(
  decision: Decision,
  accessPointId: number,
  credentialValue: string,
  timestamp: string,
): AccessGrantedPayload | AccessDeniedPayload {
  if (!decision.granted)
    return deniedFields(credentialValue, accessPointId, decision.reason, decision.detail, timestamp);
  const { attendee } = decision;
  return grantedFields(
    attendee.id,
    attendee.firstName,
    attendee.lastName,
    accessPointId,
    decision.zoneId,
    decision.credential.id,
    timestamp,
  );
}

/** From a stored row: its payload's fields as the row holds them (nulls included). */
export function rowPayload(row: AccessEventRow): Record<string, unknown> {
  return row.granted
    ? grantedFields(
        row.attendee_id,
        row.first_name,
        row.last_name,
        row.access_point_id,
        row.access_zone_id,
        row.credential_id,
        row.scanned_at,
      )
    : deniedFields(row.credential_value, row.access_point_id, row.reason, row.reason_detail, row.scanned_at);
}

export type RowAnnouncement =
  | { granted: true; payload: AccessGrantedPayload }
  | { granted: false; payload: AccessDeniedPayload };

/**
 * From a row, as the bus announces it; null when it fits neither payload: a grant naming no holder,
 * credential or zone, or a denial with no reason. No edge decides one (engine.ts); such a row is
 * stored as sent, and not announced live. A holder with no name known is announced with empty names.
 */
export function rowAnnouncement(row: DecidedRow): RowAnnouncement | null {
  if (row.granted) {
    if (row.attendee_id === null || row.credential_id === null || row.access_zone_id === null) return null;
    const payload = grantedFields(
      row.attendee_id,
      row.first_name ?? '',
      row.last_name ?? '',
      row.access_point_id,
      row.access_zone_id,
      row.credential_id,
      row.scanned_at,
    );
    return { granted: true, payload };
  }
  if (row.reason === null) return null;
  const payload = deniedFields(
    row.credential_value,
    row.access_point_id,
    row.reason,
    row.reason_detail,
    row.scanned_at,
  );
  return { granted: false, payload };
}
