import { createRequire } from 'node:module';
import { MessageChannel, Worker, receiveMessageOnPort } from 'node:worker_threads';

// Reads big tables on a second core while the caller reads others on the first (issue 5: a
// million credentials loaded in <= 5 s at start; two thirds of that was better-sqlite3 making JS
// values of the rows). The worker opens its own read-only connection, runs the queries in turn,
// reads each in id chunks and posts every chunk as one JSON string: the cheapest thing to hand
// between threads (one copy) and JSON.parse is the fastest way to make the arrays again, about
// half the cost of reading the rows from SQLite. The caller stays synchronous: it does its own
// share, then takes the chunks with receiveMessageOnPort, waiting on a shared counter when the
// worker is behind. The worker is JavaScript evaluated from a string, so it runs the same from
// the bundle and from the TypeScript sources in tests.

const WORKER_SOURCE = `
const { workerData } = require('node:worker_threads');
const posted = new Int32Array(workerData.posted);
const port = workerData.port;
const post = (message) => {
  port.postMessage(message);
  Atomics.add(posted, 0, 1);
  Atomics.notify(posted, 0);
};
try {
  const Database = require(workerData.driver);
  const db = new Database(workerData.file, { readonly: true, fileMustExist: true });
  db.exec('BEGIN'); // one snapshot for every query
  workerData.queries.forEach((query, index) => {
    const chunk = db.prepare(query.sql + ' WHERE id > ? ORDER BY id LIMIT ' + workerData.chunk).raw(true);
    let after = query.after;
    for (;;) {
      const rows = chunk.all(after);
      if (rows.length === 0) break;
      post(JSON.stringify(rows));
      after = rows[rows.length - 1][0];
    }
    post({ end: index });
  });
  db.exec('COMMIT');
  db.close();
} catch (err) {
  post({ error: String((err && err.message) || err) });
}
port.close();
`;

export type RawRow = unknown[];

export interface ParallelQuery {
  /** `SELECT <id first, then columns> FROM <table>`: the worker appends the id range and order. */
  sql: string;
  /** Rows with an id above this one (0: all). */
  after: number;
}

export interface ParallelRead {
  /** The rows of query `index`, in id order, as the worker reads them. Take the queries in order. */
  rows(index: number): Iterable<RawRow>;
}

/** Starts reading the queries, one after the other, from the database file in a worker thread. */
export function readInParallel(file: string, queries: ParallelQuery[], timeoutMs = 120_000): ParallelRead {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  const posted = new SharedArrayBuffer(4);
  const counter = new Int32Array(posted);
  const { port1, port2 } = new MessageChannel();
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { driver, file, queries, chunk: 20_000, posted, port: port2 },
    transferList: [port2],
  });
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
        const message = next() as string | { end: number } | { error: string };
        if (typeof message === 'string') {
          yield* JSON.parse(message) as RawRow[];
        } else if ('error' in message) {
          port1.close();
          throw new Error(`reading in a worker failed: ${message.error}`);
        } else {
          if (message.end !== index) throw new Error(`parallel read: rows of query ${message.end} taken as query ${index}`);
          if (index === queries.length - 1) port1.close();
          return;
        }
      }
    },
  };
}
