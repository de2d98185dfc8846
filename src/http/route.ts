import type { Context } from 'koa';
import type { z } from 'zod';
import type { RouteAbility } from '../auth/abilities.js';
import type { SessionRecord } from '../auth/sessions.js';
import type { TokenRecord } from '../auth/tokens.js';
import type { Project } from '../accounts/projects.js';
import type { User } from '../accounts/users.js';
import type { WebhookKind } from '../webhooks/gate.js';
import type { ErrorCode } from '../errors.js';
import type { ResponseHeader } from './response-headers.js';

// One route table: every route declares its method, path, operation id, ability, rate class
// and schemas here, and the router, the ability check, the rate limiter and the OpenAPI
// description are all built from it (docs/rest.md).

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** spec: Limits. `none` is for operations endpoints (health, metrics) that must never 429;
 * `sync` for the sync protocol's routes, counted per edge (docs/sync.md: limits). */
export type RateClass = 'standard' | 'bulk' | 'search' | 'sync' | 'none';

export type BodyKind = 'json' | 'form' | 'json-or-csv';

export interface Principal {
  user: User;
  kind: 'token' | 'session';
  token: TokenRecord | null;
  session: SessionRecord | null;
  abilities: readonly string[];
}

export interface Reply {
  status?: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface RouteRequest<P, Q, B> {
  params: P;
  query: Q;
  body: B;
  principal: Principal | null;
  project: Project | null;
  koa: Context;
}

type Out<S> = S extends z.ZodType ? z.output<S> : undefined;

/** One status a route answers. Error statuses need no schema: their body is the envelope's,
 * generated with the pipeline's own errors (responses.ts); give one only for fields beyond it. */
/** An error a route can answer: its code gives its status and message (errors.ts). */
export interface Condition {
  code: ErrorCode;
  /** When it is answered, for the document. */
  when: string;
  /** Headers it always carries. */
  headers?: readonly ResponseHeader[];
}

export interface ResponseSpec {
  description: string;
  /** The JSON body. */
  schema?: z.ZodType;
  /** The status answers this text type (instead of JSON, or besides it when a schema is given). */
  text?: 'text/plain' | 'text/csv';
}

export interface RouteSpec<
  P extends z.ZodType | undefined = undefined,
  Q extends z.ZodType | undefined = undefined,
  B extends z.ZodType | undefined = undefined,
> {
  method: HttpMethod;
  /** OpenAPI-style path: /api/v1/users/{userId} */
  path: string;
  operationId: string;
  tags: string[];
  summary: string;
  description?: string;
  ability: RouteAbility;
  rateClass: RateClass;
  /** Query parameters that make a GET a search (spec: Limits, "Search and export"): a request with
   * one of them non-empty counts against the search budget, any other against `rateClass`
   * (rate-limit.ts rateClassOf). The attendee list: `search`. */
  searchQuery?: readonly string[];
  /** A read that is a POST (a query with a body): `read` grants it as it grants GETs. */
  readOnly?: boolean;
  /** A GET that shows credentials (reader OTPs): `read` does not
   * grant it, only its ability or `*` (docs/security.md, attack 2). */
  revealsSecrets?: boolean;
  /** Whether the handler writes to SQLite, so that another connection holding the write lock
   * past store.busyTimeoutMs makes it answer 503 store_busy (responses.ts). By default every
   * method but GET does, unless readOnly. `false` for a POST that writes nothing there: a scan
   * (it writes the access-event journal, a file; a token's last_used_at and a session's expiry
   * skip a busy store), channel auth, the Pusher HTTP API. test/http/openapi-wire.test.ts sends
   * every operation its happy request under a held write lock and fails on a route that answers
   * otherwise than this says. */
  writes?: boolean;
  /** The handler waits for something outside the turn of the event loop that read the request
   * (the access-event journal's group commit) before it answers, so other requests are handled
   * meanwhile. On a webhook route an identical signed body can then arrive while it is still in
   * flight: 409 request_in_progress (responses.ts). A handler that runs to its answer without such a
   * wait has answered before the next request is read, so its retries always find the answer. */
  waits?: true;
  /** Only administrators (403 for others). */
  admin?: boolean;
  /** The path starts with /api/v1/projects/{teamSlug}/{projectSlug}: resolved and reach-checked. */
  project?: boolean;
  /** Requires a matching X-XSRF-TOKEN even before anyone is logged in (session login). */
  csrf?: boolean;
  bodyKind?: BodyKind;
  /** `webhook`: errors answered in the incoming-webhook envelope
   * {error, message, errors?} with 400 for validation (spec: Errors). */
  envelope?: 'rest' | 'webhook';
  /** An incoming webhook of this kind: the gate checks the raw body before it is parsed (webhooks/gate.ts). */
  webhook?: WebhookKind;
  /** A larger body limit than http.bodyLimitBytes, for imports. */
  bodyLimitBytes?: number;
  /** Sync protocol: a slot the handler's work needs, taken once the edge is known and before the
   * body is read, so a request the cloud cannot take now costs no parsing (it throws: 503 with
   * Retry-After); the release it answers is called once the request is answered. */
  admit?: (koa: Context) => () => void;
  /** The document says a body is required although the schema lets an absent one reach the
   * handler, which refuses it in its own way (token creation: 401, spec Authentication item 3). */
  bodyRequired?: true;
  params?: P;
  query?: Q;
  body?: B;
  responses: Record<number, ResponseSpec>;
  /** Errors only the handler can meet, beyond those the pipeline derives from this declaration (responses.ts). */
  conditions?: readonly Condition[];
  handler(request: RouteRequest<Out<P>, Out<Q>, Out<B>>): Reply | Promise<Reply>;
}

// Routes of different schemas live in one array: a route table holds routes of every schema; each route's own
// types are checked where it is declared (route()).
// biome-ignore lint/suspicious/noExplicitAny: a route table holds routes of every schema
export type AnyRoute = RouteSpec<any, any, any>;

/** Identity function that lets TypeScript infer the handler's request types from the schemas. */
export function defineRoute<
  P extends z.ZodType | undefined = undefined,
  Q extends z.ZodType | undefined = undefined,
  B extends z.ZodType | undefined = undefined,
>(spec: RouteSpec<P, Q, B>): AnyRoute {
  return spec as AnyRoute;
}

/** {param} -> :param for @koa/router. */
export const koaPath = (path: string) => path.replace(/\{(\w+)\}/g, ':$1');
