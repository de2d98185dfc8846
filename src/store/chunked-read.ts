import type { MessagePort } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { readSnapshot } from './transactions.js';

// What the parallel reader's thread does (src/workers/parallel-read.ts runs it; tests call it
// directly): reads each query in id chunks from its own read-only connection, in one snapshot,
// and posts every chunk as one JSON string, then an end marker per query. SQLite writes the JSON
// (json_group_array): half the cost of better-sqlite3 making JS values of the same rows, and no
// JSON.stringify here. Only better-sqlite3 and transactions.ts here: this is the worker's whole
// bundle. Why JSON: store/parallel-read.ts.

export interface ChunkQuery {
  table: string;
  /** The columns of each row, `id` first (SQL expressions of TEXT, INTEGER, REAL or NULL: no BLOB). */
  columns: string[];
  /** Rows with an id above this one (0: all). */
  after: number;
}

export type ChunkMessage = string | { end: number } | { error: string };

export interface ChunkedReadData {
  file: string;
  queries: ChunkQuery[];
  /** Rows per chunk. */
  chunk: number;
}

export interface ParallelReadWorkerData extends ChunkedReadData {
  /** A counter bumped with every post. */
  posted: SharedArrayBuffer;
  port: MessagePort;
}

/** One chunk's rows as a JSON array of arrays, and its last id (NULL: no rows left). */
export function chunkSql(query: ChunkQuery, chunk: number): string {
  const columns = query.columns.join(', ');
  return `SELECT json_group_array(json_array(${columns})), max(id) FROM (SELECT ${columns} FROM ${query.table} WHERE id > ? ORDER BY id LIMIT ${chunk})`;
}

export function readChunks(data: ChunkedReadData, post: (message: ChunkMessage) => void): void {
  try {
    const db = new Database(data.file, { readonly: true, fileMustExist: true });
    try {
      readSnapshot(db, () => {
        // One snapshot for every query.
        for (const [index, query] of data.queries.entries()) {
          const chunk = db.prepare(chunkSql(query, data.chunk)).raw(true);
          let after = query.after;
          for (;;) {
            const [json, last] = chunk.get(after) as [string, number | null];
            if (last === null) break;
            post(json);
            after = last;
          }
          post({ end: index });
        }
      });
    } finally {
      db.close();
    }
  } catch (err) {
    post({ error: err instanceof Error ? err.message : String(err) });
  }
}
