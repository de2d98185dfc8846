import Database from 'better-sqlite3';

// What the checkpoint thread does (src/workers/checkpoint.ts runs it on a timer; tests call it
// directly): PASSIVE WAL checkpoints from a connection of its own, only when something was
// committed since the last one. SQLite's `PRAGMA data_version` changes with every commit of
// another connection (the journal's ingest worker, a REST write on the main thread, a CLI
// command in another process), read from the shared WAL index, so asking costs nothing.
// Only better-sqlite3 here: this is the worker's whole bundle. Why little and often:
// store/checkpointer.ts.

export interface CheckpointOptions {
  file: string;
  synchronous: string;
}

export interface CheckpointWorkerData extends CheckpointOptions {
  /** How often to ask whether anything was committed. */
  intervalMs: number;
}

export interface CheckpointResult {
  ok: boolean;
  busy?: number;
  log?: number;
  checkpointed?: number;
  error?: string;
}

export class WalCheckpoints {
  readonly #db: Database.Database;
  #seen: number | null = null;

  constructor(options: CheckpointOptions) {
    this.#db = new Database(options.file);
    this.#db.pragma('busy_timeout = 1000');
    this.#db.pragma(`synchronous = ${options.synchronous}`);
  }

  /** A checkpoint when anything was committed since the last tick; null when nothing was. */
  tick(): CheckpointResult | null {
    const version = this.#db.pragma('data_version', { simple: true }) as number;
    if (version === this.#seen) return null;
    this.#seen = version;
    return this.run();
  }

  /** One PASSIVE checkpoint: never takes the writer's lock; reports how much it folded back. */
  run(): CheckpointResult {
    try {
      const [result] = this.#db.pragma('wal_checkpoint(PASSIVE)') as {
        busy: number;
        log: number;
        checkpointed: number;
      }[];
      return { ok: true, busy: result!.busy, log: result!.log, checkpointed: result!.checkpointed };
    } catch (err) {
      return { ok: false, error: err instanceof Error ? err.message : String(err) };
    }
  }

  close(): void {
    this.#db.close();
  }
}
