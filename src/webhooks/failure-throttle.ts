import { isIP } from 'node:net';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { gaugesIn } from '../metrics.js';

// Failed webhook requests per client address (docs/security.md).
// Unsigned and forged requests used to be answered and logged without limit (196 a second from
// one client, each a log row): a source's own rate limit only applies once its signature has
// verified. So the requests no source vouched for — no or a wrong signature, a stale timestamp,
// an address outside the source's allowlist, refused before the signature was checked — are
// counted per address; past `perMinute` in a fixed minute from its first failure, the address
// is answered 429 with Retry-After before anything else is done for it, and nothing is logged.
// A verified source's refusals (an unknown reader, a bad payload) are not counted: they are the
// project's to see in its log, and must not lock a gateway's other doors out.
//
// IPv6 addresses are counted by their /64, the block one host is usually given (as rate
// limiters do), so one host cannot walk through its addresses. The table is bounded: past
// MAX_ADDRESSES the oldest window is given up.

const WINDOW_MS = 60_000;
const MAX_ADDRESSES = 100_000;

interface Window {
  failures: number;
  endsAt: number;
}

export class FailureThrottle {
  /** Insertion order is window order: the oldest first. */
  readonly #windows = new Map<string, Window>();
  readonly stats = { throttled: 0, addresses: 0 };

  constructor(
    private readonly perMinute: number,
    private readonly log: Logger,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Seconds until the address may be heard again; 0 when it may now. Counts a 429. */
  retryAfter(address: string): number {
    if (this.perMinute === 0) return 0;
    const window = this.#windows.get(addressKey(address));
    if (!window || window.failures < this.perMinute) return 0;
    const left = window.endsAt - this.now();
    if (left <= 0) return 0;
    this.stats.throttled++;
    return Math.max(1, Math.ceil(left / 1000));
  }

  /** A request from this address was refused and no source vouched for it. */
  failed(address: string): void {
    if (this.perMinute === 0) return;
    const key = addressKey(address);
    const now = this.now();
    let window = this.#windows.get(key);
    if (!window || window.endsAt <= now) {
      this.#windows.delete(key);
      this.#expire(now);
      window = { failures: 0, endsAt: now + WINDOW_MS };
      this.#windows.set(key, window);
    }
    window.failures++;
    if (window.failures === this.perMinute) {
      this.stats.addresses++;
      this.log.warn(
        { address: key, perMinute: this.perMinute },
        'webhook client over its failure budget: answered 429 until its minute ends',
      );
    }
  }

  #expire(now: number): void {
    for (const [key, window] of this.#windows) {
      if (window.endsAt > now && this.#windows.size < MAX_ADDRESSES) break;
      this.#windows.delete(key);
    }
  }
}

/** The address as counted: IPv4-mapped IPv6 as IPv4, other IPv6 by its /64. */
export function addressKey(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (isIP(address) !== 6) return address;
  const [head = '', tail] = address.toLowerCase().split('%')[0]!.split('::');
  const left = head ? head.split(':') : [];
  const right = tail === undefined ? [] : tail ? tail.split(':') : [];
  const groups =
    tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

/** /metrics: requests answered 429 for their address's failures. */
export function registerThrottleMetrics(registry: Registry, throttle: FailureThrottle): void {
  const gauge = gaugesIn(registry);
  gauge(
    'gatehouse_webhook_throttled_total',
    'Webhook requests answered 429 too_many_failures (not logged): their address was past incomingWebhooks.failuresPerMinute',
    () => throttle.stats.throttled,
  );
  gauge(
    'gatehouse_webhook_throttled_addresses_total',
    'Times an address (IPv6: its /64) went past its failure budget',
    () => throttle.stats.addresses,
  );
}
