import { Worker } from 'node:worker_threads';
import type { Logger } from '../logger.js';
import { workerFile } from '../workers/worker-file.js';
import type { CheckpointResult, CheckpointWorkerData } from './wal-checkpoints.js';

export type { CheckpointResult };

// WAL checkpoints off the writer (docs/storage.md). The appliance's connection
// runs with wal_autocheckpoint = 0, so no commit ever pays for copying the WAL back into the
// database file; this worker thread opens its own connection and runs PASSIVE checkpoints,
// which never take the writer's lock. A checkpoint still fsyncs the database file, and on this
// kind of machine that fsync stalls the writer's own WAL appends; the stall grows with the
// amount checkpointed (measured at 20k scans/s: p99 1.5 ms with no checkpoint in the window,
// 17-50 ms checkpointing every 0.5-1 s, 3 ms every 50 ms). So the worker checkpoints little and
// often: every intervalMs, when anything was committed since the last one (wal-checkpoints.ts,
// run in the thread of src/workers/checkpoint.ts). docs/storage.md and docs/performance.md.

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
    const workerData: CheckpointWorkerData = { ...this.options };
    const worker = new Worker(workerFile('checkpoint'), { workerData });
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
