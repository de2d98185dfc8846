import type { Context } from 'koa';

// Who may post an incoming webhook, and for which project (spec: Authentication items 9-10;
// docs/webhooks-incoming.md). Routes that take an incoming webhook name its kind; the request
// pipeline asks the gate to check the raw body before it is parsed (so an unsigned request is a
// 401, never a 400 about its contents), and the handler reads the admission: the project of the
// source whose secret verified (signed-gate.ts).

export type WebhookKind =
  | 'access-event'
  | 'gateway-status'
  | 'registration-partner'
  | 'attendee-sync'
  | 'upload-finalized';

export interface WebhookAdmission {
  /** The project of the source whose secret verified; null when unsigned requests are allowed and this one was. */
  projectId: number | null;
  sourceId: number | null;
  /** A retry of a body accepted before: answer this, apply nothing (replay-window.ts). */
  replay: RepeatedResponse | null;
}

/** The first answer to a signed body, to be given again as it is, with these headers. */
export interface RepeatedResponse {
  status: number;
  body: string;
  headers: Record<string, string>;
}

export interface WebhookGate {
  /** Checks a request (signature, allowlist, timestamp, replay, rate); throws the documented error. */
  check(kind: WebhookKind, ctx: Context, rawBody: Buffer): Promise<WebhookAdmission>;
  /** The admission the pipeline made for this request (handlers call this). */
  admit(kind: WebhookKind, ctx: Context): WebhookAdmission;
  /** The request is answered (ctx.status and ctx.body are final): a 2xx is kept for retries of the
   * same body; after an error nothing was applied, so the body may be sent again and applied. */
  settle(ctx: Context): void;
}

/** The request headers a signed webhook of this kind carries (spec:
 * Authentication item 9: the partner signs in X-Partner-Signature). */
export function webhookHeaderNames(
  kind: WebhookKind,
  prefix: string,
): { signature: string; timestamp: string; replayed: string } {
  return {
    signature: kind === 'registration-partner' ? 'X-Partner-Signature' : `X-${prefix}-Signature`,
    timestamp: `X-${prefix}-Timestamp`,
    replayed: `X-${prefix}-Replayed`,
  };
}

const STATE_KEY = 'webhookAdmission';

export const admissionOf = (ctx: Context): WebhookAdmission | undefined =>
  ctx.state[STATE_KEY] as WebhookAdmission | undefined;
export const setAdmission = (ctx: Context, admission: WebhookAdmission): WebhookAdmission =>
  (ctx.state[STATE_KEY] = admission);
