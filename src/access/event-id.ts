import { randomFillSync } from 'node:crypto';

// UUIDv7 ids for access events (RFC 9562 section 5.7): 48 bits of Unix milliseconds, the
// version, 12 random bits, the variant, 62 random bits. Time-ordered, so the event table's
// uuid index grows at its end like the log itself (docs/performance.md: 15k -> 24k durable
// scans/s against random v4 ids). Written here rather than taken from the `uuid` package,
// which we used before: its v7 allocates ~1.2 KB of garbage per id (a fresh byte array and a
// string concatenated from 36 pieces), a third of all garbage per scan, and garbage is what
// sets the durable p99 (scavenge pauses). This one fills a preallocated ASCII buffer and
// makes one string. Randomness comes from crypto.randomFillSync in pools of 4 KiB.

const HEX = Buffer.from('0123456789abcdef', 'latin1');
const POOL_BYTES = 4096;
const pool = Buffer.alloc(POOL_BYTES);
let poolOffset = POOL_BYTES;
const text = Buffer.alloc(36);
/** Where each of the 32 hex digits goes in the 36-character form. */
const DIGIT_AT = Uint8Array.from(
  { length: 32 },
  (_, i) => i + (i >= 8 ? 1 : 0) + (i >= 12 ? 1 : 0) + (i >= 16 ? 1 : 0) + (i >= 20 ? 1 : 0),
);
for (const dash of [8, 13, 18, 23]) text[dash] = 0x2d;

/** A new UUIDv7 for an event at `ms` (ms since the epoch; defaults to now). */
export function eventId(ms: number = Date.now()): string {
  if (poolOffset + 10 > POOL_BYTES) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const r = poolOffset;
  poolOffset += 10;
  // 12 hex digits of time, most significant first
  let t = ms;
  for (let i = 11; i >= 0; i--) {
    text[DIGIT_AT[i]!] = HEX[t % 16]!;
    t = Math.floor(t / 16);
  }
  text[DIGIT_AT[12]!] = 0x37; // version 7
  text[DIGIT_AT[13]!] = HEX[pool[r]! & 0x0f]!;
  text[DIGIT_AT[14]!] = HEX[pool[r + 1]! >> 4]!;
  text[DIGIT_AT[15]!] = HEX[pool[r + 1]! & 0x0f]!;
  text[DIGIT_AT[16]!] = HEX[0x8 | (pool[r + 2]! & 0x03)]!; // variant 10xx
  text[DIGIT_AT[17]!] = HEX[pool[r + 2]! >> 4]!;
  for (let i = 18, b = r + 3; i < 32; i += 2, b++) {
    text[DIGIT_AT[i]!] = HEX[pool[b]! >> 4]!;
    text[DIGIT_AT[i + 1]!] = HEX[pool[b]! & 0x0f]!;
  }
  return text.toString('latin1');
}
