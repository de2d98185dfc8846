import {
  closeSync,
  fdatasyncSync,
  ftruncateSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Logger } from '../logger.js';
import type { Database } from '../store/database.js';
import { writeTransaction } from '../store/transactions.js';
import { emptyTightened, privateDirectory, reportTightened } from '../store/private-files.js';
import type { AccessEventRow } from './access-event-row.js';
import {
  INSERT_EVENT_SQL,
  journalLine,
  journalValues,
  MARK_SQL,
  POSITION_SQL,
  SEGMENT_FILE,
  SLOT,
  SLOTS,
  segmentName,
} from './journal-format.js';
import type { IngestMessage, IngestWorkerData } from './journal-ingest.js';
import { workerFile } from '../workers/worker-file.js';

// The access-event journal: where a decision becomes durable (docs/storage.md).
// The group commit appends its rows to a plain append-only file, one JSON array per line, with
// one write(2): from then on a killed process cannot lose them (the same promise SQLite's WAL
// gives with synchronous=NORMAL; with FULL the file is fdatasync'ed before anyone is answered).
// A worker thread then inserts them into access_events with its own connection, in large
// transactions, and records how far it got (event_journal_position) in the same transaction.
// At start, anything journaled but not ingested is ingested before anything reads the log.
//
// Why not commit to SQLite on the main thread, as before: each small commit writes a dozen WAL
// pages for the table and its indexes and kept the event loop 72 % busy at 20k scans/s, and a
// checkpoint's fsync stalled those commits for milliseconds: p99 3.4 ms (docs/performance.md).
// Appending a line costs a few microseconds and is never stalled by a checkpoint.
//
// Readers of access_events that must see every answered scan (events API, analytics, the
// occupancy snapshot) wait for settled() first; the lag is one worker transaction.

/** A journal write longer than this counts as slow (stats.slowWrites). */
const SLOW_WRITE_MS = 1;

/** A journal's figures. A slow write held the event loop over SLOW_WRITE_MS (the file system made
 * it wait: an fsync elsewhere on it, docs/performance.md); the longest is the longest since the
 * figure was last set to 0. */
export function journalStats() {
  return { writes: 0, bytes: 0, ingested: 0, transactions: 0, ingestFailures: 0, slowWrites: 0, longestWriteMs: 0 };
}

/** Counts a write that started at `started` (performance.now()) and has just ended. */
export function timedWrite(stats: ReturnType<typeof journalStats>, started: number): void {
  const took = performance.now() - started;
  if (took > SLOW_WRITE_MS) stats.slowWrites++;
  if (took > stats.longestWriteMs) stats.longestWriteMs = took;
  stats.writes++;
}

export interface JournalOptions {
  /** Directory of the segment files. */
  dir: string;
  /** The SQLite file the worker ingests into. */
  dbFile: string;
  synchronous: 'NORMAL' | 'FULL';
  /** A new segment file is started past this size; ingested segments are deleted. */
  segmentBytes: number;
  /** The worker's pause between transactions, so rows gather into large ones. */
  intervalMs: number;
}

/** What the group commit writes decided rows to (event-log.ts): this journal, or on PostgreSQL
 * (a cloud's store, no file a worker could ingest into) the table at once (direct-journal.ts). */
export interface Journal {
  readonly stats: EventJournal['stats'];
  readonly lagging: boolean;
  recover(): number;
  start(): void;
  write(rows: readonly AccessEventRow[]): void;
  onIngest(listener: () => void): void;
  settled(): Promise<void>;
  stop(timeoutMs?: number): Promise<void>;
}

export class EventJournal implements Journal {
  #fd = -1;
  #segment = 0;
  #offset = 0;
  /** The first segment of this run (the worker starts there once the old ones are recovered). */
  #firstSegment = 0;
  /** Segments below this one are ingested and removed (or being removed). */
  #removedBelow = 0;
  /** How far the worker has ingested. */
  #ingestedSegment = 0;
  #ingestedOffset = 0;
  #waiters: { segment: number; offset: number; resolve: () => void }[] = [];
  readonly #ingestListeners: (() => void)[] = [];
  /** What the main thread has written, for the worker (journal-format.ts SLOT). */
  readonly #state = new Int32Array(new SharedArrayBuffer(SLOTS * 4));
  #worker: Worker | null = null;
  #stopping = false;
  /** Figures for /metrics and benches. */
  readonly stats = journalStats();

  constructor(
    private readonly db: Database,
    private readonly options: JournalOptions,
    private readonly log: Logger,
  ) {}

  /** Whether something written is not in access_events yet. */
  get lagging(): boolean {
    return this.#ingestedSegment < this.#segment || this.#ingestedOffset < this.#offset;
  }

  /**
   * At start, before anything reads access_events: ingests what an earlier run journaled and
   * did not get to (a kill, a power cut, a crash), then removes the old segments. A line cut
   * short by a power cut ends the replay of its segment (it was never answered: its write had
   * not returned). Answers how many events were taken in.
   */
  recover(): number {
    const report = emptyTightened();
    privateDirectory(this.options.dir, report); // 0700, its segments 0600 (docs/security.md, attack 12)
    reportTightened(this.log, report);
    const position = this.db.prepare(POSITION_SQL).get() as { segment: number; offset: number };
    const segments = readdirSync(this.options.dir)
      .map((name) => SEGMENT_FILE.exec(name))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => Number(m[1]))
      .sort((a, b) => a - b);
    const insert = this.db.prepare(INSERT_EVENT_SQL);
    const mark = this.db.prepare(MARK_SQL);
    let recovered = 0;
    for (const segment of segments) {
      if (segment < position.segment) continue;
      const path = join(this.options.dir, segmentName(segment));
      if (!statSync(path).isFile()) {
        this.log.warn({ path }, 'not a regular file in the access-event journal; skipped');
        continue;
      }
      const bytes = readFileSync(path);
      let at = segment === position.segment ? position.offset : 0;
      const rows: unknown[][] = [];
      while (at < bytes.length) {
        const newline = bytes.indexOf(0x0a, at);
        if (newline === -1) {
          this.log.warn(
            { segment, offset: at },
            'access-event journal ends in a partial line (never answered); ignored',
          );
          break;
        }
        try {
          rows.push(JSON.parse(bytes.toString('utf8', at, newline)) as unknown[]);
        } catch {
          this.log.warn(
            { segment, offset: at },
            'access-event journal line unreadable; the rest of the segment is ignored',
          );
          break;
        }
        at = newline + 1;
      }
      writeTransaction(this.db, () => {
        for (const values of rows) insert.run(journalValues(values)); // an older build's line: padded
        mark.run(segment, at);
      });
      recovered += rows.length;
    }
    for (const segment of segments) rmSync(join(this.options.dir, segmentName(segment)), { force: true });
    this.#segment = Math.max(position.segment, segments.at(-1) ?? 0) + 1;
    this.#firstSegment = this.#segment;
    this.#removedBelow = this.#segment;
    this.#ingestedSegment = this.#segment;
    this.#ingestedOffset = 0;
    if (recovered > 0)
      this.log.info({ events: recovered, segments: segments.length }, 'access events recovered from the journal');
    return recovered;
  }

  /** Opens a fresh segment and starts the ingest worker (after recover()). */
  start(): void {
    this.#open();
    this.#spawn();
  }

  /**
   * Appends the rows durably (one write; fdatasync too with synchronous=FULL) and tells the
   * worker. Throws when they could not be written, and then none of them is in the journal.
   */
  write(rows: readonly AccessEventRow[]): void {
    if (this.#fd === -1) throw new Error('the access-event journal is not open');
    let text = '';
    for (const row of rows) text += `${journalLine(row)}\n`;
    const before = this.#offset;
    let written = 0;
    const started = performance.now();
    try {
      written = writeSync(this.#fd, text);
      if (written !== Buffer.byteLength(text))
        throw new Error(`short write to the access-event journal (${written} bytes)`);
      if (this.options.synchronous === 'FULL') fdatasyncSync(this.#fd);
    } catch (err) {
      if (written > 0) ftruncateSync(this.#fd, before); // take back a partial line
      throw err;
    }
    timedWrite(this.stats, started);
    this.#offset += written;
    this.stats.bytes += written;
    const state = this.#state;
    Atomics.store(state, SLOT.segment, this.#segment);
    Atomics.store(state, SLOT.end, this.#offset);
    Atomics.add(state, SLOT.writes, 1);
    Atomics.notify(state, SLOT.writes);
    if (this.#offset >= this.options.segmentBytes) this.#rotate();
  }

  /** Calls `listener` after each ingest transaction (new rows
   * in access_events: the durable feed's consumers read them). */
  onIngest(listener: () => void): void {
    this.#ingestListeners.push(listener);
  }

  /** Resolves once everything written so far is in access_events. */
  settled(): Promise<void> {
    if (!this.lagging) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ segment: this.#segment, offset: this.#offset, resolve }));
  }

  /** Waits (at most timeoutMs) for the worker to ingest everything,
   * then stops it. Segments not ingested stay for the next start. */
  async stop(timeoutMs = 10_000): Promise<void> {
    this.#stopping = true;
    const worker = this.#worker;
    if (worker) {
      worker.ref(); // held while it finishes, or a process with nothing else to do exits under us
      const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
      Atomics.store(this.#state, SLOT.stop, 1);
      Atomics.add(this.#state, SLOT.writes, 1); // a worker about to wait for a write must not miss this
      Atomics.notify(this.#state, SLOT.writes);
      Atomics.notify(this.#state, SLOT.stop);
      let timer: NodeJS.Timeout | undefined;
      const timedOut = await Promise.race([
        exited.then(() => false),
        new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), timeoutMs))),
      ]);
      clearTimeout(timer);
      if (timedOut) this.log.error('access-event journal not fully ingested at stop; the next start ingests it');
      await worker.terminate();
      this.#worker = null;
    }
    if (this.#fd !== -1) closeSync(this.#fd);
    this.#fd = -1;
    if (!this.lagging)
      for (let segment = this.#firstSegment; segment <= this.#segment; segment++)
        rmSync(join(this.options.dir, segmentName(segment)), { force: true });
  }

  #open(): void {
    privateDirectory(this.options.dir, emptyTightened());
    this.#fd = openSync(join(this.options.dir, segmentName(this.#segment)), 'a', 0o600);
    this.#offset = 0;
  }

  /** The next segment; the worker reads the closed one to its end. */
  #rotate(): void {
    closeSync(this.#fd);
    this.#segment++;
    this.#open();
    Atomics.store(this.#state, SLOT.segment, this.#segment);
    Atomics.store(this.#state, SLOT.end, 0);
  }

  #spawn(): void {
    const workerData: IngestWorkerData = {
      file: this.options.dbFile,
      dir: this.options.dir,
      synchronous: this.options.synchronous,
      firstSegment: this.#firstSegment,
      shared: this.#state.buffer as SharedArrayBuffer,
      intervalMs: this.options.intervalMs,
    };
    const worker = new Worker(workerFile('ingest'), { workerData });
    worker.on('message', (message: IngestMessage) => {
      if (message.ok) this.#ingested(message.segment, message.offset, message.events);
      else {
        this.stats.ingestFailures++;
        this.log.warn(
          { error: message.error },
          'access events not ingested yet; retrying (they are safe in the journal)',
        );
      }
    });
    worker.on('error', (err) => this.log.error({ err }, 'access-event ingest worker failed'));
    worker.on('exit', () => {
      if (this.#worker !== worker || this.#stopping) return;
      // Died under us: a new one carries on from the position stored with the last transaction.
      this.log.error('access-event ingest worker exited; starting another');
      this.#worker = null;
      setTimeout(() => this.#stopping || this.#spawn(), 1000).unref();
    });
    worker.unref();
    this.#worker = worker;
  }

  #ingested(segment: number, offset: number, events: number): void {
    this.#ingestedSegment = segment;
    this.#ingestedOffset = offset;
    this.stats.ingested += events;
    this.stats.transactions++;
    // Segments wholly ingested go, off the event loop: unlinking a full segment frees 64 MiB of
    // extents, 7-8 ms of the file system's work that would hold every scan (docs/performance.md).
    for (; this.#removedBelow < segment; this.#removedBelow++) {
      const file = join(this.options.dir, segmentName(this.#removedBelow));
      rm(file, { force: true }).catch((err: unknown) =>
        this.log.warn({ err, file }, 'an ingested access-event journal segment could not be removed'),
      );
    }
    for (const listener of this.#ingestListeners) listener();
    if (this.#waiters.length > 0) {
      const done = (w: { segment: number; offset: number }) =>
        w.segment < segment || (w.segment === segment && w.offset <= offset);
      const ready = this.#waiters.filter(done);
      this.#waiters = this.#waiters.filter((w) => !done(w));
      for (const w of ready) w.resolve();
    }
  }
}
