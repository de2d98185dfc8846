import { MessageChannel, Worker, receiveMessageOnPort } from 'node:worker_threads';
import { workerFile } from '../workers/worker-file.js';
import type { ChunkMessage, ChunkQuery, ParallelReadWorkerData } from './chunked-read.js';

// Reads big tables in a worker thread on the second core while the caller builds what it needs
// of the rows (docs/engine.md: a million credentials loaded at start). The worker opens its own
// read-only connection, runs the queries in turn, reads each in id chunks and posts every chunk as
// one JSON string that SQLite wrote: the cheapest thing to hand between threads (one copy), and
// JSON.parse is the fastest way to make the arrays again, a third of what better-sqlite3 takes to
// make the same rows. The caller stays synchronous: it takes the chunks with receiveMessageOnPort,
// waiting on a shared counter when the worker is behind. The reading is store/chunked-read.ts, in
// the thread of src/workers/parallel-read.ts.

export type RawRow = unknown[];

export type ParallelQuery = ChunkQuery;

export interface ParallelRead {
  /** The rows of query `index`, in id order, as the worker reads them. Take the queries in order. */
  rows(index: number): Iterable<RawRow>;
}

/** Starts reading the queries, one after the other, from the database file in a worker thread. */
export function readInParallel(file: string, queries: ParallelQuery[], timeoutMs = 120_000): ParallelRead {
  const posted = new SharedArrayBuffer(4);
  const counter = new Int32Array(posted);
  const { port1, port2 } = new MessageChannel();
  const workerData: ParallelReadWorkerData = { file, queries, chunk: 20_000, posted, port: port2 };
  const worker = new Worker(workerFile('parallel-read'), { workerData, transferList: [port2] });
  worker.unref();
  let taken = 0;
  const next = (): unknown => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const received = receiveMessageOnPort(port1);
      if (received) {
        taken += 1;
        return received.message;
      }
      // Nothing yet: wait until the worker posts more (a posted message can take a moment to arrive).
      const left = deadline - Date.now();
      if (left <= 0) {
        void worker.terminate();
        throw new Error(`reading in a worker took longer than ${timeoutMs} ms`);
      }
      Atomics.wait(counter, 0, taken, Math.min(left, 5));
    }
  };
  return {
    *rows(index: number) {
      for (;;) {
        const message = next() as ChunkMessage;
        if (typeof message === 'string') {
          yield* JSON.parse(message) as RawRow[];
        } else if ('error' in message) {
          port1.close();
          throw new Error(`reading in a worker failed: ${message.error}`);
        } else {
          if (message.end !== index)
            throw new Error(`parallel read: rows of query ${message.end} taken as query ${index}`);
          if (index === queries.length - 1) port1.close();
          return;
        }
      }
    },
  };
}
