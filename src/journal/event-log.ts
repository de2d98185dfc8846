import type { AccessEventRow } from './access-event-row.js';
import type { Journal } from './event-journal.js';

// The durable access-event log with group commit (docs/engine.md). Decisions made in the same
// turn of the event loop are made durable together: append() queues the row and answers a
// promise, shared by the whole batch, that settles once the batch is in the access-event
// journal (journal/event-journal.ts: one write to an append-only file, ingested into SQLite by
// a worker), so nobody is told about a decision before it is stored. A batch is written on
// setImmediate (after the I/O callbacks that brought the scans in) or as soon as it reaches
// maxBatch rows. One row per decision is all the hot path writes: occupancy is rebuilt at
// start from a snapshot plus the events after it (access/presence.ts), so it survives a
// restart, or a kill, exactly as the log says. Durability: docs/storage.md.

/** The rows of one journal write-to-be and the one promise they all wait on. */
interface Batch {
  rows: AccessEventRow[];
  done: Promise<void>;
  resolve: () => void;
  reject: (err: unknown) => void;
}

function newBatch(): Batch {
  let resolve!: () => void;
  let reject!: (err: unknown) => void;
  const done = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // Nobody may be waiting when the commit fails (the callers' own handlers see it anyway).
  done.catch(() => {});
  return { rows: [], done, resolve, reject };
}

export interface EventLogStats {
  batches: number;
  events: number;
}

export class AccessEventLog {
  #batch: Batch | null = null;
  #scheduled: NodeJS.Immediate | null = null;
  /** While held (tests), batches wait unwritten: release() resolves this. */
  #hold: { count: number; released: Promise<void>; release: () => void } | null = null;
  /** When the last batch committed (ms, performance.now()), so idle work can wait for a lull. */
  lastCommitAt = 0;
  readonly stats: EventLogStats = { batches: 0, events: 0 };

  constructor(
    private readonly journal: Journal,
    private readonly maxBatch = 512,
  ) {}

  /** Resolves once every row appended so far is in access_events (readers of the table wait for this). */
  settled(): Promise<void> {
    if (this.#hold) return this.#hold.released.then(() => this.settled());
    this.flush();
    return this.journal.settled();
  }

  /**
   * Holds the group commit, for tests: a journal that cannot complete, stalled rather than
   * failing. Batches wait, unwritten and unanswered, until every hold is released. (A real
   * stalled file cannot stand in: the journal writes with one synchronous write(2), which would
   * hold the whole event loop, and every timer with it; docs/mqtt.md.)
   */
  hold(): () => void {
    if (!this.#hold) {
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      this.#hold = { count: 0, released, release };
    }
    const hold = this.#hold;
    hold.count++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      if (--hold.count > 0) return;
      this.#hold = null;
      hold.release();
      this.flush();
    };
  }

  /** The journal's figures (writes, bytes, ingest transactions). */
  get journalStats(): Journal['stats'] {
    return this.journal.stats;
  }

  /** Whether some appended rows are not in access_events yet. */
  get lagging(): boolean {
    return this.#batch !== null || this.journal.lagging;
  }

  /**
   * Settles once the row is in the journal (rejects when its batch could not be written). Every row of a
   * batch gets the same promise: one allocation per commit rather than per scan (garbage per
   * scan is what sets the durable p99, docs/performance.md).
   */
  append(row: AccessEventRow): Promise<void> {
    const batch = (this.#batch ??= newBatch());
    batch.rows.push(row);
    if (batch.rows.length >= this.maxBatch) this.flush();
    else this.#scheduled ??= setImmediate(this.#flushSoon);
    return batch.done;
  }

  readonly #flushSoon = () => this.flush();

  /** Writes everything queued to the journal, now. */
  flush(): void {
    if (this.#scheduled) clearImmediate(this.#scheduled);
    this.#scheduled = null;
    const batch = this.#batch;
    if (batch === null || this.#hold) return;
    this.#batch = null;
    try {
      this.journal.write(batch.rows);
    } catch (err) {
      batch.reject(err);
      return;
    }
    this.lastCommitAt = performance.now();
    this.stats.batches++;
    this.stats.events += batch.rows.length;
    batch.resolve();
  }
}
