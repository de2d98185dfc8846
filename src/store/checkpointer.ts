import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { Logger } from '../logger.js';

// WAL checkpoints off the writer (DESIGN: SQLite on the hot path). The appliance's connection
// runs with wal_autocheckpoint = 0, so no commit ever pays for copying the WAL back into the
// database file; this worker thread opens its own connection and runs PASSIVE checkpoints,
// which never take the writer's lock. A checkpoint still fsyncs the database file, and on this
// kind of machine that fsync stalls the writer's own WAL appends; the stall grows with the
// amount checkpointed (measured at 20k scans/s: p99 1.5 ms with no checkpoint in the window,
// 17-50 ms checkpointing every 0.5-1 s, 3 ms every 50 ms). So the worker checkpoints little and
// often: every intervalMs, when anything was committed since the last one: by the journal's
// ingest worker, a REST write on the main thread, a CLI command in another process (SQLite's
// `PRAGMA data_version` changes with every commit of another connection, read from the shared
// WAL index, so asking costs nothing). docs/storage.md and docs/performance.md. The worker is plain JavaScript evaluated from a string, so it runs
// the same from the esbuild bundle and from the TypeScript sources in tests.

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file);
db.pragma('busy_timeout = 1000');
db.pragma('synchronous = ' + workerData.synchronous);
const run = () => {
  try {
    const [result] = db.pragma('wal_checkpoint(PASSIVE)');
    parentPort.postMessage({ ok: true, busy: result.busy, log: result.log, checkpointed: result.checkpointed });
  } catch (err) {
    parentPort.postMessage({ ok: false, error: String(err && err.message || err) });
  }
};
let seen = null;
const tick = () => {
  const version = db.pragma('data_version', { simple: true });
  if (version === seen) return; // nothing committed since the last checkpoint
  seen = version;
  run();
};
const timer = setInterval(tick, workerData.intervalMs);
parentPort.on('message', (message) => {
  if (message !== 'stop') return;
  clearInterval(timer);
  run();
  db.close();
  parentPort.close();
});
`;

export interface CheckpointResult {
  ok: boolean;
  busy?: number;
  log?: number;
  checkpointed?: number;
  error?: string;
}

export class Checkpointer {
  #worker: Worker | null = null;
  #last: CheckpointResult | null = null;

  constructor(
    private readonly options: { file: string; synchronous: string; intervalMs: number },
    private readonly log: Logger,
  ) {}

  /** The last checkpoint's outcome (for /metrics and tests). */
  get last(): CheckpointResult | null {
    return this.#last;
  }

  start(): void {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    const workerData = { ...this.options, driver };
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData });
    worker.on('message', (result: CheckpointResult) => {
      this.#last = result;
      if (!result.ok) this.log.warn({ error: result.error }, 'WAL checkpoint failed');
    });
    worker.on('error', (err) => this.log.error({ err }, 'checkpoint worker failed'));
    worker.unref();
    this.#worker = worker;
  }

  /** Runs a last checkpoint and ends the worker. */
  async stop(): Promise<void> {
    const worker = this.#worker;
    if (!worker) return;
    this.#worker = null;
    // Held referenced while it finishes, or a process with nothing else to do exits under us.
    worker.ref();
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    worker.postMessage('stop');
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([exited, new Promise((resolve) => (timer = setTimeout(resolve, 5000)))]);
    clearTimeout(timer);
    await worker.terminate();
  }
}
