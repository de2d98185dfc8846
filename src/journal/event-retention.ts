import type { Registry } from 'prom-client';
import { type Clock, iso } from '../clock.js';
import type { Config } from '../config/schema.js';
import type { Logger } from '../logger.js';
import { gaugesIn } from '../metrics.js';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import { isStoreBusy, writeTransaction } from '../store/transactions.js';
import { PAST_LIMIT_MS } from '../access/scan-time.js';
import { deleteDecidedBefore } from './access-event-rows.js';

// Bounded disk on the box (docs/storage.md, "Retention of access events"):
// access events older than the configured days go, in the background, in short transactions.
// An event goes only when nothing still needs it: the cloud has acknowledged it (on an edge),
// the presence snapshot covers it (occupancy is the snapshot plus the events after its mark),
// every feed consumer has read it, and a retry of its request id can no longer come. The newest
// event always stays: access_events.id is a rowid without AUTOINCREMENT, so deleting the
// highest id would hand it out again, behind every cursor and the presence mark.

/** The feed consumer whose cursor is the edge's upload position: what the cloud acknowledged. */
export const SYNC_UPLOAD_CONSUMER = 'sync:upload';

/**
 * A retried request id must find its first decision for at least this long after it was decided
 * (scan-requests.ts answers retries from access_events.request_key once memory has let go): the
 * 7 days a timestamped scan may be replayed (scan-time.ts), and a day more. No configuration
 * prunes an event decided more recently than this (its scan time is at most 5 minutes later).
 */
export const RETRY_WINDOW_MS = PAST_LIMIT_MS + 86_400_000;

/** The highest access-event id the cloud has acknowledged (the edge's upload cursor); 0 when none is. */
export function acknowledgedAccessEventId(db: Database): number {
  const id = statement(db, 'SELECT access_event_id FROM feed_cursors WHERE consumer = ?')
    .pluck()
    .get(SYNC_UPLOAD_CONSUMER) as number | undefined;
  return id ?? 0;
}

export type RetentionConfig = Pick<Config, 'role'> & {
  sync: Pick<Config['sync'], 'edgeRetentionDays' | 'retentionDays'>;
};

export interface RetentionOptions {
  /** The first round this long after start, then one every intervalMs. */
  firstDelayMs: number;
  intervalMs: number;
  /**
   * Index entries examined, and so rows deleted at most, per transaction: 250 took 3.5-5.6 ms of
   * the event loop on the build machine (bench:event-disk; 2,000 took 19 ms: a stall scans would feel).
   */
  chunkRows: number;
  /** How long a chunk waits for the write lock before the round gives up until the next one (instead of
   * store.busyTimeoutMs on the event loop). */
  lockWaitMs: number;
}

const DEFAULTS: RetentionOptions = { firstDelayMs: 60_000, intervalMs: 3_600_000, chunkRows: 250, lockWaitMs: 250 };

export interface RetentionStats {
  prunedRows: number;
  rounds: number;
  /** Unix ms when the last round ended (0: none yet), its rows and
   * duration; its write transactions: how many, their time, the longest. */
  lastRunAt: number;
  lastRows: number;
  lastMs: number;
  lastChunks: number;
  lastWriteMs: number;
  lastLongestChunkMs: number;
}

type Candidate = { id: number; scanned_at: string };

// The summary index (project_id, scanned_at, granted, reason, access_zone_id, access_point_id,
// attendee_id) in its own order, rowid last, so the walk is index-only and ties resume exactly.
const CANDIDATES_SQL = `SELECT id, scanned_at FROM access_events WHERE project_id = ? AND scanned_at >= ? AND scanned_at < ?
  ORDER BY project_id, scanned_at, granted, reason, access_zone_id, access_point_id, attendee_id, id LIMIT ? OFFSET ?`;

export class EventRetention {
  readonly name = 'access-event retention';
  readonly stats: RetentionStats = {
    prunedRows: 0,
    rounds: 0,
    lastRunAt: 0,
    lastRows: 0,
    lastMs: 0,
    lastChunks: 0,
    lastWriteMs: 0,
    lastLongestChunkMs: 0,
  };
  readonly #options: RetentionOptions;
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<number> | null = null;
  #stopped = false;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly config: RetentionConfig,
    private readonly log: Logger,
    registry: Registry | null,
    options: Partial<RetentionOptions> = {},
  ) {
    this.#options = { ...DEFAULTS, ...options };
    if (registry) {
      const gauge = gaugesIn(registry);
      gauge(
        'gatehouse_access_events_pruned_total',
        'Access events removed by retention (sync.retentionDays, sync.edgeRetentionDays) since start',
        () => this.stats.prunedRows,
      );
      gauge(
        'gatehouse_access_events_prune_last_run_timestamp_seconds',
        'When the last access-event retention round ended (0: none yet)',
        () => this.stats.lastRunAt / 1000,
      );
      gauge(
        'gatehouse_access_events_prune_last_run_duration_seconds',
        'How long the last access-event retention round took, yields included',
        () => this.stats.lastMs / 1000,
      );
    }
  }

  /** The days this box keeps access events by scan time (null:
   * for ever); RETRY_WINDOW_MS by decision time comes on top. */
  get days(): number | null {
    return this.config.role === 'edge' ? this.config.sync.edgeRetentionDays : this.config.sync.retentionDays;
  }

  start(): void {
    this.#stopped = false;
    if (this.days !== null) this.#schedule(this.#options.firstDelayMs);
  }

  /** No new round; a running one stops after its current chunk. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    await this.#running?.catch(() => {});
  }

  /** One round now (joined if one is running); answers the rows removed. */
  prune(): Promise<number> {
    this.#running ??= this.#round().finally(() => (this.#running = null));
    return this.#running;
  }

  /**
   * The highest id that may go now, whatever its age: covered by the presence snapshot, read by
   * every feed consumer, acknowledged by the cloud on an edge, and below the newest. 0: none.
   */
  highestPrunableId(): number {
    const { db } = this;
    const newest = statement(db, 'SELECT COALESCE(MAX(id), 0) FROM access_events').pluck().get() as number;
    const mark = statement(db, 'SELECT last_event_id FROM zone_presence_mark WHERE id = 1').pluck().get() as number;
    const slowest = statement(db, 'SELECT MIN(access_event_id) FROM feed_cursors').pluck().get() as number | null;
    let limit = Math.min(newest - 1, mark, slowest ?? Number.MAX_SAFE_INTEGER);
    if (this.config.role === 'edge') limit = Math.min(limit, acknowledgedAccessEventId(db));
    return Math.max(limit, 0);
  }

  #schedule(ms: number): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.prune()
        .catch((err) => this.log.warn({ err }, 'access-event retention round failed (the next one tries again)'))
        .finally(() => this.#schedule(this.#options.intervalMs));
    }, ms).unref();
  }

  async #round(): Promise<number> {
    const days = this.days;
    const writes = { chunks: 0, ms: 0, longest: 0 };
    if (days === null || this.highestPrunableId() === 0) return this.#ended(0, performance.now(), writes, false);
    const now = this.clock.now();
    // The window on the scan time too, so the walk skips what is decided too recently to go (a
    // scan time is at most 5 minutes past its decision's); decided_at is checked on delete (a
    // replayed backlog is decided days after its scan).
    const scannedBefore = iso(now - Math.max(days * 86_400_000, RETRY_WINDOW_MS));
    const decidedBefore = iso(now - RETRY_WINDOW_MS);
    const started = performance.now();
    let rows = 0;
    let busy = false;
    try {
      const projects = statement(this.db, 'SELECT id FROM projects ORDER BY id').pluck().all() as number[];
      for (const projectId of projects) {
        // Resume point: the scan time reached, and how many entries at it were examined and kept.
        let from = '';
        let offset = 0;
        while (!this.#stopped) {
          const candidates = statement(this.db, CANDIDATES_SQL).all(
            projectId,
            from,
            scannedBefore,
            this.#options.chunkRows,
            offset,
          ) as Candidate[];
          if (candidates.length === 0) break;
          // Only a chunk with something that may go takes the write lock (an edge offline for
          // weeks has many old events the cloud has not acknowledged: they are only read).
          const limit = this.highestPrunableId();
          let deleted = new Set<number>();
          if (candidates.some((c) => c.id <= limit)) {
            const t = performance.now();
            deleted = this.#delete(candidates, decidedBefore);
            const ms = performance.now() - t;
            writes.chunks++;
            writes.ms += ms;
            writes.longest = Math.max(writes.longest, ms);
          }
          rows += deleted.size;
          const last = candidates.at(-1)!.scanned_at;
          const keptAtLast = candidates.filter((c) => c.scanned_at === last && !deleted.has(c.id)).length;
          offset = last === from ? offset + keptAtLast : keptAtLast;
          from = last;
          if (candidates.length < this.#options.chunkRows) break;
          await new Promise<void>((resolve) => setImmediate(resolve)); // the scans' turn
        }
      }
    } catch (err) {
      if (!isStoreBusy(err)) throw err;
      busy = true;
    }
    return this.#ended(rows, started, writes, busy);
  }

  /** Deletes the candidates that may go, in one short transaction; answers their ids. */
  #delete(candidates: Candidate[], decidedBefore: string): Set<number> {
    const deleted = new Set<number>();
    const { db } = this;
    // A chunk that cannot get the lock soon gives up (the next round tries again) rather than
    // holding the event loop for store.busyTimeoutMs; the ingest's transactions are short.
    const wait = db.pragma('busy_timeout', { simple: true }) as number;
    db.pragma(`busy_timeout = ${this.#options.lockWaitMs}`);
    try {
      writeTransaction(db, () => {
        // Again under the write lock: nothing it reads can move until these deletes commit.
        const limit = this.highestPrunableId();
        for (const c of candidates) {
          if (c.id <= limit && deleteDecidedBefore(db, c.id, decidedBefore)) deleted.add(c.id);
        }
      });
    } finally {
      db.pragma(`busy_timeout = ${wait}`);
    }
    return deleted;
  }

  #ended(
    rows: number,
    started: number,
    writes: { chunks: number; ms: number; longest: number },
    busy: boolean,
  ): number {
    const ms = Math.round(performance.now() - started);
    const s = this.stats;
    Object.assign(s, {
      prunedRows: s.prunedRows + rows,
      rounds: s.rounds + 1,
      lastRunAt: this.clock.now(),
      lastRows: rows,
      lastMs: ms,
    });
    Object.assign(s, { lastChunks: writes.chunks, lastWriteMs: writes.ms, lastLongestChunkMs: writes.longest });
    const fields = {
      rows,
      ms,
      transactions: writes.chunks,
      longestTransactionMs: Math.round(writes.longest * 10) / 10,
      days: this.days,
    };
    if (busy) this.log.info(fields, 'access-event retention: store busy, the next round goes on');
    else if (rows > 0) this.log.info(fields, 'access events pruned');
    else this.log.debug(fields, 'access-event retention: nothing to prune');
    return rows;
  }
}
