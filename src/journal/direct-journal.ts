import type { Database } from '../store/database.js';
import { writeTransaction } from '../store/transactions.js';
import type { AccessEventRow } from './access-event-row.js';
import { insertDecided } from './access-event-rows.js';
import { type EventJournal, type Journal, journalStats, timedWrite } from './event-journal.js';
import { rowValues } from './journal-format.js';

// The access events' journal of a store on PostgreSQL (a cloud's; docs/decisions.md: the cloud on
// PostgreSQL): no file beside the store for a worker to ingest into, so each group commit inserts
// its rows into access_events at once, in one transaction. A decision is durable, and in the
// table, when write() returns; nothing lags, nothing is left to recover. A cloud decides few
// scans (its edges decide theirs): the journal's speed is the edge's concern, not this one's.

export class DirectJournal implements Journal {
  readonly stats: EventJournal['stats'] = journalStats();
  readonly lagging = false;
  readonly #listeners: (() => void)[] = [];

  constructor(private readonly db: Database) {}

  recover(): number {
    return 0;
  }

  start(): void {}

  write(rows: readonly AccessEventRow[]): void {
    const started = performance.now();
    writeTransaction(this.db, () => insertDecided(this.db, rows.map(rowValues)));
    timedWrite(this.stats, started);
    this.stats.transactions++;
    this.stats.ingested += rows.length;
    for (const listener of this.#listeners) listener();
  }

  onIngest(listener: () => void): void {
    this.#listeners.push(listener);
  }

  settled(): Promise<void> {
    return Promise.resolve();
  }

  async stop(): Promise<void> {}
}
