// Who is in which zone (issue 5, item 3). An `in` grant counts the holder into the zone and
// out of any zone they were in before (entering another zone moves them); an `out` grant
// counts them out. A count never goes below zero: leaving a zone one was never counted into
// changes nothing. Single-threaded JS makes check-then-enter atomic, so concurrent scans at
// a full zone cannot overfill it.

export class Occupancy {
  readonly #zoneOf = new Map<number, number>();
  readonly #counts = new Map<number, number>();

  zoneOf(attendeeId: number): number | undefined {
    return this.#zoneOf.get(attendeeId);
  }

  count(zoneId: number): number {
    return this.#counts.get(zoneId) ?? 0;
  }

  enter(attendeeId: number, zoneId: number): void {
    const previous = this.#zoneOf.get(attendeeId);
    if (previous === zoneId) return;
    if (previous !== undefined) this.#counts.set(previous, Math.max(0, this.count(previous) - 1));
    this.#zoneOf.set(attendeeId, zoneId);
    this.#counts.set(zoneId, this.count(zoneId) + 1);
  }

  leave(attendeeId: number, zoneId: number): void {
    if (this.#zoneOf.get(attendeeId) !== zoneId) return;
    this.#zoneOf.delete(attendeeId);
    this.#counts.set(zoneId, Math.max(0, this.count(zoneId) - 1));
  }
}
