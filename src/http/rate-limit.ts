import type { Redis } from 'ioredis';
import { type RateLimiterAbstract, RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { AppError } from '../errors.js';
import type { AnyRoute, RateClass } from './route.js';

// spec: Limits. 60/min standard, 10/min bulk, 20/min search and export, each a budget of its
// own, per token (or session) and per client address when unauthenticated. A fixed window
// that starts at the first request, so Retry-After is the honest time to its end. 0 = off.
// The sync protocol's routes have a budget per edge in a short window of their own
// (docs/sync.md: limits). rate-limiter-flexible keeps the counters (a well-kept library; it
// also expires them): in memory, or, for a cloud of several instances, in their shared Redis
// (docs/realtime.md, "Several instances"), so a budget spent on one instance counts on all.
// When Redis does not answer, each instance counts in memory meanwhile (the library's insurance
// limiter): a client may then get up to the limit from each instance, never an error.

export interface RateLimitSettings {
  standard: number;
  bulk: number;
  search: number;
  windowSeconds: number;
  sync: number;
  syncWindowSeconds: number;
}

/** The shared Redis of several instances. */
export interface RateLimitStore {
  client: Redis;
  keyPrefix: string;
}

export interface RateDecision {
  headers: Record<string, string>;
}

export class RateLimits {
  readonly #limiters = new Map<Exclude<RateClass, 'none'>, { limit: number; limiter: RateLimiterAbstract }>();

  constructor(settings: RateLimitSettings, store: RateLimitStore | null = null) {
    for (const cls of ['standard', 'bulk', 'search', 'sync'] as const) {
      const limit = settings[cls];
      const duration = cls === 'sync' ? settings.syncWindowSeconds : settings.windowSeconds;
      if (limit <= 0) continue;
      const memory = new RateLimiterMemory({ points: limit, duration, keyPrefix: cls });
      const limiter = store
        ? new RateLimiterRedis({
            storeClient: store.client,
            points: limit,
            duration,
            keyPrefix: `${store.keyPrefix}rate:${cls}`,
            // Redis down: the memory limiter at once, rather than a request waiting on a reconnect.
            rejectIfRedisNotReady: true,
            insuranceLimiter: memory,
          })
        : memory;
      this.#limiters.set(cls, { limit, limiter });
    }
  }

  limitOf(cls: RateClass): number {
    return cls === 'none' ? 0 : (this.#limiters.get(cls)?.limit ?? 0);
  }

  /** Counts one request; answers the headers to send, or throws 429 carrying them. */
  async consume(cls: RateClass, key: string): Promise<RateDecision> {
    const entry = cls === 'none' ? undefined : this.#limiters.get(cls);
    if (!entry) return { headers: {} };
    try {
      const res = await entry.limiter.consume(key);
      return {
        headers: { 'X-RateLimit-Limit': String(entry.limit), 'X-RateLimit-Remaining': String(res.remainingPoints) },
      };
    } catch (rejection) {
      throw tooManyRequests(rejection, entry.limit);
    }
  }
}

/** The budget a request counts against: search when it searches (a non-empty parameter of the route's
 * `searchQuery`), else the route's class. */
export function rateClassOf(
  route: Pick<AnyRoute, 'rateClass' | 'searchQuery'>,
  query: Record<string, unknown>,
): RateClass {
  const searching = route.searchQuery?.some((name) => {
    const value = query[name];
    return (Array.isArray(value) ? value : [value]).some((v) => typeof v === 'string' && v.trim() !== '');
  });
  return searching ? 'search' : route.rateClass;
}

/** Every budget a route's requests may count against (the 429 and X-RateLimit-* it can answer). */
export const rateClassesOf = (route: Pick<AnyRoute, 'rateClass' | 'searchQuery'>): RateClass[] =>
  route.searchQuery?.length ? [route.rateClass, 'search'] : [route.rateClass];

/** One attempt against a limiter of `limit` points; past it, the 429 below. */
export async function consumeOrThrow(limiter: RateLimiterAbstract, key: string, limit: number): Promise<void> {
  try {
    await limiter.consume(key);
  } catch (rejection) {
    throw tooManyRequests(rejection, limit);
  }
}

/** 429 with Retry-After and the rate-limit headers, for a
 * rejection of rate-limiter-flexible (anything else is rethrown). */
export function tooManyRequests(rejection: unknown, limit: number): AppError {
  if (!(rejection instanceof RateLimiterRes)) throw rejection;
  const retryAfter = Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
  // Koa drops headers set before a throw unless they travel with the error (the error's `headers`).
  return new AppError(
    'too_many_requests',
    {},
    {
      headers: {
        'Retry-After': String(retryAfter),
        'X-RateLimit-Limit': String(limit),
        'X-RateLimit-Remaining': '0',
        'X-RateLimit-Reset': String(Math.ceil((Date.now() + rejection.msBeforeNext) / 1000)),
      },
      body: { retry_after: retryAfter },
    },
  );
}
