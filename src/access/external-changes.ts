import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import type { Logger } from '../logger.js';
import type { VenueIndex } from './venue-index.js';

// Venue changes made by another process on the same store (docs/engine.md: the venue index).
// The appliance's own writes reach its decision index through the bus as they commit; a CLI
// command (`gatehouse attendees import` while the appliance runs) writes from another process,
// which the bus never hears. Such a command counts up `external_changes` when it took change
// versions; this polls that counter (one indexed read a second) and, when it moved, reads the
// attendees and credentials written since the last change version it knew into the index, the
// way a REST bulk import's are read (VenueIndex.loadImported), and the projects' time zones.
// Its own writes in that range are read again too, which changes nothing. The CLI only adds and
// updates venue data (imports, projects); deletions by another process would need tombstones
// read here as well.

export class ExternalChanges {
  #timer: NodeJS.Timeout | null = null;
  #seen = 0;
  #applied = 0;

  constructor(
    private readonly db: Database,
    private readonly index: VenueIndex,
    private readonly log: Logger,
    private readonly intervalMs = 1000,
  ) {}

  /** Call once the index is loaded: what is in the store now is in the index. */
  start(): void {
    this.#seen = this.#counter();
    this.#applied = this.#sequence();
    this.#timer = setInterval(() => this.poll(), this.intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }

  /** Reads what another process changed since the last poll; answers how many attendees and credentials were read. */
  poll(): number {
    const seen = this.#counter();
    if (seen === this.#seen) return 0;
    const started = Date.now();
    const to = this.#sequence();
    const from = this.#applied + 1;
    let rows = 0;
    for (const project of statement(this.db, 'SELECT id, timezone FROM projects').all() as { id: number; timezone: string }[]) {
      this.index.timezones.set(project.id, project.timezone);
      rows += this.index.loadImported(project.id, from, to);
    }
    this.#seen = seen;
    this.#applied = to;
    this.log.info({ fromVersion: from, toVersion: to, rows, ms: Date.now() - started }, 'venue changes made by another process read into the decision index');
    return rows;
  }

  #counter(): number {
    return (statement(this.db, 'SELECT value FROM external_changes WHERE id = 1').get() as { value: number }).value;
  }

  #sequence(): number {
    return (statement(this.db, 'SELECT value FROM change_sequence WHERE id = 1').get() as { value: number }).value;
  }
}
