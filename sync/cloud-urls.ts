// Which of the cloud's URLs the edge's link uses (docs/sync.md: several cloud URLs). The URLs are instances of one
// cloud on one database: any of them holds the same cursors, the same acknowledged feed positions and stores an
// upload's items once by uuid, so nothing the edge keeps is tied to one URL. The link stays on the URL that answers;
// when it does not answer (link.ts#unanswered), the next one is tried at once, round robin, each once per request;
// a request that found none answering fails as with one URL, and the loops back off as usual.

/** The link now reaches the cloud at `to`, no longer at `from`, which did not answer (`reason`). */
export interface UrlSwitch {
  from: string;
  to: string;
  reason: string | null;
}

export class CloudUrls {
  /** The URLs as configured (status, logs), and without a trailing slash (requests). */
  readonly #given: readonly string[];
  readonly #bases: readonly string[];
  /** Where the next request goes. */
  #current = 0;
  /** The URL that last answered; the first before any did. */
  #answering = 0;
  /** Per URL, why it last did not answer. */
  readonly #failures = new Map<number, string>();

  constructor(
    urls: readonly string[],
    private readonly switched: (s: UrlSwitch) => void,
  ) {
    if (urls.length === 0) throw new Error('a cloud link needs at least one URL');
    this.#given = [...urls];
    this.#bases = urls.map((u) => u.replace(/\/+$/, ''));
  }

  get size(): number {
    return this.#given.length;
  }

  /** Which URL the next request goes to. */
  get index(): number {
    return this.#current;
  }

  base(i: number): string {
    return this.#bases[i]!;
  }

  /** The URL in use: where requests go now (the one that last answered; while none does, the one tried first). */
  get inUse(): string {
    return this.#given[this.#current]!;
  }

  /** The URL at `i` did not answer: if requests still go there, they go to the next one from now on. A request of
   * another loop that failed there after the move (a long poll cut with it) moves nothing. */
  unanswered(i: number, reason: string): void {
    this.#failures.set(i, reason);
    if (i === this.#current) this.#current = (i + 1) % this.#given.length;
  }

  /** The URL at `i` answered (whatever it said): a switch, told once, when requests go there and the last answer came
   * from another. A late answer from a URL the link moved away from (a long poll begun before) moves nothing. */
  answered(i: number): void {
    this.#failures.delete(i);
    if (i !== this.#current || i === this.#answering) return;
    const from = this.#answering;
    this.#answering = i;
    this.switched({ from: this.#given[from]!, to: this.#given[i]!, reason: this.#failures.get(from) ?? null });
  }
}
