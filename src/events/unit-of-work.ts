import type { Database } from '../store/database.js';
import type { EventBus } from './bus.js';
import type { DomainEvents, EventName } from './types.js';
import { writeTransaction } from '../store/transactions.js';
import { outboxEntryOf } from '../feed/catalogue.js';
import { appendToOutbox } from '../feed/outbox.js';

export interface Work {
  /** Queues an event; it is emitted only if the transaction commits. */
  emit<E extends EventName>(event: E, payload: DomainEvents[E]): void;
}

/** Runs `work` in one SQLite write transaction (BEGIN IMMEDIATE: store/transactions.ts), then
 * announces its events (docs/engine.md, "Durable, then announced, then answered"). Events of
 * the outgoing catalogue are also written to the outbox inside the transaction (feed/outbox.ts):
 * webhooks and sync get them even if the process dies before the announcement; once committed,
 * `feed.appended` tells them there is something to read. A throw rolls back and announces nothing. */
export function commit<T>(db: Database, bus: EventBus, work: (w: Work) => T): T {
  const pending: [EventName, unknown][] = [];
  let appended = false;
  const result = writeTransaction(db, () =>
    work({
      emit: (event, payload) => {
        pending.push([event, payload]);
        const entry = outboxEntryOf(event, payload);
        if (entry) {
          appendToOutbox(db, entry);
          appended = true;
        }
      },
    }),
  );
  for (const [event, payload] of pending) bus.emit(event, payload as never);
  if (appended) bus.emit('feed.appended', { by: 'commit' });
  return result;
}
