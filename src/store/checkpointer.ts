import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { Logger } from '../logger.js';

// WAL checkpoints off the writer (DESIGN: SQLite on the hot path). The appliance's connection
// runs with wal_autocheckpoint = 0, so no commit ever pays for copying the WAL back into the
// database file; this worker thread opens its own connection and runs a PASSIVE checkpoint
// (never blocks the writer) every intervalMs. The worker is plain JavaScript evaluated from a
// string, so it runs the same from the esbuild bundle and from the TypeScript sources in tests.

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
const timer = setInterval(run, workerData.intervalMs);
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
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { ...this.options, driver } });
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
