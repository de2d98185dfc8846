import { z } from 'zod';
import { namedOnly } from '../auth/abilities.js';
import { errorCatalogue, type ErrorCode } from '../errors.js';
import type { WebhookKind } from '../webhooks/gate.js';
import type { AnyRoute, Condition, RateClass } from './route.js';
import type { ResponseHeader } from './response-headers.js';
import { cloudOwnedResource } from './cloud-owned.js';
import { rateClassesOf } from './rate-limit.js';

// Every answer a route can give, derived from what the route declares (docs/rest.md): the
// request pipeline (pipeline.ts) answers the same errors for every route that has the same
// declaration (an ability, a rate class, a body, a webhook gate), so the OpenAPI document
// (openapi.ts) takes them from here rather than from each route, and cannot forget one.
// A route adds what only its handler can meet: `responses` (success bodies, and error statuses
// described in words) and `conditions` (shared conditions such as `conditions.eventLogBehind`).
// A condition every route of a kind meets (every write, every signed webhook) is one line in
// conditionsOf(); a header one more entry in responseHeaders (response-headers.ts) and the line in
// responsesOf() that puts it on the statuses that carry it.

const RATE_LIMITED: readonly ResponseHeader[] = [
  'Retry-After',
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
];

/** Conditions shared by routes: a route names those its handler can meet in `conditions`. */
export const conditions = {
  serverError: { code: 'server_error', when: 'an unexpected failure (a bug); the details go to the log only' },
  eventLogBehind: {
    code: 'event_log_behind',
    when: 'answered scans are not all in the access-event log yet (its ingest is behind for longer than store.readWaitMs)',
    headers: ['Retry-After'],
  },
  scanAnswerTimeout: {
    code: 'scan_answer_timeout',
    when: 'the scan was not answered within mqtt.answerTimeoutMs (it goes on: send it again with the same request_id after Retry-After)',
    headers: ['Retry-After'],
  },
  storeBusy: {
    code: 'store_busy',
    when: "SQLite's write lock stayed held by another connection past store.busyTimeoutMs; nothing was written",
    headers: ['Retry-After'],
  },
} satisfies Record<string, Condition>;

/** Too many failed logins for one account (auth/login-throttle.ts): 429 with Retry-After. */
export const loginLocked: Condition = {
  code: 'login_locked',
  when: 'too many failed logins for this account (auth.loginFailuresPerAccount in auth.loginFailureWindowSeconds), from any address',
  headers: ['Retry-After'],
};

/** A limit of the route's own (OTP attempts): 429 with the rate-limit headers (http/rate-limit.ts consumeOrThrow). */
export const rateLimited = (when: string): Condition => ({ code: 'too_many_requests', when, headers: RATE_LIMITED });

/** What the document is built with besides the routes: the configuration the responses depend on. */
export interface ResponseContext {
  /** Requests per window of a rate class; 0 = off (then it never answers 429 nor sends X-RateLimit-*). */
  rateLimit(cls: RateClass): number;
  /** The request headers a signed webhook of this kind carries (webhooks/gate.ts). */
  webhookHeaders(kind: WebhookKind): { signature: string; timestamp: string; replayed: string };
  /** incomingWebhooks.allowUnsigned: a request without a signature header is admitted. */
  allowUnsigned: boolean;
}

const SAFE = new Set(['GET', 'HEAD']);

/** The route writes to SQLite (route.ts `writes`): every method but GET, unless read-only or declared otherwise. */
const writesToStore = (route: AnyRoute): boolean => route.writes ?? (!SAFE.has(route.method) && !route.readOnly);

/** A path parameter the route can refuse (a non-numeric id, a channel name with a `!`, which no
 * slug, id or name rule takes): then it answers 404 route_not_found. */
function paramsCanFail(route: AnyRoute): boolean {
  if (!route.params) return false;
  const names = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
  return !route.params.safeParse(Object.fromEntries(names.map((n) => [n, '!']))).success;
}

const hasFields = (schema: z.ZodType): boolean =>
  Object.keys(
    (z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as { properties?: object }).properties ?? {},
  ).length > 0;

/** The route's requests are counted by a rate limiter (its class is limited). */
const counted = (route: AnyRoute, context: ResponseContext): boolean =>
  route.rateClass !== 'none' && context.rateLimit(route.rateClass) > 0;

/** The budgets the route's requests count against (all), and those with a limit on this appliance (on). */
function budgets(route: AnyRoute, context: ResponseContext): { all: RateClass[]; on: RateClass[] } {
  const all = rateClassesOf(route).filter((c) => c !== 'none');
  return { all, on: all.filter((c) => context.rateLimit(c) > 0) };
}

/** When the 429 comes: over the route's class, or over the search budget when the request searches. */
function overBudget(route: AnyRoute, on: readonly RateClass[]): string {
  const when = (c: RateClass) =>
    c === 'search' && route.rateClass !== 'search'
      ? `the search rate limit when it searches (a non-empty ${route.searchQuery!.join(' or ')})`
      : `the ${c} rate limit`;
  return `over ${on.map(when).join(', or ')} (per token, session or client address)`;
}

/** The conditions the pipeline answers for this route, in the order it checks them, then the route's own. */
export function conditionsOf(route: AnyRoute, context: ResponseContext): Condition[] {
  const out: Condition[] = [];
  const add = (code: ErrorCode, when: string, headers?: readonly ResponseHeader[]) =>
    out.push({ code, when, ...(headers ? { headers } : {}) });
  if (route.ability === 'sync') {
    add(
      'unauthenticated',
      'no sync token, or one that is malformed, unknown or revoked (an edge revoked on the cloud is refused at its next request), or this appliance is not a cloud',
    );
    // Counted per edge, so once its token is known (pipeline.ts).
    if (counted(route, context))
      add(
        'too_many_requests',
        'over rateLimit.sync requests of this edge in rateLimit.syncWindowSeconds (all four protocol routes together)',
        RATE_LIMITED,
      );
    if (route.project) add('not_found', "the path names another project than the token's");
    add('sync_protocol_unsupported', 'the Gatehouse-Sync-Protocol header names a version this cloud does not speak');
    if (route.query && hasFields(route.query)) add('validation_failed', 'a query parameter fails validation');
    if (route.body) {
      add('unsupported_media_type', 'a Content-Type the route does not take');
      add('payload_too_large', 'a body over the limit');
      add('request_timeout', 'the body did not arrive whole within http.bodyTimeoutMs (the connection is closed)');
      add('malformed_json', 'a JSON body that does not parse, or nests arrays and objects deeper than 128 levels');
      add('validation_failed', 'the body fails validation');
    }
    out.push(...(route.conditions ?? []));
    if (writesToStore(route)) out.push(conditions.storeBusy);
    out.push(conditions.serverError);
    return out;
  }
  const { on } = budgets(route, context);
  if (on.length > 0) add('too_many_requests', overBudget(route, on), RATE_LIMITED);
  if (route.ability !== 'public') {
    add(
      'unauthenticated',
      'no bearer token or session, or one that is malformed, unknown, revoked or expired; a deactivated user',
    );
    if (!SAFE.has(route.method))
      add('token_mismatch', 'a cookie session (or an XSRF-TOKEN) without a matching X-XSRF-TOKEN header');
  }
  if (route.ability !== 'public' && route.ability !== 'authenticated') {
    add('missing_ability', `a token made without the ability ${route.ability} (its name in missing_ability)`);
    // Forbidden only where an account's own limits can bite: a write (or a read of secrets) by a
    // read-only account, or a named-only ability a cookie session's account lacks.
    const writeLike = route.revealsSecrets || (!SAFE.has(route.method) && !route.readOnly);
    if (writeLike || (namedOnly as readonly string[]).includes(route.ability))
      add(
        'invalid_ability',
        `a read-only account, or a cookie session whose account lacks the ability ${route.ability}`,
      );
  }
  if (route.admin) add('forbidden', 'the account is not an administrator');
  if (route.csrf)
    add('token_mismatch', 'no CSRF session (GET /sanctum/csrf-cookie first), or X-XSRF-TOKEN missing or wrong');
  if (paramsCanFail(route))
    add(
      'route_not_found',
      'a path parameter that names nothing (a non-numeric id), or an empty one (the path then names no route)',
    );
  if (route.project) add('not_found', 'no such project, or the account cannot reach it');
  if (route.query && hasFields(route.query)) add('validation_failed', 'a query parameter fails validation');
  if (route.body) {
    add('unsupported_media_type', 'a Content-Type the route does not take');
    add('payload_too_large', 'a body over the limit');
    add('request_timeout', 'the body did not arrive whole within http.bodyTimeoutMs (the connection is closed)');
  }
  if (route.webhook) {
    const { signature, timestamp } = context.webhookHeaders(route.webhook);
    if (!context.allowUnsigned) add('missing_signature', `no ${signature} header`);
    add('invalid_signature', `${signature} is not sha256=<64 hex> or matches no enabled source of this endpoint`);
    add('address_not_allowed', "the client address is outside the matched source's allowlist");
    add('stale_timestamp', `${timestamp} is not integer Unix seconds within the tolerance`);
    // Only a handler that waits (route.ts) is ever seen in flight by another request.
    if (route.waits)
      add(
        'request_in_progress',
        'an identical signed body from the same source is still being handled past incomingWebhooks.replayWaitMs',
      );
    add('too_many_requests', "over the matched source's rate_limit_per_minute", RATE_LIMITED);
    add(
      'too_many_failures',
      'the client address failed more than incomingWebhooks.failuresPerMinute times in a minute (answered before the body is read, not logged)',
      ['Retry-After'],
    );
  }
  if (route.body) {
    add('malformed_json', 'a JSON body that does not parse, or nests arrays and objects deeper than 64 levels');
    add('validation_failed', 'the body fails validation');
  }
  // Checked after the body, just before the handler (pipeline.ts).
  if (route.project && route.method !== 'GET' && cloudOwnedResource(route.path)) {
    add(
      'edge_read_only',
      `on an edge (GATEHOUSE_ROLE=edge), in the project it replicates: ${cloudOwnedResource(route.path)} come from the cloud and are changed there`,
    );
  }
  out.push(...(route.conditions ?? []));
  // Any write may find SQLite's write lock held past store.busyTimeoutMs (errors.ts store_busy).
  if (writesToStore(route)) out.push(conditions.storeBusy);
  out.push(conditions.serverError);
  return out;
}

/** Incoming webhooks (and the Pusher HTTP API) answer {error,
 * message}, and validation with 400 (spec: Errors; http/app.ts). */
export const statusOf = (code: ErrorCode, envelope: AnyRoute['envelope']): number =>
  code === 'validation_failed' && envelope === 'webhook' ? 400 : errorCatalogue[code].status;

const fieldErrors = z.record(z.string(), z.array(z.string())).describe('messages per field, keyed by dotted path');
/** Fields some codes add to the envelope. */
const EXTRA: Partial<Record<ErrorCode, Record<string, z.ZodType>>> = {
  validation_failed: { errors: fieldErrors },
  too_many_requests: { retry_after: z.number().int().min(1).describe('seconds until a request is served again') },
  too_many_failures: { retry_after: z.number().int().min(1).describe('seconds until the address is served again') },
  login_locked: { retry_after: z.number().int().min(1).describe('seconds until the account takes logins again') },
  scan_answer_timeout: {
    retry_after: z.number().int().min(1).describe('seconds before sending the scan again with the same request_id'),
  },
  store_busy: { retry_after: z.number().int().min(1).describe('seconds until the write may succeed') },
  sync_upload_busy: { retry_after: z.number().int().min(1).describe('seconds before sending the batch again') },
  channel_forbidden: { reason: z.string().describe('why the channel is refused') },
  missing_ability: {
    missing_ability: z.string().describe('the ability the route needs, which the token was not made with'),
  },
};

const base = (envelope: AnyRoute['envelope']): Record<string, z.ZodType> =>
  envelope === 'webhook'
    ? { error: z.string().describe('the error code'), message: z.string() }
    : { message: z.string() };

/** The error body of a status: the envelope, plus the fields its
 * codes add (optional unless every cause of the status adds them). */
export function errorBody(envelope: AnyRoute['envelope'], codes: readonly ErrorCode[]): z.ZodObject {
  const shape: Record<string, z.ZodType> = { ...base(envelope) };
  const extras = codes.map((c) => EXTRA[c] ?? {});
  for (const extra of extras) {
    for (const [key, schema] of Object.entries(extra)) {
      shape[key] = extras.every((e) => key in e) ? schema : schema.optional();
    }
  }
  return z.object(shape);
}

export interface DocumentedResponse {
  description: string;
  /** The JSON body; none for a status answered without one. */
  schema?: z.ZodType;
  text?: 'text/plain' | 'text/csv';
  /** Response headers, and whether every answer of the status carries them. */
  headers: Map<string, boolean>;
}

/** Every status the route answers, with its body and headers: the route's `responses` and the conditions above. */
export function responsesOf(route: AnyRoute, context: ResponseContext): Map<number, DocumentedResponse> {
  // Set on every answer: the request id (http/app.ts), and the counters once the limiter has
  // counted the request, which it does before anything else is checked (pipeline.ts), but for
  // the sync protocol after the edge's token (a 401 is answered uncounted).
  const always = new Map<string, boolean>([
    ['X-Request-Id', true],
    ['X-Content-Type-Options', true],
    ['X-Frame-Options', true],
  ]);
  // Required when every budget the route may count against is limited (a budget that is off sends
  // none); never on a 404, which a path naming no route (an empty id: `.../blocklist/`) gets before
  // any budget counts it (http/app.ts).
  const { all, on } = budgets(route, context);
  const countedAt = (status: number): boolean | null =>
    route.ability === 'sync'
      ? counted(route, context) && status !== 401
        ? true
        : null
      : on.length === 0
        ? null
        : on.length === all.length && status !== 404;
  const causes = new Map<number, Condition[]>();
  for (const c of conditionsOf(route, context)) {
    const status = statusOf(c.code, route.envelope);
    causes.set(status, [...(causes.get(status) ?? []), c]);
  }
  const statuses = [...new Set([...Object.keys(route.responses).map(Number), ...causes.keys()])].sort((a, b) => a - b);
  const out = new Map<number, DocumentedResponse>();
  for (const status of statuses) {
    const declared = route.responses[status];
    const met = causes.get(status) ?? [];
    const lines = [...(declared ? [declared.description] : []), ...met.map((c) => `\`${c.code}\`: ${c.when}`)];
    const description = lines.length === 1 ? lines[0]! : lines.map((l) => `- ${l}`).join('\n');
    const headers = new Map(always);
    const rateHeaders = countedAt(status);
    if (rateHeaders !== null)
      for (const h of ['X-RateLimit-Limit', 'X-RateLimit-Remaining'] as const) headers.set(h, rateHeaders);
    // A retried signed webhook gets its first (2xx) answer again, marked (webhooks/replay-window.ts).
    if (route.webhook && status >= 200 && status < 300)
      headers.set(context.webhookHeaders(route.webhook).replayed, false);
    for (const name of new Set(met.flatMap((c) => c.headers ?? [])))
      headers.set(name, met.every((c) => c.headers?.includes(name)) || (headers.get(name) ?? false));
    const schema =
      status < 400
        ? declared?.schema
        : (declared?.schema ??
          errorBody(
            route.envelope,
            met.map((c) => c.code),
          ));
    out.set(status, {
      description,
      headers,
      ...(schema ? { schema } : {}),
      ...(declared?.text ? { text: declared.text } : {}),
    });
  }
  return out;
}
