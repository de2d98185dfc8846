// When a scan happened (docs/engine.md, "Timestamps"). Readers' clocks drift and gateways
// replay scans they buffered offline, so the sender's timestamp is used with two bounds:
// one up to 5 minutes ahead of our clock is taken as now (a fast clock); one more than
// 7 days old is refused (a replay that old cannot be judged against today's rules).

import type { Parsed } from '../result.js';

export const FUTURE_TOLERANCE_MS = 5 * 60_000;
export const PAST_LIMIT_MS = 7 * 24 * 3600_000;

export type ScanInstant = Parsed<{ at: number }>;

export function scanInstant(timestamp: string | undefined, now: number): ScanInstant {
  if (timestamp === undefined) return { ok: true, at: now };
  const at = Date.parse(timestamp);
  if (at > now + FUTURE_TOLERANCE_MS) return { ok: true, at: now };
  if (at < now - PAST_LIMIT_MS) return { ok: false, message: 'The timestamp is more than 7 days in the past.' };
  return { ok: true, at };
}
