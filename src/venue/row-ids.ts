import { AppError } from '../errors.js';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';

// Shared ids (docs/sync.md: ids). An attendee or credential has the same id on the cloud and
// on every edge, so an access event uploaded from an edge names the cloud's rows with no
// mapping table. Rows the cloud makes take ids below 2^32; rows an edge makes take ids from its
// own block, edge_id × 2^32 + n, which the cloud stores under the same id. SQLite would pick
// max(id) + 1, which jumps into another edge's block once one of its rows arrives, so both
// roles pick the next id of their own block explicitly.
//
// An id is never given twice in its block: a row deleted and another made must not meet under
// one id on the cloud. So the highest id given or seen per table and block is kept in
// row_id_marks (migration 22), which a delete does not lower; the next id is above both it and
// the highest row (a row downloaded into the block). The cloud raises the mark of an edge's
// block for each row the edge uploads and answers it at enrolment, so an edge wiped and
// enrolled again starts above every id of its first life.

export const ID_BLOCK = 2 ** 32;
/** Tables whose rows an edge creates and uploads. */
export const SHARED_ID_TABLES: ReadonlySet<string> = new Set(['attendees', 'credentials']);

/** The block base per store: 0 on a cloud or standalone box; edge_id × 2^32 on a linked edge;
 * null on an edge not yet linked (it does not know its block: creating is refused). */
const blocks = new WeakMap<Database, number | null>();

export function setIdBlock(db: Database, base: number | null): void {
  blocks.set(db, base);
}

export function blockOfEdge(edgeId: number): number {
  return edgeId * ID_BLOCK;
}

/** Whether `id` lies in the block at `base`. */
export function inBlock(id: number, base: number): boolean {
  return id > base && id < base + ID_BLOCK;
}

/** The highest id given or seen in `table` within the block at `base` (the mark, or a row above it); null: none yet. */
export function highestInBlock(db: Database, table: string, base: number): number | null {
  const mark = statement(db, 'SELECT high FROM row_id_marks WHERE table_name = ? AND block_base = ?')
    .pluck()
    .get(table, base) as number | undefined;
  const row = statement(db, `SELECT MAX(id) FROM ${table} WHERE id > ? AND id < ?`)
    .pluck()
    .get(base, base + ID_BLOCK) as number | null;
  const high = Math.max(mark ?? base, row ?? base);
  return high > base ? high : null;
}

/** Notes that `id` was given or seen in its block (inside the
 * write that uses it): no id at or below it is given there again. */
export function raiseMark(db: Database, table: string, id: number): void {
  if (!Number.isSafeInteger(id) || id < 1) return;
  statement(
    db,
    'INSERT INTO row_id_marks (table_name, block_base, high) VALUES (?, ?, ?) ON CONFLICT (table_name, block_base) DO UPDATE SET high = MAX(row_id_marks.high, excluded.high)',
  ).run(table, Math.floor(id / ID_BLOCK) * ID_BLOCK, id);
}

/** Takes the next `count` ids of this store's block in `table` (one of SHARED_ID_TABLES), inside the
 * write that inserts them; answers the first (a bulk write numbers the rest in order). */
export function nextRowId(db: Database, table: string, count = 1): number {
  const base = blocks.has(db) ? blocks.get(db)! : 0;
  if (base === null) throw new AppError('sync_not_linked');
  let first = (highestInBlock(db, table, base) ?? base) + 1;
  if (first + Math.max(count, 1) - 1 >= base + ID_BLOCK) first = freeRunBelowTop(db, table, base, Math.max(count, 1));
  if (count > 0) raiseMark(db, table, first + count - 1);
  return first;
}

/**
 * A block whose top id is taken (a row an upload put there before edges were held to their own
 * blocks): the next ids come from the highest gap between rows that no deletion of this table
 * reached (its tombstones), so no row is ever given an id beyond its block or one held. Never
 * met on a cloud whose edges uploaded only inside their blocks (sync/upload-ids.ts).
 */
function freeRunBelowTop(db: Database, table: string, base: number, count: number): number {
  const entity = table === 'attendees' ? 'attendee' : 'credential';
  const end = base + ID_BLOCK;
  const rows = statement(
    db,
    `SELECT id, LEAD(id) OVER (ORDER BY id) AS above FROM ${table} WHERE id > ? AND id < ? ORDER BY id DESC`,
  ).iterate(base, end) as Iterable<{
    id: number;
    above: number | null;
  }>;
  for (const { id, above } of rows) {
    const ceiling = above ?? end;
    if (ceiling - id - 1 < count) continue;
    const deleted = statement(
      db,
      'SELECT MAX(entity_id) FROM tombstones WHERE entity = ? AND entity_id > ? AND entity_id < ?',
    )
      .pluck()
      .get(entity, id, ceiling) as number | null;
    const start = Math.max(id, deleted ?? id) + 1;
    if (start + count - 1 < ceiling) return start;
  }
  throw new AppError('id_space_exhausted', { table });
}
