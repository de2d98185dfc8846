// Who is in which zone (issue 5, item 3). An `in` grant counts the holder into the zone and
// out of any zone they were in before (entering another zone moves them); an `out` grant
// counts them out. A count never goes below zero: leaving a zone one was never counted into
// changes nothing. Single-threaded JS makes check-then-enter atomic, so concurrent scans at
// a full zone cannot overfill it. The picture survives restarts: access/presence.ts.

export class Occupancy {
  readonly #zoneOf = new Map<number, number>();
  readonly #counts = new Map<number, number>();

  /** Who is where: [attendeeId, zoneId] pairs. */
  entries(): [number, number][] {
    return [...this.#zoneOf];
  }

  zoneOf(attendeeId: number): number | undefined {
    return this.#zoneOf.get(attendeeId);
  }

  count(zoneId: number): number {
    return this.#counts.get(zoneId) ?? 0;
  }

  /** Counts the holder into the zone; answers the zone they were moved out of, if any. */
  enter(attendeeId: number, zoneId: number): number | null {
    const previous = this.#zoneOf.get(attendeeId);
    if (previous === zoneId) return null;
    if (previous !== undefined) this.#counts.set(previous, Math.max(0, this.count(previous) - 1));
    this.#zoneOf.set(attendeeId, zoneId);
    this.#counts.set(zoneId, this.count(zoneId) + 1);
    return previous ?? null;
  }

  /** Counts the holder out; false when they were not counted in (nothing changes). */
  leave(attendeeId: number, zoneId: number): boolean {
    if (this.#zoneOf.get(attendeeId) !== zoneId) return false;
    this.#zoneOf.delete(attendeeId);
    this.#counts.set(zoneId, Math.max(0, this.count(zoneId) - 1));
    return true;
  }

  /** Forgets a deleted attendee. */
  forget(attendeeId: number): void {
    const zone = this.#zoneOf.get(attendeeId);
    if (zone !== undefined) this.leave(attendeeId, zone);
  }
}
