import type { Database } from '../store/database.js';
import type { EventBus } from './bus.js';
import type { DomainEvents, EventName } from './types.js';
import { writeTransaction, writeWhenFree } from '../store/transactions.js';
import { type OutboxEntry, outboxEntryOf } from '../feed/catalogue.js';
import { appendToOutbox } from '../feed/outbox.js';

export interface Work {
  /** Queues an event; it is emitted only if the transaction commits. */
  emit<E extends EventName>(event: E, payload: DomainEvents[E]): void;
  /** Writes an outbox entry in the transaction and announces nothing: for a change its caller
   * announces itself after the commit, in its own order (the cloud's apply of an upload, once
   * its index is refreshed), or an entry relayed as it came (an edge's reader status). */
  record(entry: OutboxEntry): void;
}

/** Runs `work` in one SQLite write transaction (BEGIN IMMEDIATE: store/transactions.ts), then
 * announces its events (docs/engine.md, "Durable, then announced, then answered"). Events of
 * the outgoing catalogue are also written to the outbox inside the transaction (feed/outbox.ts):
 * webhooks and sync get them even if the process dies before the announcement; once committed,
 * `feed.appended` tells them there is something to read. A throw rolls back and announces
 * nothing. The outbox is written only here (test/house/table-owners.test.ts). */
export function commit<T>(db: Database, bus: EventBus, work: (w: Work) => T): T {
  const unit = new Unit(db);
  const result = writeTransaction(db, () => work(unit.begin()));
  unit.announce(bus);
  return result;
}

/** commit() for background work that must not hold the event loop while another connection
 * writes (store/transactions.ts#writeWhenFree): `work` may run more than once, and only the
 * run that committed is announced. */
export async function commitWhenFree<T>(
  db: Database,
  bus: EventBus,
  work: (w: Work) => T,
  options: Parameters<typeof writeWhenFree>[2] = {},
): Promise<T> {
  const unit = new Unit(db);
  const result = await writeWhenFree(db, () => work(unit.begin()), options);
  unit.announce(bus);
  return result;
}

class Unit {
  #pending: [EventName, unknown][] = [];
  #appended = false;

  constructor(private readonly db: Database) {}

  /** The Work of one run of the transaction (a run that did not commit leaves nothing queued). */
  begin(): Work {
    this.#pending = [];
    this.#appended = false;
    const pending = this.#pending;
    const append = (entry: OutboxEntry) => {
      appendToOutbox(this.db, entry);
      this.#appended = true;
    };
    return {
      emit: (event, payload) => {
        pending.push([event, payload]);
        const entry = outboxEntryOf(event, payload);
        if (entry) append(entry);
      },
      record: append,
    };
  }

  announce(bus: EventBus): void {
    for (const [event, payload] of this.#pending) bus.emit(event, payload as never);
    if (this.#appended) bus.emit('feed.appended', { by: 'commit' });
  }
}
