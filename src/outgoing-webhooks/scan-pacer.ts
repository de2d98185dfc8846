// The scan path first (issue 25: MQTT throughput with 50 subscriptions within 15 % of none;
// docs/webhooks-outgoing.md). Every sample the scan rate is read from the event log's count;
// when scans came faster than busyScansPerSecond, deliveries get a budget of
// busyDeliveriesPerSecond for the next sample, and the dispatcher looks for work at most once
// a sample; otherwise there is no budget to keep.

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

  /** Waits while this sample's budget is spent, then takes one from it. */
  async take(): Promise<void> {
    while (this.#budget < 1 && !this.#stopped) await new Promise<void>((resolve) => this.#renewed.push(resolve));
    this.#budget--;
  }

  #sample(): void {
    const scans = this.scansSoFar();
    const rate = ((scans - this.#seen) * 1000) / this.sampleMs;
    this.#seen = scans;
    this.#budget = rate > this.options.busyScansPerSecond ? (this.options.busyDeliveriesPerSecond * this.sampleMs) / 1000 : Number.POSITIVE_INFINITY;
    for (const renewed of this.#renewed.splice(0)) renewed();
  }
}
