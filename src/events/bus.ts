import type { Logger } from '../logger.js';
import type { DomainEvents, EventName } from './types.js';

// The typed domain event bus (STYLE: Zigbee2MQTT's eventBus). Its events and their payloads are
// declared in types.ts. Events are emitted only after the transaction that made them has
// committed (see unit-of-work.ts). Each handler is wrapped so one failing listener cannot break
// the others; an owner's handlers go on its stop().

type Handler<E extends EventName> = (payload: DomainEvents[E]) => void;

export class EventBus {
  readonly #handlers = new Map<EventName, { owner: object; handler: Handler<EventName> }[]>();

  constructor(private readonly log: Logger) {}

  on<E extends EventName>(owner: object, event: E, handler: Handler<E>): void {
    const list = this.#handlers.get(event) ?? [];
    list.push({ owner, handler: handler as Handler<EventName> });
    this.#handlers.set(event, list);
  }

  /** How many handlers are registered (0 once every module stopped). */
  get listenerCount(): number {
    let n = 0;
    for (const list of this.#handlers.values()) n += list.length;
    return n;
  }

  removeListeners(owner: object): void {
    for (const [event, list] of this.#handlers)
      this.#handlers.set(
        event,
        list.filter((h) => h.owner !== owner),
      );
  }

  emit<E extends EventName>(event: E, payload: DomainEvents[E]): void {
    for (const { handler } of this.#handlers.get(event) ?? []) {
      try {
        handler(payload);
      } catch (err) {
        this.log.error({ err, event }, 'event handler failed');
      }
    }
  }
}
