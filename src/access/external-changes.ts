import type { Registry } from 'prom-client';
import type { EventBus } from '../events/bus.js';
import type { Logger } from '../logger.js';
import { gaugesIn } from '../metrics.js';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import type { Venue } from '../venue/index.js';
import { ChangedRows, type WrittenChange } from './changed-rows.js';
import { LocalVersions, type VersionRange } from './local-versions.js';
import type { VenueIndex } from './venue-index.js';

// Venue changes made by another process on the same store reach the running appliance within
// about a second (docs/engine.md: changes by another process). The CLI
// (`attendees import`, `demo seed`) or any tool writing through the venue modules takes change
// versions from the store-wide sequence as the appliance does, and leaves tombstones for what it
// deletes; nothing tells the appliance. So once a second this reads the sequence (one row by its
// primary key: nothing on a busy box), and when it moved past what the appliance itself
// announced (local-versions.ts), reads the rows and tombstones with those versions
// (changed-rows.ts) and the projects' time zones. No tool has to remember to signal anything.
// The edge's replica (sync/replica.ts) writes without the bus too, but in this process and with
// the rows in hand: written() takes them into the index at once and records their versions as
// this process's, so the poll does not read them back.

export interface ExternalChangeStats {
  /** Polls that found versions written by another process. */
  reads: number;
  rows: number;
  deletions: number;
}

export class ExternalChanges {
  readonly #local = new LocalVersions();
  readonly #rows: ChangedRows;
  readonly stats: ExternalChangeStats = { reads: 0, rows: 0, deletions: 0 };
  #timer: NodeJS.Timeout | null = null;
  /** Every version up to this one is in the index (loaded, announced or read here). */
  #cursor = 0;
  #running: Promise<void> | null = null;
  #stopped = false;

  constructor(
    private readonly db: Database,
    private readonly index: VenueIndex,
    private readonly bus: EventBus,
    venue: Venue,
    private readonly log: Logger,
    private readonly intervalMs = 1000,
  ) {
    this.#rows = new ChangedRows(db, index, bus, venue);
  }

  /** Call just before the index loads: whatever is written from here on is read again by the poll, never missed. */
  begin(): void {
    this.#cursor = this.#sequence();
    this.#local.track(this.bus, this);
  }

  /** Call once the index is loaded. */
  start(): void {
    this.#timer = setInterval(() => void this.poll(), this.intervalMs);
    this.#timer.unref();
  }

  /** Stops polling; resolves once a read under way has stopped at its next chunk. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    this.bus.removeListeners(this);
    await this.#running;
  }

  /** Reads what another process changed since the last poll (one poll at a time). */
  poll(): Promise<void> {
    if (this.#running || this.#stopped) return this.#running ?? Promise.resolve();
    const upTo = this.#sequence();
    if (upTo === this.#cursor) return Promise.resolve();
    const ranges = this.#local.unannounced(this.#cursor, upTo);
    if (ranges.length === 0) {
      this.#advance(upTo);
      return Promise.resolve();
    }
    this.#running = this.#read(ranges, upTo).finally(() => (this.#running = null));
    return this.#running;
  }

  /** Resolves once everything written so far (by any process, this one's direct writes included) is in the index. */
  async catchUp(): Promise<void> {
    const target = this.#sequence();
    while (!this.#stopped && this.#cursor < target) {
      const running = this.#running;
      await this.poll();
      if (running) continue; // that read began before the target: poll again
      if (this.#cursor < target && !this.#running) return; // a failed read: the next poll retries
    }
  }

  /**
   * A write of this process that announced nothing (the edge's replica: one page, one
   * transaction, just committed) took the versions `from`..`to`: the index takes `changes` now,
   * from what was written, and the versions count as this process's, so no poll reads them back.
   * Should applying fail, they are left to the poll, which reads them back (reading twice changes nothing).
   */
  async written(projectId: number, from: number, to: number, changes: readonly WrittenChange[]): Promise<void> {
    try {
      await this.#rows.applyWritten(projectId, [from, to], changes, () => this.#stopped);
    } catch (err) {
      this.log.error(
        { err, from, to },
        'taking written venue changes into the decision index failed; read back at the next poll',
      );
      return;
    }
    this.#local.add(from, to);
  }

  async #read(ranges: readonly VersionRange[], upTo: number): Promise<void> {
    const started = Date.now();
    const total = { rows: 0, deletions: 0 };
    try {
      const projects = statement(this.db, 'SELECT id, timezone FROM projects ORDER BY id').all() as {
        id: number;
        timezone: string;
      }[];
      for (const { id, timezone } of projects) {
        if (this.index.timezones.get(id) !== timezone) this.bus.emit('project.saved', { projectId: id, timezone });
      }
      for (const { id } of projects) {
        const applied = await this.#rows.apply(id, ranges, () => this.#stopped);
        total.rows += applied.rows;
        total.deletions += applied.deletions;
      }
    } catch (err) {
      // The cursor stays: the next poll reads the same versions again (reading twice changes nothing).
      this.log.error({ err, ranges }, 'reading venue changes made by another process failed; retried at the next poll');
      return;
    }
    if (this.#stopped) return;
    this.#advance(upTo);
    this.stats.reads++;
    this.stats.rows += total.rows;
    this.stats.deletions += total.deletions;
    this.log.info(
      { ranges, ...total, ms: Date.now() - started },
      'venue changes made by another process read into the decision index',
    );
  }

  #advance(upTo: number): void {
    this.#cursor = upTo;
    this.#local.forget(upTo);
  }

  #sequence(): number {
    return (statement(this.db, 'SELECT value FROM change_sequence WHERE id = 1').get() as { value: number }).value;
  }
}

/** /metrics: venue changes made by another process (docs/engine.md). */
export function registerExternalChangeMetrics(registry: Registry, changes: ExternalChanges): void {
  const gauge = gaugesIn(registry);
  gauge(
    'gatehouse_venue_external_reads_total',
    'Polls that read venue changes made by another process',
    () => changes.stats.reads,
  );
  gauge(
    'gatehouse_venue_external_rows_total',
    'Venue rows written by another process read into the decision index',
    () => changes.stats.rows,
  );
  gauge(
    'gatehouse_venue_external_deletions_total',
    'Venue deletions by another process applied to the decision index',
    () => changes.stats.deletions,
  );
}
