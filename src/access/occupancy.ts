// Who is in which zone (docs/engine.md). An `in` grant counts the holder into the zone and out of
// any zone they were in before (entering another zone moves them); an `out` grant counts them out:
// move(), the one movement rule, which the engine's grants (engine.ts) and the cloud's replay of an
// edge's grants (sync/upload-apply.ts) both go through. A count never goes below zero: leaving a
// zone one was never counted into changes nothing. Single-threaded JS makes check-then-enter
// atomic, so concurrent scans at a full zone cannot overfill it. The picture survives restarts:
// access/presence.ts.
//
// Who is where lives in a typed array indexed by attendee id (ids are SQLite row ids, dense),
// not a Map: a Map that is entered and left all day keeps rehashing its table, which cost
// ~700 bytes of garbage per decision and, with it, the scavenges that made the durable p99
// (docs/performance.md). Ids past DENSE_LIMIT (never seen in practice) fall back to a Map.

const DENSE_LIMIT = 1 << 26;

/** What a movement did: whether it changed the counts, and the zone an entry moved its holder out of. */
export interface Move {
  counted: boolean;
  fromZoneId: number | null;
}

export class Occupancy {
  /** zone id + 1 per attendee id; 0: not inside anywhere. */
  #zoneOf = new Int32Array(1024);
  readonly #sparse = new Map<number, number>();
  readonly #counts = new Map<number, number>();
  #inside = 0;

  /** Who is where: [attendeeId, zoneId] pairs. */
  entries(): [number, number][] {
    const pairs: [number, number][] = [];
    const table = this.#zoneOf;
    for (let id = 0; id < table.length; id++) if (table[id] !== 0) pairs.push([id, table[id]! - 1]);
    for (const pair of this.#sparse) pairs.push(pair);
    return pairs;
  }

  /** How many people are inside some zone. */
  get inside(): number {
    return this.#inside;
  }

  zoneOf(attendeeId: number): number | undefined {
    if (attendeeId < DENSE_LIMIT) {
      const slot = attendeeId < this.#zoneOf.length ? this.#zoneOf[attendeeId]! : 0;
      return slot === 0 ? undefined : slot - 1;
    }
    return this.#sparse.get(attendeeId);
  }

  count(zoneId: number): number {
    return this.#counts.get(zoneId) ?? 0;
  }

  /** Counts the holder into the zone; answers the zone they were moved out of, if any. */
  enter(attendeeId: number, zoneId: number): number | null {
    const previous = this.zoneOf(attendeeId);
    if (previous === zoneId) return null;
    if (previous !== undefined) this.#counts.set(previous, Math.max(0, this.count(previous) - 1));
    else this.#inside++;
    this.#place(attendeeId, zoneId);
    this.#counts.set(zoneId, this.count(zoneId) + 1);
    return previous ?? null;
  }

  /** Counts the holder out; false when they were not counted in (nothing changes). */
  leave(attendeeId: number, zoneId: number): boolean {
    if (this.zoneOf(attendeeId) !== zoneId) return false;
    this.#place(attendeeId, null);
    this.#inside--;
    this.#counts.set(zoneId, Math.max(0, this.count(zoneId) - 1));
    return true;
  }

  /**
   * The movement rule: `in` counts the holder into the zone (and out of the one they were in);
   * already in it, nothing changes (not counted). `out` counts them out; not in it, nothing changes.
   */
  move(attendeeId: number, zoneId: number, movement: 'in' | 'out'): Move {
    if (movement === 'out') return { counted: this.leave(attendeeId, zoneId), fromZoneId: null };
    if (this.zoneOf(attendeeId) === zoneId) return { counted: false, fromZoneId: null };
    return { counted: true, fromZoneId: this.enter(attendeeId, zoneId) };
  }

  /** Takes back a move() (its access event could not be stored, or its transaction rolled back). */
  unmove(attendeeId: number, zoneId: number, movement: 'in' | 'out', move: Move): void {
    if (!move.counted) return;
    if (movement === 'out') {
      this.enter(attendeeId, zoneId);
      return;
    }
    this.leave(attendeeId, zoneId);
    if (move.fromZoneId !== null) this.enter(attendeeId, move.fromZoneId);
  }

  /** Forgets a deleted attendee. */
  forget(attendeeId: number): void {
    const zone = this.zoneOf(attendeeId);
    if (zone !== undefined) this.leave(attendeeId, zone);
  }

  #place(attendeeId: number, zoneId: number | null): void {
    if (attendeeId >= DENSE_LIMIT) {
      if (zoneId === null) this.#sparse.delete(attendeeId);
      else this.#sparse.set(attendeeId, zoneId);
      return;
    }
    if (attendeeId >= this.#zoneOf.length) {
      if (zoneId === null) return;
      let size = this.#zoneOf.length;
      while (size <= attendeeId) size *= 2;
      const grown = new Int32Array(size);
      grown.set(this.#zoneOf);
      this.#zoneOf = grown;
    }
    this.#zoneOf[attendeeId] = zoneId === null ? 0 : zoneId + 1;
  }
}
