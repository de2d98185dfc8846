import type { DenialReason, ReasonDetail } from './engine.js';

// What a scan is answered with, whichever way it was decided: at once (scan-service.ts) or
// again for a retried request id (scan-requests.ts).

export interface ScanAttendee {
  id: number;
  first_name: string;
  last_name: string;
}

export interface ScanResponse {
  success: true;
  access_granted: boolean;
  reason?: DenialReason;
  /** With every denial: which cause of not_authorized it was, else null (docs/engine.md). */
  reason_detail?: ReasonDetail | null;
  attendee: ScanAttendee | null;
  /** The access event's uuid, so a client can find its event anywhere (docs/sync.md). */
  event_id: string;
}

export interface ScanOutcome {
  uuid: string;
  granted: boolean;
  reason: DenialReason | null;
  reasonDetail: ReasonDetail | null;
  accessPointId: number;
  zoneId: number | null;
  decidedAt: string;
  decidedAtMs: number;
  /** true when this is the stored decision of an earlier scan with the same request_id. */
  replayed: boolean;
  answer: ScanResponse;
}

export function outcome(
  uuid: string,
  granted: boolean,
  reason: DenialReason | null,
  reasonDetail: ReasonDetail | null,
  accessPointId: number,
  zoneId: number | null,
  decidedAtMs: number,
  decidedAt: string,
  attendee: ScanAttendee | null,
  replayed: boolean,
): ScanOutcome {
  const answer: ScanResponse = granted
    ? { success: true, access_granted: true, attendee, event_id: uuid }
    : { success: true, access_granted: false, reason: reason!, reason_detail: reasonDetail, attendee, event_id: uuid };
  return { uuid, granted, reason, reasonDetail, accessPointId, zoneId, decidedAt, decidedAtMs, replayed, answer };
}
