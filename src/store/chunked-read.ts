import type { MessagePort } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { readSnapshot } from './transactions.js';

// What the parallel reader's thread does (src/workers/parallel-read.ts runs it; tests call it
// directly): reads each query in id chunks from its own read-only connection, in one snapshot,
// and posts every chunk as one JSON string, then an end marker per query. Only better-sqlite3
// and transactions.ts here: this is the worker's whole bundle. Why JSON: store/parallel-read.ts.

export interface ChunkQuery {
  /** `SELECT <id first, then columns> FROM <table>`: the id range and order are appended here. */
  sql: string;
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

export function readChunks(data: ChunkedReadData, post: (message: ChunkMessage) => void): void {
  try {
    const db = new Database(data.file, { readonly: true, fileMustExist: true });
    try {
      readSnapshot(db, () => {
        // One snapshot for every query.
        for (const [index, query] of data.queries.entries()) {
          const chunk = db.prepare(`${query.sql} WHERE id > ? ORDER BY id LIMIT ${data.chunk}`).raw(true);
          let after = query.after;
          for (;;) {
            const rows = chunk.all(after) as unknown[][];
            if (rows.length === 0) break;
            post(JSON.stringify(rows));
            after = rows[rows.length - 1]![0] as number;
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
