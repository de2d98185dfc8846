import type { Database } from '../store/database.js';
import type { Logger } from '../logger.js';
import type { Occupancy } from './occupancy.js';
import { writeTransaction } from '../store/transactions.js';

// Occupancy across restarts without a second write per scan. The access-event log is the
// truth: every event that changed a count says so (`counted`, `movement`, `from_zone_id`).
// zone_presence holds a snapshot of who was where as of one event id; at start the snapshot is
// loaded and the events after it are replayed in decision order. A snapshot is saved on a clean
// stop and, while scanning is quiet, every interval, so a crash replays only the events since.

export class PresenceSnapshots {
  #timer: NodeJS.Timeout | null = null;
  #savedUpTo = 0;

  constructor(
    private readonly db: Database,
    private readonly occupancy: Occupancy,
    private readonly attendeeExists: (id: number) => boolean,
    private readonly log: Logger,
  ) {}

  /** Loads the snapshot and replays the log after it; answers how many events were replayed. */
  restore(): number {
    const { last_event_id: mark } = this.db
      .prepare('SELECT last_event_id FROM zone_presence_mark WHERE id = 1')
      .get() as { last_event_id: number };
    for (const row of this.db.prepare('SELECT attendee_id, access_zone_id FROM zone_presence').iterate() as Iterable<{
      attendee_id: number;
      access_zone_id: number;
    }>) {
      if (this.attendeeExists(row.attendee_id)) this.occupancy.enter(row.attendee_id, row.access_zone_id);
    }
    let replayed = 0;
    const events = this.db
      .prepare(
        'SELECT attendee_id, access_zone_id, movement FROM access_events WHERE id > ? AND counted = 1 ORDER BY id',
      )
      .iterate(mark) as Iterable<{
      attendee_id: number;
      access_zone_id: number;
      movement: 'in' | 'out';
    }>;
    for (const e of events) {
      replayed++;
      if (!this.attendeeExists(e.attendee_id)) continue;
      if (e.movement === 'in') this.occupancy.enter(e.attendee_id, e.access_zone_id);
      else this.occupancy.leave(e.attendee_id, e.access_zone_id);
    }
    this.#savedUpTo = replayed > 0 ? -1 : mark;
    return replayed;
  }

  /** Writes the whole picture as of the last committed event. */
  save(): void {
    const { id } = this.db.prepare('SELECT COALESCE(MAX(id), 0) AS id FROM access_events').get() as { id: number };
    if (id === this.#savedUpTo) return;
    const started = Date.now();
    const rows = this.occupancy.entries();
    writeTransaction(this.db, () => {
      this.db.prepare('DELETE FROM zone_presence').run();
      const insert = this.db.prepare('INSERT INTO zone_presence (attendee_id, access_zone_id) VALUES (?, ?)');
      for (const [attendeeId, zoneId] of rows) insert.run(attendeeId, zoneId);
      this.db.prepare('UPDATE zone_presence_mark SET last_event_id = ? WHERE id = 1').run(id);
    });
    this.#savedUpTo = id;
    this.log.debug({ inside: rows.length, upTo: id, ms: Date.now() - started }, 'presence snapshot saved');
  }

  /**
   * Saves every intervalMs when no scan has committed for quietMs and every committed event is
   * in access_events (`ingested`): the snapshot's mark must cover exactly what it pictures, or
   * the next start would replay an event the snapshot already counts.
   */
  start(intervalMs: number, quietMs: number, lastCommitAt: () => number, ingested: () => boolean): void {
    this.#timer = setInterval(() => {
      if (performance.now() - lastCommitAt() < quietMs || !ingested()) return;
      try {
        this.save();
      } catch (err) {
        this.log.warn({ err }, 'presence snapshot failed');
      }
    }, intervalMs).unref();
  }

  /** Stops the timer and saves a last snapshot, unless some events are still
   * only in the journal (the next start replays them onto the last snapshot). */
  stop(ingested = true): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    if (ingested) this.save();
    else this.log.warn('presence snapshot skipped: access events still in the journal');
  }
}
