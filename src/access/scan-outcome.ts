import type { DenialReason } from './engine.js';

// What a scan is answered with, whichever way it was decided: at once (scan-service.ts) or
// again for a retried request id (scan-requests.ts).

export interface AnswerAttendee {
  id: number;
  first_name: string;
  last_name: string;
}

export interface ScanAnswer {
  success: true;
  access_granted: boolean;
  reason?: DenialReason;
  attendee: AnswerAttendee | null;
}

export interface ScanOutcome {
  uuid: string;
  granted: boolean;
  reason: DenialReason | null;
  accessPointId: number;
  zoneId: number | null;
  decidedAt: string;
  decidedAtMs: number;
  /** true when this is the stored decision of an earlier scan with the same request_id. */
  replayed: boolean;
  answer: ScanAnswer;
}

export function outcome(
  uuid: string,
  granted: boolean,
  reason: DenialReason | null,
  accessPointId: number,
  zoneId: number | null,
  decidedAtMs: number,
  decidedAt: string,
  attendee: AnswerAttendee | null,
  replayed: boolean,
): ScanOutcome {
  const answer: ScanAnswer = granted ? { success: true, access_granted: true, attendee } : { success: true, access_granted: false, reason: reason!, attendee };
  return { uuid, granted, reason, accessPointId, zoneId, decidedAt, decidedAtMs, replayed, answer };
}
