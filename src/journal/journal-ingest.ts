import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { writeTransaction } from '../store/transactions.js';
import { INSERT_EVENT_SQL, journalValues, MARK_SQL, POSITION_SQL, SLOT, segmentName } from './journal-format.js';

// What the ingest worker does (src/workers/ingest.ts runs it in its thread; tests run it in
// theirs): reads the journal's segment files from the position stored in SQLite and inserts
// their lines into access_events, in one transaction per step with the new position. The
// worker reads the files itself, so the main thread keeps no copy of what it wrote (nothing
// that lives on in its heap until ingested), and a restarted worker carries on from the stored
// position. Only node builtins, better-sqlite3 and small store helpers here: this is the
// worker's whole bundle.

export interface IngestOptions {
  /** The SQLite file. */
  file: string;
  /** The journal's directory. */
  dir: string;
  synchronous: 'NORMAL' | 'FULL';
  /** The first segment of this run: older ones were recovered at start. */
  firstSegment: number;
}

export interface IngestWorkerData extends IngestOptions {
  /** The shared Int32Array's buffer (journal-format.ts SLOT). */
  shared: SharedArrayBuffer;
  /** The pause between transactions, so rows gather into large ones. */
  intervalMs: number;
}

export type IngestMessage =
  | { ok: true; segment: number; offset: number; events: number }
  | { ok: false; error: string };

/** idle: nothing new; done: all taken; more: a full transaction, more waiting; failed: see the message. */
export type IngestOutcome = 'idle' | 'done' | 'more' | 'failed';

/** At most this many rows per transaction, so the write lock is
 * never held long (the main thread's own writes wait for it). */
export const MAX_ROWS = 2000;
const READ_BYTES = 4 << 20;

export class JournalIngest {
  readonly #db: Database.Database;
  readonly #insert: Database.Statement;
  readonly #mark: Database.Statement;
  readonly #slice = Buffer.alloc(READ_BYTES);
  #segment: number;
  #offset: number;

  constructor(private readonly options: IngestOptions) {
    const db = new Database(options.file);
    db.pragma('busy_timeout = 10000');
    db.pragma(`synchronous = ${options.synchronous}`);
    db.pragma('wal_autocheckpoint = 0'); // the checkpointer's job (store/checkpointer.ts)
    this.#db = db;
    this.#insert = db.prepare(INSERT_EVENT_SQL);
    this.#mark = db.prepare(MARK_SQL);
    const position = db.prepare(POSITION_SQL).get() as { segment: number; offset: number };
    this.#segment = Math.max(position.segment, options.firstSegment);
    this.#offset = this.#segment === position.segment ? position.offset : 0;
  }

  /** Where the next step starts. */
  get position(): { segment: number; offset: number } {
    return { segment: this.#segment, offset: this.#offset };
  }

  /**
   * One transaction of what was written up to `end` of segment `current` (closed segments read
   * to their end), at most MAX_ROWS rows. Only complete lines are taken.
   */
  step(current: number, end: number, post: (message: IngestMessage) => void): IngestOutcome {
    const rows: unknown[][] = [];
    let s = this.#segment;
    let o = this.#offset;
    try {
      for (;;) {
        const limit = s === current ? end : existsSync(this.#file(s)) ? statSync(this.#file(s)).size : 0;
        o = this.#readLines(s, o, limit, rows, MAX_ROWS - rows.length);
        if (s >= current || rows.length >= MAX_ROWS || o < limit) break;
        s++;
        o = 0;
      }
      if (s === this.#segment && o === this.#offset) return 'idle';
      writeTransaction(this.#db, () => {
        for (const values of rows) this.#insert.run(journalValues(values)); // a line from before the clock fields or reason_detail: padded
        this.#mark.run(s, o);
      });
    } catch (err) {
      post({ ok: false, error: err instanceof Error ? err.message : String(err) });
      return 'failed';
    }
    this.#segment = s;
    this.#offset = o;
    post({ ok: true, segment: s, offset: o, events: rows.length });
    return rows.length >= MAX_ROWS ? 'more' : 'done';
  }

  close(): void {
    this.#db.close();
  }

  #file(n: number): string {
    return join(this.options.dir, segmentName(n));
  }

  /** Complete lines of segment n from byte `from` up to `limit`, at most
   * `room` of them; answers the offset just past the last line taken. */
  #readLines(n: number, from: number, limit: number, rows: unknown[][], room: number, whole = false): number {
    const length = whole ? limit - from : Math.min(limit - from, READ_BYTES); // a backlog is read a slice at a time
    if (length <= 0 || room <= 0) return from;
    const buffer = whole ? Buffer.alloc(length) : this.#slice;
    const fd = openSync(this.#file(n), 'r');
    let got = 0;
    try {
      while (got < length) {
        const read = readSync(fd, buffer, got, length - got, from + got);
        if (read === 0) break;
        got += read;
      }
    } finally {
      closeSync(fd);
    }
    let at = 0;
    for (
      let newline = buffer.indexOf(10, 0);
      newline !== -1 && newline < got && room > 0;
      newline = buffer.indexOf(10, at), room--
    ) {
      rows.push(JSON.parse(buffer.toString('utf8', at, newline)) as unknown[]);
      at = newline + 1;
    }
    // One line longer than a slice: read it whole.
    if (at === 0 && !whole && length === READ_BYTES) return this.#readLines(n, from, limit, rows, room, true);
    return from + at;
  }
}

/**
 * The worker's loop: a step whenever the main thread has written (it bumps SLOT.writes and
 * notifies), everything since the last transaction in one, so the busier the box the larger and
 * cheaper each transaction; a pause of intervalMs after each to let rows gather (a stop cuts it
 * short); a failed step retried every second (the rows stay in the journal). Ends once stopping
 * and everything written is in.
 */
export function ingestLoop(
  ingest: JournalIngest,
  state: Int32Array,
  intervalMs: number,
  post: (message: IngestMessage) => void,
): void {
  for (;;) {
    const seen = Atomics.load(state, SLOT.writes);
    const stop = Atomics.load(state, SLOT.stop) === 1;
    const outcome = ingest.step(Atomics.load(state, SLOT.segment), Atomics.load(state, SLOT.end), post);
    if (outcome === 'more') continue;
    if (stop && outcome !== 'failed') break;
    if (outcome === 'failed') {
      Atomics.wait(state, SLOT.stop, 0, 1000);
      continue;
    }
    if (outcome === 'done') Atomics.wait(state, SLOT.stop, 0, intervalMs);
    Atomics.wait(state, SLOT.writes, seen, 1000);
  }
}
