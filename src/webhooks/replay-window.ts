import type { Registry } from 'prom-client';
import type { Clock } from '../clock.js';
import { gaugesIn } from '../metrics.js';

// The answers given to signed webhook bodies, kept for the senders' retries
// (docs/webhooks-incoming.md: Retries). Svix, GitHub, Stripe and gateways resend the identical
// signed body when they got no answer in time or a 5xx, and count anything but a 2xx as a failed
// delivery (retried again, alerted on, the endpoint disabled in the end). So a body from the same
// source that was already accepted (2xx) within the window gets its first answer again, and is
// not applied again; a body answered with an error was not applied and may be applied when it
// comes again.
//
// A body whose first request is still being handled is not applied a second time either: its
// retry waits for the first's answer (at most `waitMs`, then it is told to send it again: 409
// request_in_progress, as the IETF Idempotency-Key draft answers a key still being processed).
//
// Bounded in memory: at most `maxEntries` answers and `maxBytes` of answer bodies are kept, the
// oldest given up first; an answer over `maxAnswerBytes` is not kept. What is given up, and
// everything after a restart, is found in the durable receipts for the endpoint's window
// (receipts.ts), and past that falls to the endpoints' own idempotency
// (request_id, event_id, upserts by external_id).

/** An answer as it went out: given again, byte for byte, to a retry of the same body. */
export interface KeptResponse {
  status: number;
  body: string;
  contentType: string | null;
}

export type Claim =
  /** The body was accepted before: this is its answer; apply nothing. */
  | { kind: 'answered'; answer: KeptResponse }
  /** The body is new (or its earlier tries were refused): handle it, then settle(key, ...). */
  | { kind: 'claimed' }
  /** Its first request is still being handled after waitMs. */
  | { kind: 'busy' };

export interface ReplayLimits {
  windowMs: number;
  maxEntries: number;
  maxBytes: number;
  maxAnswerBytes: number;
  waitMs: number;
}

interface Kept {
  until: number;
  answer: KeptResponse;
  bytes: number;
}

interface InFlight {
  settled: Promise<KeptResponse | null>;
  resolve(answer: KeptResponse | null): void;
}

const TIMED_OUT = Symbol('timed out');

export class ReplayWindow {
  /** Insertion order is expiry order (every entry lives windowMs): the oldest are first. */
  readonly #kept = new Map<string, Kept>();
  readonly #inFlight = new Map<string, InFlight>();
  #bytes = 0;
  readonly stats = { replays: 0, busy: 0, evicted: 0, notKept: 0 };

  constructor(
    private readonly clock: Clock,
    private readonly limits: ReplayLimits,
  ) {}

  get size(): number {
    return this.#kept.size;
  }

  get bytes(): number {
    return this.#bytes;
  }

  async claim(key: string): Promise<Claim> {
    const deadline = performance.now() + this.limits.waitMs;
    for (;;) {
      this.#expire();
      const kept = this.#kept.get(key);
      if (kept) return this.#replayed(kept.answer);
      const pending = this.#inFlight.get(key);
      if (!pending) {
        let resolve!: (answer: KeptResponse | null) => void;
        const settled = new Promise<KeptResponse | null>((r) => (resolve = r));
        this.#inFlight.set(key, { settled, resolve });
        return { kind: 'claimed' };
      }
      const answer = await within(pending.settled, deadline - performance.now());
      if (answer === TIMED_OUT) {
        this.stats.busy++;
        return { kind: 'busy' };
      }
      if (answer) return this.#replayed(answer);
      // The first was refused, so nothing was applied: this one may be (the loop claims it).
    }
  }

  /** The claimed body was answered: a 2xx `answer` is kept for retries; null forgets the body. */
  settle(key: string, answer: KeptResponse | null): void {
    const pending = this.#inFlight.get(key);
    this.#inFlight.delete(key);
    if (answer) this.#keep(key, answer);
    // Waiting retries get the answer even when it is too large to keep.
    pending?.resolve(answer);
  }

  #replayed(answer: KeptResponse): Claim {
    this.stats.replays++;
    return { kind: 'answered', answer };
  }

  #keep(key: string, answer: KeptResponse): void {
    const bytes = Buffer.byteLength(answer.body);
    if (bytes > Math.min(this.limits.maxAnswerBytes, this.limits.maxBytes)) {
      this.stats.notKept++;
      return;
    }
    this.#drop(key);
    this.#kept.set(key, { until: this.clock.now() + this.limits.windowMs, answer, bytes });
    this.#bytes += bytes;
    while (this.#kept.size > this.limits.maxEntries || this.#bytes > this.limits.maxBytes) {
      this.#drop(this.#kept.keys().next().value!);
      this.stats.evicted++;
    }
  }

  #expire(): void {
    const now = this.clock.now();
    for (const [key, kept] of this.#kept) {
      if (kept.until > now) break;
      this.#drop(key);
    }
  }

  #drop(key: string): void {
    const kept = this.#kept.get(key);
    if (!kept) return;
    this.#kept.delete(key);
    this.#bytes -= kept.bytes;
  }
}

async function within<T>(promise: Promise<T>, ms: number): Promise<T | typeof TIMED_OUT> {
  if (ms <= 0) return TIMED_OUT;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<typeof TIMED_OUT>((resolve) => (timer = setTimeout(resolve, ms, TIMED_OUT)));
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** /metrics: how often retries are answered from the window, and how full it is. */
export function registerReplayMetrics(registry: Registry, window: ReplayWindow): void {
  const gauge = gaugesIn(registry);
  gauge(
    'gatehouse_webhook_replays_total',
    'Retried signed webhook bodies answered with their first answer',
    () => window.stats.replays,
  );
  gauge(
    'gatehouse_webhook_replays_in_progress_total',
    'Retries answered 409 request_in_progress: their first request was still being handled',
    () => window.stats.busy,
  );
  gauge(
    'gatehouse_webhook_replay_evictions_total',
    'Kept answers given up before their window ended (entry or byte cap)',
    () => window.stats.evicted,
  );
  gauge(
    'gatehouse_webhook_replay_not_kept_total',
    'Accepted answers over the per-answer cap, not kept for retries',
    () => window.stats.notKept,
  );
  gauge('gatehouse_webhook_replay_entries', 'Answers kept for retries', () => window.size);
  gauge('gatehouse_webhook_replay_bytes', 'Bytes of answer bodies kept for retries', () => window.bytes);
}
