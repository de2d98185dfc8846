import type { AccessEventRow } from './access-event-row.js';

// The access-event journal's file format, shared by the main thread that writes it
// (event-journal.ts) and the ingest worker that reads it into SQLite (journal-ingest.ts).
// Nothing here may import more than types and SQL (access-event-rows.ts): the worker's bundle carries this file.

/** access_events columns in journal order: the insert is access-event-rows.ts's (the table's one writer). */
export { INSERT_EVENT_SQL } from './access-event-rows.js';
/** How far the journal is in access_events, written in the same transaction as the rows. */
export const MARK_SQL = 'UPDATE event_journal_position SET segment = ?, offset = ? WHERE id = 1';
export const POSITION_SQL = 'SELECT segment, offset FROM event_journal_position WHERE id = 1';

export const SEGMENT_FILE = /^events-(\d{10})\.jsonl$/;
export const segmentName = (n: number): string => `events-${String(n).padStart(10, '0')}.jsonl`;

/**
 * The Int32Array the main thread shares with the ingest worker, by slot: how many writes so far
 * (the worker waits on it), the segment being written, its end offset, and 1 once stopping.
 */
export const SLOT = { writes: 0, segment: 1, end: 2, stop: 3 } as const;
export const SLOTS = 4;

/** Values in a journal line. Lines written before the clock fields have 17, before reason_detail 19,
 * before offline_verified 20: the rest are null (offline_verified: 0). */
export const JOURNAL_VALUES = 21;

/** A journal line's values as INSERT_EVENT_SQL takes them: a line an older
 * build wrote padded with nulls (both readers, recovery and ingest), offline_verified with 0. */
export function journalValues(values: unknown[]): unknown[] {
  while (values.length < JOURNAL_VALUES - 1) values.push(null);
  if (values.length < JOURNAL_VALUES) values.push(0);
  return values;
}

/** One journal line (without its newline): the row's values in INSERT_EVENT_SQL order. */
export function journalLine(r: AccessEventRow): string {
  return JSON.stringify(rowValues(r));
}

/** The row's values in INSERT_EVENT_SQL order. */
export function rowValues(r: AccessEventRow): unknown[] {
  return [
    r.uuid,
    r.projectId,
    r.accessPointId,
    r.zoneId,
    r.readerId,
    r.credentialId,
    r.credentialValue,
    r.attendeeId,
    r.granted ? 1 : 0,
    r.reason,
    r.movement,
    r.counted ? 1 : 0,
    r.fromZoneId,
    r.scannedAt,
    r.decidedAt,
    r.source,
    r.requestKey,
    r.clockOffsetMs,
    r.clockUnsynchronised,
    r.reasonDetail,
    r.offlineVerified ? 1 : 0,
  ];
}
