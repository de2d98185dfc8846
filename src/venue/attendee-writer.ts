import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import { nextRowId } from './row-ids.js';
import { nextVersion, reserveVersions, writeTombstone } from './versioned-table.js';

// The writes of attendees and their credentials that do not go one by one through the REST
// services (attendees.ts, credentials.ts): the bulk import (attendee-import.ts), the
// attendee-sync webhook (webhooks/attendee-sync.ts) and the cloud's apply of an edge's uploaded
// changes (sync/upload-changes.ts, upload-credentials.ts, deleted-rows.ts). One writer, so the
// rules every row follows are written once: each row written takes the next change version (a
// batch takes one block, its rows numbered in order); a row made here without an id takes the
// next id of this store's block (shared ids: row-ids.ts); updated_at is the write's time.
// Each caller judges what to write and announces it (the outbox, the bus); the values are bound
// as the caller gives them, so a value the store refuses fails the write as it would have.

/** Column → value as bound (SQLite refuses what it cannot take: the caller's refusal path). */
export type RowValues = Record<string, unknown>;

/**
 * An attendee to make (`id`: the edge's shared id, else the next of this store's block), with its credential if any.
 */
export interface AttendeeCreate {
  op: 'create';
  id?: number;
  values: RowValues;
  /** Default: the write's time. */
  createdAt?: string;
  /** The attendee's credential, made right after it (its id: the next of this store's block). */
  credential?: RowValues;
}

/** Fields of an attendee to set; none: only a new version, so a download sends the row again (updated_at kept). */
export interface AttendeeUpdate {
  op: 'update';
  id: number;
  values: RowValues;
}

export type AttendeeWrite = AttendeeCreate | AttendeeUpdate;

/** The versions a batch took (a closed range) and how many credentials it made. */
export interface WrittenBatch {
  fromVersion: number;
  toVersion: number;
  credentials: number;
}

type Bound = Parameters<ReturnType<typeof statement>['run']>;

/**
 * Writes `writes` in order, in the caller's transaction: one block of change versions for the
 * whole batch (an attendee's version, then its credential's), one block of ids per table for
 * the rows made without one. `now` is the write's time.
 */
export function writeAttendees(
  db: Database,
  projectId: number,
  writes: readonly AttendeeWrite[],
  now: string,
): WrittenBatch {
  const credentials = writes.filter((w) => w.op === 'create' && w.credential !== undefined).length;
  const needed = writes.length + credentials;
  const toVersion = reserveVersions(db, needed);
  const fromVersion = toVersion - needed + 1;
  let version = fromVersion;
  const unnumbered = writes.filter((w) => w.op === 'create' && w.id === undefined).length;
  let attendeeId = unnumbered > 0 ? nextRowId(db, 'attendees', unnumbered) : 0;
  let credentialId = credentials > 0 ? nextRowId(db, 'credentials', credentials) : 0;
  const attendees = new Inserts(db, 'attendees');
  const holdings = new Inserts(db, 'credentials');
  for (const w of writes) {
    if (w.op === 'update') {
      updateRow(db, projectId, w.id, w.values, version++, now);
      continue;
    }
    const id = w.id ?? attendeeId++;
    attendees.run(id, projectId, w.values, version++, w.createdAt ?? now, now);
    if (w.credential)
      holdings.run(credentialId++, projectId, { attendee_id: id, ...w.credential }, version++, now, now);
  }
  return { fromVersion, toVersion, credentials };
}

/**
 * A credential an edge issued, under its shared id (`values` names id, attendee_id and the rest); one change version.
 */
export function insertCredential(
  db: Database,
  projectId: number,
  values: RowValues & { id: number },
  createdAt: string,
  now: string,
): void {
  const { id, ...rest } = values;
  new Inserts(db, 'credentials').run(id, projectId, rest, nextVersion(db), createdAt, now);
}

/** Revokes an active credential (a new version); answers 1, or 0 when it was not active. */
export function revokeCredential(db: Database, projectId: number, id: number, revokedAt: string, now: string): number {
  return statement(
    db,
    "UPDATE credentials SET status = 'revoked', revoked_at = ?, version = ?, updated_at = ? WHERE id = ? AND project_id = ? AND status = 'active'",
  ).run(revokedAt, nextVersion(db), now, id, projectId).changes;
}

/**
 * Deletes an attendee with their blocklist entries and credentials (docs/venue.md: attendees),
 * each leaving a tombstone dated `now` with a version of its own, in that order. Every
 * statement is this project's.
 */
export function deleteAttendee(db: Database, projectId: number, id: number, now: string): void {
  const blocks = statement(
    db,
    'SELECT id FROM blocklist_entries WHERE project_id = ? AND (attendee_id = ? OR credential_id IN (SELECT id FROM credentials WHERE attendee_id = ?))',
  );
  for (const entry of blocks.pluck().all(projectId, id, id) as number[]) {
    statement(db, 'DELETE FROM blocklist_entries WHERE id = ? AND project_id = ?').run(entry, projectId);
    writeTombstone(db, projectId, 'blocklist_entry', entry, nextVersion(db), now);
  }
  for (const credential of statement(db, 'SELECT id FROM credentials WHERE attendee_id = ? AND project_id = ?')
    .pluck()
    .all(id, projectId) as number[]) {
    statement(db, 'DELETE FROM credentials WHERE id = ? AND project_id = ?').run(credential, projectId);
    writeTombstone(db, projectId, 'credential', credential, nextVersion(db), now);
  }
  statement(db, 'DELETE FROM attendees WHERE id = ? AND project_id = ?').run(id, projectId);
  writeTombstone(db, projectId, 'attendee', id, nextVersion(db), now);
}

/** Inserts into one table: id, project_id, the values' columns, the version and both times. The statement is
 * prepared per column set and kept while the rows of a batch share theirs (100,000 rows an import). */
class Inserts {
  #columns: string[] = [];
  #statement: ReturnType<typeof statement> | null = null;

  constructor(
    private readonly db: Database,
    private readonly table: 'attendees' | 'credentials',
  ) {}

  run(id: number, projectId: number, values: RowValues, version: number, createdAt: string, updatedAt: string): void {
    const columns = Object.keys(values);
    if (this.#statement === null || !sameColumns(columns, this.#columns)) {
      this.#columns = columns;
      this.#statement = statement(
        this.db,
        `INSERT INTO ${this.table} (${['id', 'project_id', ...columns, 'version', 'created_at', 'updated_at'].join(', ')}) VALUES (${columns.map(() => '?, ').join('')}?, ?, ?, ?, ?)`,
      );
    }
    this.#statement.run(id, projectId, ...(Object.values(values) as Bound), version, createdAt, updatedAt);
  }
}

const sameColumns = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && a.every((c, i) => c === b[i]);

function updateRow(db: Database, projectId: number, id: number, values: RowValues, version: number, now: string): void {
  const columns = Object.keys(values);
  if (columns.length === 0) {
    statement(db, 'UPDATE attendees SET version = ? WHERE id = ? AND project_id = ?').run(version, id, projectId);
    return;
  }
  statement(
    db,
    `UPDATE attendees SET ${columns.map((c) => `${c} = ?`).join(', ')}, version = ?, updated_at = ? WHERE id = ? AND project_id = ?`,
  ).run(...(Object.values(values) as Bound), version, now, id, projectId);
}
