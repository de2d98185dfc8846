import { AppError } from '../errors.js';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';

// Shared ids (issue 26 item 9; docs/sync.md: ids). An attendee or credential has the same id
// on the cloud and on every edge, so an access event uploaded from an edge names the cloud's
// rows with no mapping table. Rows the cloud makes take ids below 2^32; rows an edge makes take
// ids from its own block, edge_id × 2^32 + n, which the cloud stores under the same id. SQLite
// would pick max(id) + 1, which jumps into another edge's block once one of its rows arrives,
// so both roles pick the next id of their own block explicitly (one indexed max() per insert).

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

/** The next free id of this store's block in `table` (one of SHARED_ID_TABLES). */
export function nextRowId(db: Database, table: string): number {
  const base = blocks.has(db) ? blocks.get(db)! : 0;
  if (base === null) throw new AppError('sync_not_linked');
  const max = statement(db, `SELECT MAX(id) FROM ${table} WHERE id > ? AND id < ?`)
    .pluck()
    .get(base, base + ID_BLOCK) as number | null;
  return (max ?? base) + 1;
}
