import type { Database } from '../store/database.js';
import { paddedRuns, places, halvingRuns, rowsOf } from '../store/batches.js';
import { statement } from '../store/statements.js';

// access_events' only writer (test/house/table-owners.test.ts): the rows the journal's ingest
// and recovery insert (journal-ingest.ts, event-journal.ts), the events an edge uploads to
// the cloud with the flags the cloud works out for them (sync/upload-rows.ts, upload-apply.ts,
// double-entries.ts), and retention's deletes (event-retention.ts). Imported by the ingest
// worker's bundle too: nothing here but SQL and small store helpers.

/** access_events columns in journal order; a journal line is the JSON array of these values (journal-format.ts). */
export const INSERT_EVENT_SQL = `INSERT INTO access_events (uuid, project_id, access_point_id, access_zone_id, reader_id, credential_id, credential_value, attendee_id,
  granted, reason, movement, counted, from_zone_id, scanned_at, decided_at, source, request_key, clock_offset_ms, clock_unsynchronised, reason_detail,
  offline_verified)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT DO NOTHING`;

/** An access event as an edge uploaded it, with what the cloud stores beside it. */
export interface UploadedEventRow {
  uuid: string;
  projectId: number;
  accessPointId: number | null;
  accessZoneId: number | null;
  readerId: number | null;
  credentialId: number | null;
  credentialValue: string | null;
  attendeeId: number | null;
  granted: boolean;
  reason: string | null;
  reasonDetail: string | null;
  movement: string | null;
  scannedAt: string;
  decidedAt: string;
  source: string;
  edgeId: number;
  uploadedAt: string;
  clockOffsetMs: number | null;
  clockSynchronised: boolean;
  /** The edge decided it from a signed value's claims (access/signed-values.ts). */
  offlineVerified: boolean;
}

/** What the cloud works out for a new uploaded event (sync/upload-apply.ts), stored with it. */
export interface UploadedEventOutcome {
  /** It moved its holder on the cloud, from this zone if any. */
  counted: boolean;
  fromZoneId: number | null;
  review: string | null;
  deletedReference: string | null;
}

const UPLOADED_COLUMNS = `uuid, project_id, access_point_id, access_zone_id, reader_id, credential_id, credential_value, attendee_id, granted, reason, reason_detail, movement,
  scanned_at, decided_at, source, edge_id, uploaded_at, clock_offset_ms, clock_unsynchronised, offline_verified,
  counted, from_zone_id, review, deleted_reference`;
const UPLOADED_PLACES = '?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?';

/** `e`'s values in UPLOADED_COLUMNS' order, onto `values` (one array per statement, no copies). */
function pushUploaded(values: unknown[], e: UploadedEventRow): void {
  values.push(
    e.uuid,
    e.projectId,
    e.accessPointId,
    e.accessZoneId,
    e.readerId,
    e.credentialId,
    e.credentialValue,
    e.attendeeId,
    e.granted ? 1 : 0,
    e.reason,
    e.reasonDetail,
    e.movement,
    e.scannedAt,
    e.decidedAt,
    e.source,
    e.edgeId,
    e.uploadedAt,
    e.clockOffsetMs,
    e.clockSynchronised ? 0 : 1,
    e.offlineVerified ? 1 : 0,
  );
}

/** A new uploaded event with the id it is stored under and what the cloud worked out for it. */
export interface DecidedEvent {
  row: UploadedEventRow;
  id: number;
  outcome: UploadedEventOutcome;
}

/**
 * Stores uploaded events once each (a uuid is unique: one stored before, or earlier in `rows`,
 * stores nothing), not counted and unflagged, in `rows`' order, a few statements for the lot
 * (store/batches.ts). Answers each new row's id and effective time by uuid.
 */
export function insertUploadedEvents(
  db: Database,
  rows: readonly UploadedEventRow[],
): Map<string, { id: number; effective_at: string }> {
  const stored = new Map<string, { id: number; effective_at: string }>();
  for (const run of halvingRuns(rows)) {
    const sql = `INSERT INTO access_events (${UPLOADED_COLUMNS})
       VALUES ${rowsOf(run.length, `(${UPLOADED_PLACES}, 0, NULL, NULL, NULL)`)}
       ON CONFLICT (uuid) DO NOTHING RETURNING uuid, id, effective_at`;
    const values: unknown[] = [];
    for (const e of run) pushUploaded(values, e);
    for (const row of statement(db, sql).all(values) as {
      uuid: string;
      id: number;
      effective_at: string;
    }[])
      stored.set(row.uuid, { id: row.id, effective_at: row.effective_at });
  }
  return stored;
}

/**
 * Of `uuids`, the ones stored already, and the id the store gives the next access event (the
 * highest plus one, as SQLite numbers rows: in a write transaction, whose lock holds every other
 * writer off until the commit), in one statement. A scalar subquery per uuid of a VALUES list, not
 * an IN list: a generic plan made while the table was small stays a scan of it (docs/decisions.md).
 */
export function storedUuids(db: Database, uuids: readonly string[]): { stored: Set<string>; nextId: number } {
  const stored = new Set<string>();
  let nextId = 1;
  for (const run of paddedRuns([...new Set(uuids)]))
    for (const row of statement(
      db,
      `WITH sent (uuid) AS (VALUES ${rowsOf(run.length, '(CAST(? AS TEXT))')})
       SELECT uuid, (SELECT x.id FROM access_events x WHERE x.uuid = sent.uuid) AS id,
         (SELECT COALESCE(MAX(id), 0) + 1 FROM access_events) AS next FROM sent`,
    ).all(...run) as { uuid: string; id: number | null; next: number }[]) {
      if (row.id !== null) stored.add(row.uuid);
      nextId = row.next;
    }
  return { stored, nextId };
}

/**
 * Stores new uploaded events (none stored before: storedUuids) under the ids given (storedUuids' nextId
 * on), each with its outcome, in the order given: every row written once, whole.
 */
export function insertDecidedEvents(db: Database, events: readonly DecidedEvent[]): void {
  for (const run of halvingRuns(events)) {
    const sql = `INSERT INTO access_events (id, ${UPLOADED_COLUMNS})
       VALUES ${rowsOf(run.length, `(?, ${UPLOADED_PLACES}, ?, ?, ?, ?)`)}`;
    const values: unknown[] = [];
    for (const { row, id, outcome } of run) {
      values.push(id);
      pushUploaded(values, row);
      values.push(outcome.counted ? 1 : 0, outcome.fromZoneId, outcome.review, outcome.deletedReference);
    }
    statement(db, sql).run(values);
  }
}

/** The references an uploaded event names that the cloud deleted meanwhile (sync/upload-flags.ts). */
export function flagDeletedReference(db: Database, id: number, deletedReference: string): void {
  statement(db, 'UPDATE access_events SET deleted_reference = ? WHERE id = ?').run(deletedReference, id);
}

/** Why an uploaded event is kept for review (sync/upload-flags.ts). */
export function flagReview(db: Database, id: number, review: string): void {
  statement(db, 'UPDATE access_events SET review = ? WHERE id = ?').run(review, id);
}

/** Uploaded movements that moved their holder on the cloud: [id, the zone each moved from, if any]. */
export function markCounted(db: Database, moved: readonly [id: number, fromZoneId: number | null][]): void {
  const byZone = new Map<number | null, number[]>();
  for (const [id, from] of moved) {
    const ids = byZone.get(from);
    if (ids) ids.push(id);
    else byZone.set(from, [id]);
  }
  for (const [from, ids] of byZone)
    for (const run of paddedRuns(ids))
      statement(db, `UPDATE access_events SET counted = 1, from_zone_id = ? WHERE id IN ${places(run.length)}`).run(
        from,
        ...run,
      );
}

/** The entry an event repeats (a double entry, sync/double-entries.ts), or null: it repeats none. */
export function setDuplicateOf(db: Database, id: number, duplicateOf: string | null): void {
  statement(db, 'UPDATE access_events SET duplicate_of = ? WHERE id = ?').run(duplicateOf, id);
}

/** Retention: deletes the event when it was decided before `decidedBefore`; answers whether it did. */
export function deleteDecidedBefore(db: Database, id: number, decidedBefore: string): boolean {
  return (
    statement(db, 'DELETE FROM access_events WHERE id = ? AND decided_at < ?').run(id, decidedBefore).changes === 1
  );
}

/** Decided rows (journal order: journal-format.ts rowValues) inserted at once, in one transaction
 * of the caller's (a PostgreSQL store's journal: direct-journal.ts). */
export function insertDecided(db: Database, rows: readonly unknown[][]): void {
  const insert = statement(db, INSERT_EVENT_SQL);
  for (const values of rows) insert.run(values);
}
