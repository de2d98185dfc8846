import type { Database } from '../store/database.js';
import type { DomainEvents, EventBus, EventName } from './bus.js';
import { writeTransaction } from '../store/transactions.js';

export interface Work {
  /** Queues an event; it is emitted only if the transaction commits. */
  emit<E extends EventName>(event: E, payload: DomainEvents[E]): void;
}

/** Runs `work` in one SQLite write transaction (BEGIN IMMEDIATE: store/transactions.ts), then
 * announces its events (DESIGN: an event is durable before anyone is told about it). A throw
 * rolls back and announces nothing. */
export function commit<T>(db: Database, bus: EventBus, work: (w: Work) => T): T {
  const pending: [EventName, unknown][] = [];
  const result = writeTransaction(db, () => work({ emit: (event, payload) => pending.push([event, payload]) }));
  for (const [event, payload] of pending) bus.emit(event, payload as never);
  return result;
}
