import { createHash } from 'node:crypto';
import type { Context } from 'koa';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { consumeOrThrow } from '../http/rate-limit.js';
import type { Clock } from '../clock.js';
import { AppError } from '../errors.js';
import { admissionOf, setAdmission, webhookHeaderNames, type WebhookAdmission, type WebhookGate, type WebhookKind } from './gate.js';
import type { KeptAnswer, ReplayWindow } from './replay-window.js';
import { checkTimestamp, parseSignature, verifies } from './signature.js';
import { allowed, type ActiveSource, type WebhookSources } from './sources.js';

// The signed gate (issue 8 items 1-3; docs/webhooks-incoming.md), in this order:
//   1. the signature header (`X-{prefix}-Signature`, the partner's `X-Partner-Signature`):
//      missing or not `sha256=<64 hex>` -> 401;
//   2. the source: every enabled source of the endpoint's kind is tried (its secret, and its
//      previous one during a rotation's grace), each compared in constant time; none -> 401.
//      The source names the project (DESIGN: sources are matched by signature);
//   3. the source's allowlist against the client address -> 403;
//   4. `X-{prefix}-Timestamp`, when present: integer Unix seconds within the tolerance -> 401;
//   5. retry: the same body from the same source, accepted (2xx) within the tolerance window, is
//      answered its first answer again with `X-{prefix}-Replayed: true` and applied no more; while
//      its first request is still being handled it waits for that answer (issue 22 item 1;
//      replay-window.ts). A body answered with an error may be sent again and is then applied.
//      Retries are answered before the rate limit: they cost a lookup and apply nothing;
//   6. the source's rate limit -> 429 with retry_after.

export interface SignedGateOptions {
  headerPrefix: string;
  toleranceSeconds: number;
  /** Admit requests without a signature header (naming no project): development only. */
  allowUnsigned: boolean;
}

const REPLAY_KEY = 'webhookReplayKey';

export class SignedWebhookGate implements WebhookGate {
  readonly #limiters = new Map<number, { rate: number; limiter: RateLimiterMemory }>();

  constructor(
    private readonly sources: WebhookSources,
    private readonly clock: Clock,
    private readonly options: SignedGateOptions,
    private readonly replays: ReplayWindow,
  ) {}

  headerNames(kind: WebhookKind): { signature: string; timestamp: string; replayed: string } {
    return webhookHeaderNames(kind, this.options.headerPrefix);
  }

  async check(kind: WebhookKind, ctx: Context, rawBody: Buffer): Promise<WebhookAdmission> {
    const already = admissionOf(ctx);
    if (already) return already;
    const names = this.headerNames(kind);
    const header = ctx.get(names.signature);
    if (!header) {
      if (this.options.allowUnsigned) return setAdmission(ctx, { projectId: null, sourceId: null, replay: null });
      throw new AppError('missing_signature', { header: names.signature });
    }
    const given = parseSignature(header);
    if (!given) throw new AppError('invalid_signature', { detail: `The ${names.signature} header must be sha256=<64 lowercase hex digits>.` });
    const source = this.#match(kind, rawBody, given);
    if (!source) throw new AppError('invalid_signature', { detail: 'The signature does not match any enabled webhook source of this endpoint.' });
    ctx.state.webhookSourceId = source.id; // for the request log, also when a later step refuses
    ctx.state.webhookProjectId = source.projectId;
    if (source.allow && !allowed(source.allow, ctx.ip)) throw new AppError('address_not_allowed', { address: ctx.ip });
    const now = this.clock.now();
    const timestamp = checkTimestamp(ctx.get(names.timestamp) || undefined, now, this.options.toleranceSeconds);
    if (!timestamp.ok) throw new AppError('stale_timestamp', { detail: timestamp.message });
    // The body's own digest, not the signature: a retry signed with a rotated secret is the same body.
    const key = `${source.id}:${createHash('sha256').update(rawBody).digest('base64')}`;
    const claim = await this.replays.claim(key);
    if (claim.kind === 'answered') {
      const { status, body, contentType } = claim.answer;
      const headers = { [names.replayed]: 'true', ...(contentType ? { 'Content-Type': contentType } : {}) };
      return setAdmission(ctx, { projectId: source.projectId, sourceId: source.id, replay: { status, body, headers } });
    }
    if (claim.kind === 'busy') throw new AppError('request_in_progress');
    ctx.state[REPLAY_KEY] = key; // settle() keeps or forgets the answer
    await this.#limit(source);
    return setAdmission(ctx, { projectId: source.projectId, sourceId: source.id, replay: null });
  }

  admit(kind: WebhookKind, ctx: Context): WebhookAdmission {
    const admission = admissionOf(ctx);
    if (!admission) throw new Error(`webhook ${kind} handled without the gate: the route must declare webhook: '${kind}'`);
    return admission;
  }

  settle(ctx: Context): void {
    const key = ctx.state[REPLAY_KEY] as string | undefined;
    if (key === undefined) return;
    delete ctx.state[REPLAY_KEY];
    this.replays.settle(key, answerOf(ctx));
  }

  #match(kind: WebhookKind, body: Buffer, given: Buffer): ActiveSource | null {
    let match: ActiveSource | null = null;
    // Every source and secret is tried, so the time taken does not say which one matched.
    for (const source of this.sources.active(kind)) for (const secret of source.secrets) if (verifies(secret, body, given) && !match) match = source;
    return match;
  }

  async #limit(source: ActiveSource): Promise<void> {
    let entry = this.#limiters.get(source.id);
    if (!entry || entry.rate !== source.ratePerMinute) {
      entry = { rate: source.ratePerMinute, limiter: new RateLimiterMemory({ points: source.ratePerMinute, duration: 60, keyPrefix: `webhook-source-${source.id}` }) };
      this.#limiters.set(source.id, entry);
    }
    await consumeOrThrow(entry.limiter, 'source', source.ratePerMinute);
  }
}

/** A 2xx answer as it will go out (Koa writes an object as JSON.stringify does); null for an error. */
function answerOf(ctx: Context): KeptAnswer | null {
  if (ctx.status < 200 || ctx.status > 299) return null;
  const body: unknown = ctx.body;
  let text: string;
  if (body === undefined || body === null) text = '';
  else if (typeof body === 'string') text = body;
  else if (Buffer.isBuffer(body) || typeof (body as { pipe?: unknown }).pipe === 'function') return null; // no route answers these; not kept
  else text = JSON.stringify(body);
  return { status: ctx.status, body: text, contentType: ctx.response.get('Content-Type') || null };
}
