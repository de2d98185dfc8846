// ZoneOccupancyChanged at most once per interval per zone (docs/realtime.md). Every grant moves a
// count, so at a busy gate a dashboard got one event per person; what it shows is the count now.
// The first change after a quiet interval goes out at once (a lone scan is not delayed); changes
// within the interval that follows are folded into one, sent when it ends with the count then.
// The last event a dashboard receives always carries the final count.

export class KeyedThrottle<K> {
  /** When each key last went out (performance.now()). */
  readonly #sentAt = new Map<K, number>();
  /** Keys with a send due at the end of their interval. */
  readonly #due = new Map<K, NodeJS.Timeout>();

  constructor(
    private readonly intervalMs: number,
    private readonly send: (key: K) => void,
  ) {}

  /** Something about `key` changed: sends now, or once at the end of the current interval. */
  hit(key: K): void {
    if (this.#due.has(key)) return; // the send already due will carry this change too
    const wait = (this.#sentAt.get(key) ?? Number.NEGATIVE_INFINITY) + this.intervalMs - performance.now();
    if (wait <= 0) {
      this.#fire(key);
      return;
    }
    const timer = setTimeout(() => {
      this.#due.delete(key);
      this.#fire(key);
    }, wait);
    timer.unref();
    this.#due.set(key, timer);
  }

  /** Drops what is due (at stop: nobody is left to tell). */
  clear(): void {
    for (const timer of this.#due.values()) clearTimeout(timer);
    this.#due.clear();
    this.#sentAt.clear();
  }

  #fire(key: K): void {
    this.#sentAt.set(key, performance.now());
    this.send(key);
  }
}
