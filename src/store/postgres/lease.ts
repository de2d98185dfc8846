import type { PgDatabase } from './pg-database.js';

// Work one instance of a cloud does at a time (docs/operations.md: several instances), held with
// a session advisory lock (PgDatabase#tryLease): free again when the holding process's connection ends.

/** The webhook dispatcher's lease (outgoing-webhooks/dispatcher.ts `delivers`). */
export const DELIVERY_LEASE = 4_711_002;

/** Whether this process holds `key`, asked of the database at most once a second while it does not. */
export function lease(db: PgDatabase, key: number, everyMs = 1000): () => boolean {
  let triedAt = Number.NEGATIVE_INFINITY;
  let held = false;
  return () => {
    if (held) return true;
    const now = performance.now();
    if (now - triedAt < everyMs) return false;
    triedAt = now;
    held = db.tryLease(key);
    return held;
  };
}
