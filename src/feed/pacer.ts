// The scan path first (docs/decisions.md, "The scan path first": MQTT throughput with 50 webhook
// subscriptions within 15 % of none; decisions during sync at least 80 % of idle). Every sample the scan rate is read
// from the event log's count; when scans came faster than busyScansPerSecond, the work paced
// here (outgoing deliveries, sync's items and rows) gets a budget of busyDeliveriesPerSecond
// for the next sample; otherwise there is no budget to keep. A take larger than what is left
// (a batch) is allowed and paid back from the next samples.

export interface PacerOptions {
  busyScansPerSecond: number;
  busyDeliveriesPerSecond: number;
}

export class ScanPacer {
  /** How often the scan rate is sampled and the budget renewed. */
  readonly sampleMs = 250;
  #seen = 0;
  /** Attempts left in this sample while busy; Infinity: not busy. */
  #budget = Number.POSITIVE_INFINITY;
  #timer: NodeJS.Timeout | null = null;
  #renewed: (() => void)[] = [];
  #stopped = false;

  constructor(
    private readonly options: PacerOptions,
    /** Scans decided so far (the event log's count). */
    private readonly scansSoFar: () => number,
  ) {}

  /** Whether deliveries are paced because the box is busy deciding scans. */
  get busy(): boolean {
    return this.#budget !== Number.POSITIVE_INFINITY;
  }

  start(): void {
    this.#stopped = false;
    this.#seen = this.scansSoFar();
    this.#timer = setInterval(() => this.#sample(), this.sampleMs).unref();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    for (const renewed of this.#renewed.splice(0)) renewed();
  }

  /** What one sample allows while busy (a batch should not be larger). */
  get perSample(): number {
    return (this.options.busyDeliveriesPerSecond * this.sampleMs) / 1000;
  }

  /** Waits while this sample's budget is spent, then takes `n` from it (going into debt for a batch). */
  async take(n = 1): Promise<void> {
    while (this.#budget < 1 && !this.#stopped) await new Promise<void>((resolve) => this.#renewed.push(resolve));
    this.#budget -= n;
  }

  #sample(): void {
    const scans = this.scansSoFar();
    const rate = ((scans - this.#seen) * 1000) / this.sampleMs;
    this.#seen = scans;
    const debt = Number.isFinite(this.#budget) ? Math.min(0, this.#budget) : 0;
    this.#budget = rate > this.options.busyScansPerSecond ? this.perSample + debt : Number.POSITIVE_INFINITY;
    for (const renewed of this.#renewed.splice(0)) renewed();
  }
}
