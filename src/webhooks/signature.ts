import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Parsed } from '../result.js';

// The incoming-webhook signature (spec: Authentication item 9): `sha256=<lowercase hex
// HMAC-SHA256 of the raw body>` under the source's secret. Verified over the exact bytes
// received, never a re-serialisation, lengths checked before timingSafeEqual
// (docs/webhooks-incoming.md). Known vector (test vector there): secret "It's a Secret to Everybody", body
// "Hello, World!" -> sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17.

export const sign = (secret: string, body: Buffer | string): string =>
  `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

/** The 32 digest bytes a header carries, or null when it is not `sha256=<64 hex>`. */
export function parseSignature(header: string | undefined): Buffer | null {
  const m = /^sha256=([0-9a-fA-F]{64})$/.exec((header ?? '').trim());
  return m ? Buffer.from(m[1]!, 'hex') : null;
}

/** Constant-time: does `given` (parsed header) sign `body` under `secret`? */
export function verifies(secret: string, body: Buffer, given: Buffer): boolean {
  const expected = createHmac('sha256', secret).update(body).digest();
  return expected.length === given.length && timingSafeEqual(expected, given);
}

export type TimestampCheck = Parsed<{ at: number | null }>;

/** X-Svc-Timestamp: absent is allowed; present must be integer Unix seconds within the tolerance. */
export function checkTimestamp(header: string | undefined, nowMs: number, toleranceSeconds: number): TimestampCheck {
  if (header === undefined || header === '') return { ok: true, at: null };
  if (!/^\d{1,12}$/.test(header.trim()))
    return { ok: false, message: 'The timestamp header must be an integer of Unix seconds.' };
  const at = Number(header.trim()) * 1000;
  const skew = Math.abs(nowMs - at) / 1000;
  if (skew > toleranceSeconds)
    return {
      ok: false,
      message: `The timestamp is ${Math.round(skew)} s away from the server's clock (tolerance ${toleranceSeconds} s).`,
    };
  return { ok: true, at };
}
