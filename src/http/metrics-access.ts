import { createHash, timingSafeEqual } from 'node:crypto';
import type { Context } from 'koa';
import { AppError } from '../errors.js';

// Who may read /metrics (docs/security.md). The figures say how busy each
// door is, which clients are connected and how the box fails; on a shared venue LAN that is for
// the operator's monitoring only. `open` stays the default so existing scrapers keep working;
// `loopback` serves only clients on the box itself (a local Prometheus agent or exporter), by
// the socket's own address, never X-Forwarded-For (a header anyone can send); `token` asks for
// `Authorization: Bearer <metrics.token>`, a token of its own (Prometheus' `authorization`
// setting), so a scraper holds no API token.

export type MetricsAccess = 'open' | 'loopback' | 'token';

export interface MetricsAccessSettings {
  access: MetricsAccess;
  token: string | null;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest();

/** 127.0.0.0/8 and ::1, also as IPv4-mapped IPv6 (::ffff:127.0.0.1). */
export function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  return v4.startsWith('127.') || address === '::1';
}

/** A check for each request to /metrics: throws 403 or 401 when the client may not read them. */
export function metricsGuard(settings: MetricsAccessSettings): (ctx: Context) => void {
  const expected = settings.token ? sha256(settings.token) : null;
  return (ctx) => {
    if (settings.access === 'loopback' && !isLoopback(ctx.req.socket.remoteAddress))
      throw new AppError('metrics_loopback_only');
    if (settings.access !== 'token') return;
    const match = /^Bearer (\S+)$/.exec(ctx.get('authorization'));
    // Hashes have one length, so timingSafeEqual compares without telling the token's length.
    if (!expected || !match || !timingSafeEqual(sha256(match[1]!), expected)) {
      throw new AppError('unauthenticated', {}, { headers: { 'WWW-Authenticate': 'Bearer realm="metrics"' } });
    }
  };
}
