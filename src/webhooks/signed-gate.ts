import { createHash } from 'node:crypto';
import type { Context } from 'koa';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { consumeOrThrow } from '../http/rate-limit.js';
import type { Clock } from '../clock.js';
import { AppError } from '../errors.js';
import {
  admissionOf,
  setAdmission,
  webhookHeaderNames,
  type WebhookAdmission,
  type WebhookGate,
  type WebhookKind,
} from './gate.js';
import type { WebhookReceipts } from './receipts.js';
import type { KeptResponse, ReplayWindow } from './replay-window.js';
import { checkTimestamp, parseSignature, verifies } from './signature.js';
import { parseStandard, STANDARD_HEADERS, standardDigest, verifiesStandard } from './standard-signature.js';
import { allowed, type ActiveSource, type WebhookSources } from './sources.js';

// The signed gate (docs/webhooks-incoming.md), in this order:
//   1. the signature: Standard Webhooks headers when `webhook-signature` is sent (docs/security.md, attack 5;
//      standard-signature.ts: webhook-id and an integer webhook-timestamp required), else the
//      contract's `X-{prefix}-Signature` (the partner's `X-Partner-Signature`): missing or not
//      `sha256=<64 hex>` -> 401;
//   2. the source: every enabled source of the endpoint's kind is tried (its secret, and its
//      previous one during a rotation's grace), each compared in constant time; none -> 401.
//      The source names the project (docs/webhooks-incoming.md: sources are matched by signature);
//   3. the source's allowlist against the client address -> 403;
//   4. the timestamp, within the tolerance -> 401: `webhook-timestamp` (signed), or
//      `X-{prefix}-Timestamp` when present (not signed: the platform's scheme signs the body only);
//   5. retry: the same delivery from the same source — the same body, or the same webhook-id —
//      accepted (2xx) within the tolerance window is answered its first answer again with
//      `X-{prefix}-Replayed: true` and applied no more; while its first request is still being
//      handled it waits for that answer (replay-window.ts). After that window,
//      or a restart, the durable receipts answer it the same way for the endpoint's window
//      (receipts.ts). A delivery answered with an error may be sent again and
//      is then applied. Retries are answered before the rate limit: they apply nothing;
//   6. the source's rate limit -> 429 with retry_after.

export interface SignedGateOptions {
  headerPrefix: string;
  toleranceSeconds: number;
  /** Admit requests without a signature header (naming no project): development only. */
  allowUnsigned: boolean;
}

const REPLAY_KEY = 'webhookReplayKey';

/** What settle() needs to keep the answer of a claimed delivery. */
interface Claimed {
  key: string;
  kind: WebhookKind;
  sourceId: number;
  digest: Buffer;
}

/** A request whose signature verified: its source, the timestamp to check, and what identifies it. */
interface Verified {
  source: ActiveSource;
  timestamp: string | undefined;
  digest: Buffer;
}

export class SignedWebhookGate implements WebhookGate {
  readonly #limiters = new Map<number, { rate: number; limiter: RateLimiterMemory }>();

  constructor(
    private readonly sources: WebhookSources,
    private readonly clock: Clock,
    private readonly options: SignedGateOptions,
    private readonly replays: ReplayWindow,
    private readonly receipts: WebhookReceipts,
  ) {}

  headerNames(kind: WebhookKind): { signature: string; timestamp: string; replayed: string } {
    return webhookHeaderNames(kind, this.options.headerPrefix);
  }

  async check(kind: WebhookKind, ctx: Context, rawBody: Buffer): Promise<WebhookAdmission> {
    const already = admissionOf(ctx);
    if (already) return already;
    const names = this.headerNames(kind);
    const verified = ctx.get(STANDARD_HEADERS.signature)
      ? this.#standard(kind, ctx, rawBody)
      : this.#spec(kind, ctx, rawBody, names);
    if (!verified) return setAdmission(ctx, { projectId: null, sourceId: null, replay: null });
    const { source, digest } = verified;
    ctx.state.webhookSourceId = source.id; // for the request log, also when a later step refuses
    ctx.state.webhookProjectId = source.projectId;
    if (source.allow && !allowed(source.allow, ctx.ip)) throw new AppError('address_not_allowed', { address: ctx.ip });
    const timestamp = checkTimestamp(verified.timestamp, this.clock.now(), this.options.toleranceSeconds);
    if (!timestamp.ok) throw new AppError('stale_timestamp', { detail: timestamp.message });
    const key = `${source.id}:${digest.toString('base64')}`;
    const replayOf = (answer: KeptResponse) => {
      const headers = {
        [names.replayed]: 'true',
        ...(answer.contentType ? { 'Content-Type': answer.contentType } : {}),
      };
      return setAdmission(ctx, {
        projectId: source.projectId,
        sourceId: source.id,
        replay: { status: answer.status, body: answer.body, headers },
      });
    };
    const claim = await this.replays.claim(key);
    if (claim.kind === 'answered') return replayOf(claim.answer);
    if (claim.kind === 'busy') throw new AppError('request_in_progress');
    const claimed: Claimed = { key, kind, sourceId: source.id, digest };
    ctx.state[REPLAY_KEY] = claimed; // settle() keeps or forgets the answer, whatever throws from here
    // Not in memory: past its window, given up, or from before a restart, the durable receipts may know it.
    const stored = this.receipts.find(source.id, digest);
    if (stored) {
      delete ctx.state[REPLAY_KEY];
      this.replays.settle(key, stored);
      return replayOf(stored);
    }
    await this.#limit(source);
    return setAdmission(ctx, { projectId: source.projectId, sourceId: source.id, replay: null });
  }

  /** The platform's scheme (X-Svc-Signature): the body alone is signed,
   * so the body is what a retry repeats. Null: unsigned, and allowed. */
  #spec(
    kind: WebhookKind,
    ctx: Context,
    rawBody: Buffer,
    names: { signature: string; timestamp: string },
  ): Verified | null {
    const header = names.signature;
    const value = ctx.get(header);
    if (!value) {
      if (this.options.allowUnsigned) return null;
      throw new AppError('missing_signature', { header });
    }
    const given = parseSignature(value);
    if (!given)
      throw new AppError('invalid_signature', {
        detail: `The ${header} header must be sha256=<64 lowercase hex digits>.`,
      });
    const source = this.#match(kind, (secret) => verifies(secret, rawBody, given));
    if (!source) throw new AppError('invalid_signature', { detail: NO_SOURCE });
    // The body's own digest, not the signature: a retry signed with a rotated secret is the same body.
    const timestamp = ctx.get(names.timestamp) || undefined;
    return { source, timestamp, digest: createHash('sha256').update(rawBody).digest() };
  }

  /** Standard Webhooks: id, timestamp and body are signed; the id is what a retry repeats. */
  #standard(kind: WebhookKind, ctx: Context, rawBody: Buffer): Verified {
    const parsed = parseStandard((name) => ctx.get(name));
    if (!parsed.ok) throw new AppError(parsed.code, { detail: parsed.detail });
    const { delivery } = parsed;
    const source = this.#match(kind, (secret) => verifiesStandard(secret, delivery, rawBody));
    if (!source) throw new AppError('invalid_signature', { detail: NO_SOURCE });
    return { source, timestamp: delivery.timestamp, digest: standardDigest(delivery.id) };
  }

  admit(kind: WebhookKind, ctx: Context): WebhookAdmission {
    const admission = admissionOf(ctx);
    if (!admission)
      throw new Error(`webhook ${kind} handled without the gate: the route must declare webhook: '${kind}'`);
    return admission;
  }

  settle(ctx: Context): void {
    const claimed = ctx.state[REPLAY_KEY] as Claimed | undefined;
    if (claimed === undefined) return;
    delete ctx.state[REPLAY_KEY];
    const answer = keptResponseOf(ctx);
    // Durable before the answer goes out (the caller runs before Koa responds), and before the
    // in-memory window lets a waiting retry go with it.
    try {
      if (answer) this.receipts.record(claimed.kind, claimed.sourceId, claimed.digest, answer);
    } finally {
      this.replays.settle(claimed.key, answer);
    }
  }

  #match(kind: WebhookKind, signs: (secret: string) => boolean): ActiveSource | null {
    let match: ActiveSource | null = null;
    // Every source and secret is tried, so the time taken does not say which one matched.
    for (const source of this.sources.active(kind))
      for (const secret of source.secrets) if (signs(secret) && !match) match = source;
    return match;
  }

  async #limit(source: ActiveSource): Promise<void> {
    let entry = this.#limiters.get(source.id);
    if (!entry || entry.rate !== source.ratePerMinute) {
      entry = {
        rate: source.ratePerMinute,
        limiter: new RateLimiterMemory({
          points: source.ratePerMinute,
          duration: 60,
          keyPrefix: `webhook-source-${source.id}`,
        }),
      };
      this.#limiters.set(source.id, entry);
    }
    await consumeOrThrow(entry.limiter, 'source', source.ratePerMinute);
  }
}

const NO_SOURCE = 'The signature does not match any enabled webhook source of this endpoint.';

/** A 2xx answer as it will go out (Koa writes an object as JSON.stringify does); null for an error. */
function keptResponseOf(ctx: Context): KeptResponse | null {
  if (ctx.status < 200 || ctx.status > 299) return null;
  const body: unknown = ctx.body;
  let text: string;
  if (body === undefined || body === null) text = '';
  else if (typeof body === 'string') text = body;
  else if (Buffer.isBuffer(body) || typeof (body as { pipe?: unknown }).pipe === 'function')
    return null; // no route answers these; not kept
  else text = JSON.stringify(body);
  return { status: ctx.status, body: text, contentType: ctx.response.get('Content-Type') || null };
}
