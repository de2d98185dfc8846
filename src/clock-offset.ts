// This box's wall clock against its cloud's (docs/sync.md: clocks). NTP may step the wall clock
// at any time (a box that booted with a fast clock, corrected once the uplink is back), so the
// offset is kept against the monotonic clock, which no step moves: each exchange with the cloud
// gives `reference = cloud time - monotonic time`, and the offset in force at any instant is
// `monotonic + reference - wall`. A scan decided after a step while offline is stamped with the
// offset that step made, not the one of the last contact; once the clock is corrected the
// offset falls back by itself. Standalone boxes and the cloud have no reference: no offset.

export interface OffsetStamp {
  /** Cloud time minus this box's wall time, in ms; null when never known. */
  offsetMs: number | null;
  /** Measured against the cloud in this run and within the tolerance. */
  synchronised: boolean;
}

export class ClockOffset {
  /** Cloud time minus monotonic time; null until known. */
  #reference: number | null = null;
  /** Whether the reference was measured in this run (not carried over from the last one). */
  #measured = false;

  constructor(
    private readonly toleranceMs: number,
    private readonly wall: () => number = Date.now,
    private readonly monotonic: () => number = () => performance.now(),
  ) {}

  /**
   * The cloud's clock read `cloudMs` at `monotonicAt` (this box's monotonic clock at the moment
   * the cloud wrote its answer's time: the middle of a round trip, or for a long poll, the answer's
   * arrival less half the round trip's usual latency).
   */
  measured(cloudMs: number, monotonicAt: number): void {
    this.#reference = cloudMs - monotonicAt;
    this.#measured = true;
  }

  /** At start: the offset last known (the box may have been stepped while down: not synchronised until measured). */
  carryOver(offsetMs: number): void {
    if (this.#measured) return;
    this.#reference = this.wall() + offsetMs - this.monotonic();
  }

  /** The offset in force now. */
  now(): OffsetStamp {
    if (this.#reference === null) return { offsetMs: null, synchronised: false };
    const offsetMs = Math.round(this.monotonic() + this.#reference - this.wall());
    return { offsetMs, synchronised: this.#measured && Math.abs(offsetMs) <= this.toleranceMs };
  }

  /** Whether anything is known (an edge that has met its cloud, now or in an earlier run). */
  get known(): boolean {
    return this.#reference !== null;
  }
}
