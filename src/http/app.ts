import { randomUUID } from 'node:crypto';
import Koa, { type Context, type Next } from 'koa';
import Router from '@koa/router';
import { AppError } from '../errors.js';
import { isStoreBusy } from '../store/transactions.js';
import { admissionOf } from '../webhooks/gate.js';
import type { HttpDeps } from './deps.js';
import { routeMiddleware } from './pipeline.js';
import { consoleFiles, defaultConsoleDir } from './console-files.js';
import { securityHeaders } from './security-headers.js';
import { koaPath, type AnyRoute } from './route.js';

// The Koa app, built apart from any port: the caller attaches app.callback() to its servers.

function errorEnvelope(deps: HttpDeps, envelopeOfPath: (path: string) => Envelope) {
  return async (ctx: Context, next: Next) => {
    const started = process.hrtime.bigint();
    const reqId = ctx.get('x-request-id') || randomUUID();
    const log = deps.log.child({ reqId });
    ctx.state.log = log;
    ctx.set('X-Request-Id', reqId);
    try {
      await next();
      if (!ctx.state.route && ctx.status === 404 && ctx.body === undefined)
        throw new AppError('route_not_found', { path: ctx.path });
    } catch (err) {
      respondWithError(
        ctx,
        storeBusyAsAppError(ctx, err, deps),
        log,
        (ctx.state.route as AnyRoute | undefined)?.envelope ?? envelopeOfPath(ctx.path),
      );
    } finally {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      // The console's files (console-files.ts) are one label, not a label per file or page.
      const route = (ctx.state.route as AnyRoute | undefined)?.path ?? (ctx.state.console ? 'console' : 'unmatched');
      deps.metrics.observe(ctx.method, route, ctx.status, seconds);
      const fields = {
        method: ctx.method,
        url: ctx.url,
        status: ctx.status,
        ms: Math.round(seconds * 1e4) / 10,
        ip: ctx.ip,
      };
      if (ctx.status >= 500) log.error(fields, 'request failed');
      // Probes and scrapes every few seconds would drown the log, and so would each page's files
      // and the sync protocol's requests (every edge makes several a second).
      else if (quiet(ctx.state.route as AnyRoute | undefined) || ctx.state.console) log.debug(fields, 'request');
      else log.info(fields, 'request');
    }
  };
}

const quiet = (route: AnyRoute | undefined): boolean => route?.rateClass === 'none' || route?.rateClass === 'sync';

/** SQLite could not give a write its lock within busy_timeout (another connection held it: the
 * journal's ingest worker, a CLI command): not a bug, an answer to retry (docs/storage.md).
 * 503 with Retry-After, counted by route; the transaction rolled back, so nothing is half-written. */
function storeBusyAsAppError(ctx: Context, err: unknown, deps: HttpDeps): unknown {
  if (!isStoreBusy(err)) return err;
  const route = (ctx.state.route as AnyRoute | undefined)?.path ?? 'unmatched';
  deps.metrics.storeBusy.inc({ route });
  (ctx.state.log as HttpDeps['log']).warn({ code: err.code, route }, 'store busy: write answered 503');
  ctx.state.storeBusy = true;
  const seconds = deps.config.store.busyTimeoutMs / 1000;
  return new AppError('store_busy', { seconds }, { headers: { 'Retry-After': '1' }, body: { retry_after: 1 } });
}

function respondWithError(ctx: Context, err: unknown, log: HttpDeps['log'], envelope: Envelope): void {
  if (err instanceof AppError) {
    ctx.set(err.headers);
    if (envelope === 'webhook') {
      const { status, body } = webhookError(err);
      ctx.status = status;
      ctx.body = body;
      return;
    }
    ctx.status = err.status;
    ctx.body = err.body;
    return;
  }
  // http-errors thrown by Koa or its libraries (a client abort, a bad header): safe to show
  // when they say so; anything else is a bug and is never shown, only logged.
  const e = err as { status?: number; expose?: boolean; message?: string };
  if (typeof e.status === 'number' && e.status >= 400 && e.status < 500 && e.expose) {
    ctx.status = e.status;
    ctx.body = { message: e.message };
    return;
  }
  log.error({ err }, 'unhandled error');
  // Through the same path as a catalogued error, so an incoming webhook gets {error, message} here too.
  respondWithError(ctx, new AppError('server_error'), log, envelope);
}

/** Incoming webhooks answer {error, message, errors?} (spec: Errors): 400 for a payload that
 * fails validation, retry_after (seconds) on 429 and wherever Retry-After is set (503 store_busy). */
function webhookError(err: AppError): { status: number; body: Record<string, unknown> } {
  const { message, errors } = err.body as { message: string; errors?: unknown };
  const body: Record<string, unknown> = { error: err.code, message };
  if (errors !== undefined) body.errors = errors;
  const retryAfter = err.headers['Retry-After'];
  if (err.status === 429 || retryAfter !== undefined) body.retry_after = Number(retryAfter ?? 1);
  return { status: err.code === 'validation_failed' ? 400 : err.status, body };
}

/** Refusals that a verified source earned: they count against the source, not its address. */
const SOURCE_REFUSALS = new Set(['too_many_requests', 'request_in_progress', 'store_busy']);

/** Every request to /webhook/... goes into the incoming webhook log with its final status
 * (docs/webhooks-incoming.md); then the gate keeps its answer for retries, or forgets a refused body.
 * An address past its budget of failures no source vouched for is answered 429 first, and not
 * logged (webhooks/failure-throttle.ts). */
function incomingWebhookLog(deps: HttpDeps) {
  return async (ctx: Context, next: Next) => {
    if (!ctx.path.startsWith('/webhook/')) return next();
    const wait = deps.webhookThrottle.retryAfter(ctx.ip);
    if (wait > 0) {
      const { code, message } = new AppError('too_many_failures', { address: ctx.ip, seconds: wait });
      ctx.status = 429;
      ctx.set('Retry-After', String(wait));
      ctx.body = { error: code, message, retry_after: wait };
      return;
    }
    const receivedAt = deps.clock.now();
    const started = performance.now();
    try {
      await next();
    } finally {
      try {
        const failed = ctx.status < 200 || ctx.status > 299;
        deps.webhookGate.settle(ctx); // an accepted answer is kept for retries; a refused body may be sent again
        const admission = admissionOf(ctx);
        const replayed = admission?.replay != null;
        const raw = ctx.state.rawBody as Buffer | undefined;
        const error = (ctx.body as { error?: unknown } | undefined)?.error;
        if (failed && admission?.sourceId == null && !SOURCE_REFUSALS.has(String(error)))
          deps.webhookThrottle.failed(ctx.ip);
        // A store_busy answer is not logged here: writing it would wait busy_timeout for the
        // same lock again; the app log and gatehouse_store_busy_total have it (docs/storage.md).
        if (!ctx.state.storeBusy)
          deps.webhookLog.record({
            endpoint: ctx.path.slice(0, 200),
            method: ctx.method,
            status: ctx.status,
            sourceIp: ctx.ip,
            receivedAt,
            responseTimeMs: performance.now() - started,
            sourceId: (ctx.state.webhookSourceId as number | undefined) ?? null,
            projectId: (ctx.state.webhookProjectId as number | undefined) ?? null,
            // A retry answered with its first answer is logged as one, not as a fresh acceptance.
            reason: failed ? (typeof error === 'string' ? error : `http_${ctx.status}`) : replayed ? 'replayed' : null,
            bodyHead: failed && raw ? raw.subarray(0, 1024).toString('utf8') : null,
          });
      } catch (err) {
        deps.log.error({ err }, 'incoming webhook log write failed');
      }
    }
  };
}

/**
 * 405 for a path that exists under other methods; OPTIONS answered with Allow. A path ending in `/`
 * is matched without it (a GET of `.../access-points/` lists them), but under any other method it
 * is an item with an empty id (`DELETE .../blocklist/`, or `.` / `..` for an id, which clients
 * resolve to that): it names no route, so 404 as a non-numeric id is (pipeline.ts), not a 405 that
 * no operation declares.
 */
function methodNotAllowed(router: Router) {
  return async (ctx: Context, next: Next) => {
    await next();
    if (ctx.state.route) return;
    const match = router.match(ctx.path, ctx.method);
    if (match.path.length === 0 || match.route) return;
    const allowed = [...new Set(match.path.flatMap((layer) => layer.methods))].filter((m) => m !== 'HEAD');
    if (ctx.method === 'OPTIONS') {
      ctx.status = 204;
      ctx.set('Allow', allowed.join(', '));
      return;
    }
    if (ctx.path.length > 1 && ctx.path.endsWith('/')) throw new AppError('route_not_found', { path: ctx.path });
    throw new AppError(
      'method_not_allowed',
      { method: ctx.method, path: ctx.path, allowed: allowed.join(', ') },
      { headers: { Allow: allowed.join(', ') } },
    );
  };
}

type Envelope = NonNullable<AnyRoute['envelope']>;

/**
 * The error envelope of a path no route answered: that of the routes under its first segment when
 * they all share one (`/apps/...`: the Pusher HTTP API's {error, message}; `/webhook/...`: the
 * incoming webhooks'), else the REST one. A client of those APIs reads one envelope, whatever it sent.
 */
export function pathEnvelopes(routes: readonly AnyRoute[]): (path: string) => Envelope {
  const first = (path: string) => path.split('/')[1] ?? '';
  const bySegment = new Map<string, Set<Envelope>>();
  for (const route of routes) {
    const segment = first(route.path);
    if (!bySegment.has(segment)) bySegment.set(segment, new Set());
    bySegment.get(segment)!.add(route.envelope ?? 'rest');
  }
  return (path) => {
    const envelopes = bySegment.get(first(path));
    return envelopes?.size === 1 ? [...envelopes][0]! : 'rest';
  };
}

export function createHttpApp(deps: HttpDeps, routes: readonly AnyRoute[]): Koa {
  const app = new Koa({ proxy: deps.config.http.trustProxy, maxIpsCount: deps.config.http.maxProxyHops });
  app.silent = true;
  const router = new Router();
  for (const route of routes) router.register(koaPath(route.path), [route.method], routeMiddleware(route, deps));
  app.use(securityHeaders());
  app.use(incomingWebhookLog(deps));
  app.use(errorEnvelope(deps, pathEnvelopes(routes)));
  app.use(methodNotAllowed(router));
  app.use(router.routes());
  // After every route: the console's files and pages at / (docs/console.md), never in front of a route.
  app.use(consoleFiles(deps.config.http.consoleDir ?? defaultConsoleDir(), routes));
  return app;
}
