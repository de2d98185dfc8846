import { performance } from 'node:perf_hooks';
import { readSignedValue, type SignedClaims, verifySignedValue } from '../credentials/signed-value.js';
import type { SigningKeys } from './signing-keys.js';

// A signed credential value an engine does not hold, checked (docs/credentials.md: deciding a
// signed value offline): read apart, its key looked up (the project's, not retired), its
// signature verified. Two bounds keep this off the doors' critical path:
// - a bounded LRU of values already verified, the failed ones too: the same forged QR flooded at
//   a door costs one verification, a ticket scanned again costs a map lookup;
// - a per-reader budget of signature checks per second (config `credentials.verificationsPerSecond`):
//   a stream of distinct forged values (an attacker with a QR printer) is refused past it with
//   `verification_busy`, never verified, so it cannot take the thread from known credentials.
// Values the engine holds never come here (engine.ts looks them up first).

export type SignedCheck =
  | { ok: true; claims: SignedClaims }
  | { ok: false; detail: 'signature_invalid' | 'unknown_key' | 'key_retired' | 'verification_busy' };

const UNKNOWN_KEY: SignedCheck = { ok: false, detail: 'unknown_key' };
const RETIRED: SignedCheck = { ok: false, detail: 'key_retired' };
const INVALID: SignedCheck = { ok: false, detail: 'signature_invalid' };
const BUSY: SignedCheck = { ok: false, detail: 'verification_busy' };

export interface SignedValueOptions {
  /** Signature checks per second per reader (a burst of one second's worth); 0: no limit. */
  verificationsPerSecond: number;
  /** Values remembered, verified or not. */
  cacheSize?: number;
  /** A monotonic clock in ms (the budget's; scan times may be an offline bridge's, hours old). */
  now?: () => number;
}

interface Bucket {
  tokens: number;
  at: number;
}

export class SignedValues {
  /** value → its claims when its signature verified, null when it did not (or it is malformed). */
  readonly #cache = new Map<string, SignedClaims | null>();
  readonly #buckets = new Map<number, Bucket>();
  readonly #rate: number;
  readonly #size: number;
  readonly #now: () => number;
  readonly stats = { verified: 0, refused: 0, busy: 0, cacheHits: 0 };

  constructor(
    private readonly keys: SigningKeys,
    options: SignedValueOptions,
  ) {
    this.#rate = options.verificationsPerSecond;
    this.#size = options.cacheSize ?? 100_000;
    this.#now = options.now ?? (() => performance.now());
  }

  /** Checks `value` for a scan in `projectId` at `source` (the reader, or minus the access point without one). */
  check(projectId: number, value: string, source: number): SignedCheck {
    let claims = this.#cache.get(value);
    if (claims !== undefined) {
      this.stats.cacheHits++;
      // Most recently used last: the oldest are evicted first.
      this.#cache.delete(value);
      this.#cache.set(value, claims);
      return claims === null ? INVALID : this.#keyed(projectId, claims);
    }
    // The budget first: past it a value costs a map lookup, not even its reading.
    if (!this.#spend(source)) {
      this.stats.busy++;
      return BUSY;
    }
    const read = readSignedValue(value);
    if (read === null) {
      this.#remember(value, null);
      return INVALID;
    }
    const keyed = this.#keyed(projectId, read.claims);
    // An unknown key may yet arrive (the replica): nothing is remembered for it.
    if (!keyed.ok && keyed.detail === 'unknown_key') return keyed;
    const key = this.keys.get(read.claims.keyId)!;
    claims = verifySignedValue(read, key.key) ? read.claims : null;
    if (claims === null) this.stats.refused++;
    else this.stats.verified++;
    this.#remember(value, claims);
    return claims === null ? INVALID : keyed;
  }

  /** The claims' key as this project's and in force; a key's retirement is read at each scan, never cached. */
  #keyed(projectId: number, claims: SignedClaims): SignedCheck {
    const key = this.keys.get(claims.keyId);
    if (!key || key.projectId !== projectId || claims.projectId !== projectId) return UNKNOWN_KEY;
    if (key.retired) return RETIRED;
    return { ok: true, claims };
  }

  #remember(value: string, claims: SignedClaims | null): void {
    this.#cache.set(value, claims);
    if (this.#cache.size > this.#size) this.#cache.delete(this.#cache.keys().next().value!);
  }

  /** A token bucket per source: `rate` a second, at most one second's worth saved. */
  #spend(source: number): boolean {
    if (this.#rate <= 0) return true;
    const now = this.#now();
    let bucket = this.#buckets.get(source);
    if (!bucket) this.#buckets.set(source, (bucket = { tokens: this.#rate, at: now }));
    bucket.tokens = Math.min(this.#rate, bucket.tokens + ((now - bucket.at) / 1000) * this.#rate);
    bucket.at = now;
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  }
}
