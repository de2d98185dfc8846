import type { Context } from 'koa';
import type { z } from 'zod';
import { abilitiesAllow } from '../auth/abilities.js';
import { AppError, fieldErrorsFromZod, validationError } from '../errors.js';
import { SYNC_JSON_DEPTH } from '../json-depth.js';
import { authenticate, requireCsrfSession } from './authenticate.js';
import { edgeRefusal } from './edge-refusal.js';
import { readBody, type BeforeParse } from './body.js';
import type { HttpDeps } from './deps.js';
import { rateClassOf } from './rate-limit.js';
import type { AnyRoute, Principal } from './route.js';
import type { Project } from '../accounts/projects.js';
import { PROTOCOL_HEADER, SUPPORTED_PROTOCOLS } from './sync-protocol-version.js';
import { admissionOf, type RepeatedResponse } from '../webhooks/gate.js';

// The steps every request of a route goes through, each a small function:
// authenticate -> rate limit -> authorize -> resolve project -> parse body -> validate -> handle.

function rateKey(ctx: Context, principal: Principal | null): string {
  if (principal?.token) return `token:${principal.token.id}`;
  if (principal?.session) return `session:${principal.session.idHash.toString('hex')}`;
  return `ip:${ctx.ip}`;
}

function authorize(route: AnyRoute, method: string, principal: Principal | null): Principal | null {
  if (route.ability === 'public') return principal;
  if (!principal) throw new AppError('unauthenticated');
  // A read that reveals secrets is checked as a write would be: `read` does not reach it.
  const asMethod = route.revealsSecrets ? 'SECRET' : route.readOnly ? 'GET' : method;
  if (!abilitiesAllow(principal.abilities, asMethod, route.ability, principal.user.is_admin)) {
    // A token made without the ability is refused as unauthenticated, as the platform's contract says, naming
    // what it lacks; a read-only account, or a cookie session (which holds every ability its
    // account has: a 401 would end it), is forbidden the action (docs/auth.md: abilities).
    if (principal.kind === 'token' && !principal.user.read_only)
      throw new AppError('missing_ability', {}, { body: { missing_ability: route.ability } });
    throw new AppError('invalid_ability');
  }
  if (route.admin && !principal.user.is_admin) throw new AppError('forbidden');
  return principal;
}

function parse<S extends z.ZodType>(
  schema: S | undefined,
  input: unknown,
  onError: (e: z.ZodError) => AppError,
): unknown {
  if (!schema) return undefined;
  const result = schema.safeParse(input);
  if (!result.success) throw onError(result.error);
  return result.data;
}

/** A retried webhook body gets its first answer again, as it went out (docs/webhooks-incoming.md). */
function respondAgain(ctx: Context, replay: RepeatedResponse): void {
  ctx.status = replay.status;
  ctx.set(replay.headers); // Content-Type first: Koa keeps it when the body is a string
  ctx.body = replay.body;
}

/** The sync protocol's routes (docs/sync.md): the edge's sync token opens its own project's and
 * nothing else; each edge has a budget of requests (docs/sync.md: limits). */
async function authenticateEdge(route: AnyRoute, ctx: Context, deps: HttpDeps): Promise<Project> {
  // Only a cloud takes sync tokens: a box whose role changed since it issued them refuses them all.
  const header = ctx.get('authorization');
  const edge =
    header.startsWith('Bearer ') && deps.config.role === 'cloud'
      ? deps.sync.edges.authenticate(header.slice(7).trim())
      : null;
  const refusal = edgeRefusal(deps, edge);
  if (refusal) throw refusal;
  ctx.state.edge = edge;
  ctx.set((await deps.rateLimits.consume(route.rateClass, `edge:${edge!.id}`)).headers);
  const project = deps.projects.find(edge!.project_id)!;
  const { teamSlug, projectSlug } = ctx.params as Record<string, string | undefined>;
  if (teamSlug !== undefined && (projectSlug !== project.slug || teamSlug !== deps.teams.find(project.team_id)?.slug))
    throw new AppError('not_found', { resource: 'Project' });
  const spoken = Number(ctx.get(PROTOCOL_HEADER));
  if (!SUPPORTED_PROTOCOLS.includes(spoken)) {
    throw new AppError(
      'sync_protocol_unsupported',
      {
        detail: `This cloud speaks sync protocol ${SUPPORTED_PROTOCOLS.join(', ')}; the request names ${ctx.get(PROTOCOL_HEADER) || 'none'} in ${PROTOCOL_HEADER}. Update the edge or the cloud.`,
      },
      { body: { code: 'sync_protocol_unsupported', supported_protocols: SUPPORTED_PROTOCOLS } },
    );
  }
  // The routes answer in the version the edge speaks (docs/sync.md: protocol versions).
  ctx.state.protocol = spoken;
  return project;
}

export function routeMiddleware(route: AnyRoute, deps: HttpDeps) {
  return async (ctx: Context): Promise<void> => {
    ctx.state.route = route;
    if (route.ability === 'sync') return syncRoute(route, deps, ctx);
    const outcome = route.ability === 'public' ? { principal: null } : authenticate(ctx, deps);
    const principal = 'principal' in outcome ? outcome.principal : null;
    const limited = await deps.rateLimits.consume(rateClassOf(route, ctx.query), rateKey(ctx, principal));
    ctx.set(limited.headers);
    if ('error' in outcome) throw outcome.error;
    authorize(route, ctx.method, principal);
    if (route.csrf) requireCsrfSession(ctx, deps.sessions);

    // Malformed path parameters (a non-numeric id) name no resource: 404, as Laravel does.
    const params = parse(route.params, ctx.params, () => new AppError('route_not_found', { path: ctx.path }));
    let project = null;
    if (route.project) {
      const { teamSlug, projectSlug } = ctx.params as Record<string, string>;
      project = deps.projects.findReachable(teamSlug!, projectSlug!, {
        userId: principal!.user.id,
        isAdmin: principal!.user.is_admin,
      });
      if (!project) throw new AppError('not_found', { resource: 'Project' });
      ctx.state.project = project;
    }
    const query = parse(route.query, ctx.query, (e) => validationError(fieldErrorsFromZod(e)));
    let body: unknown;
    if (route.body) {
      const gate = route.webhook
        ? async (raw: Buffer): Promise<BeforeParse> => {
            ctx.state.rawBody = raw; // the request log keeps the first KB of a refused one
            return (await deps.webhookGate.check(route.webhook!, ctx, raw)).replay ? 'answered' : 'parse';
          }
        : undefined;
      const parsed = await readBody(
        ctx,
        route.bodyKind ?? 'json',
        route.bodyLimitBytes ?? deps.config.http.bodyLimitBytes,
        deps.config.http.bodyTimeoutMs,
        gate,
      );
      ctx.state.rawBody = parsed.raw;
      const replay = route.webhook ? admissionOf(ctx)?.replay : null;
      if (replay) return respondAgain(ctx, replay);
      body = parse(route.body, parsed.value, (e) => validationError(fieldErrorsFromZod(e)));
    }

    if (project && route.method !== 'GET' && deps.sync.readOnlyOnEdge(project.id, route.path))
      throw new AppError('edge_read_only', { resource: deps.sync.readOnlyOnEdge(project.id, route.path)! });
    await handle(route, ctx, { params, query, body, principal, project });
  };
}

async function handle(
  route: AnyRoute,
  ctx: Context,
  request: Omit<Parameters<AnyRoute['handler']>[0], 'koa'>,
): Promise<void> {
  const reply = await route.handler({ ...request, koa: ctx });
  if (reply.headers) ctx.set(reply.headers);
  ctx.status = reply.status ?? 200;
  if (reply.body !== undefined) ctx.body = reply.body;
}

async function syncRoute(route: AnyRoute, deps: HttpDeps, ctx: Context): Promise<void> {
  const project = await authenticateEdge(route, ctx, deps);
  const params = parse(route.params, ctx.params, () => new AppError('route_not_found', { path: ctx.path }));
  const query = parse(route.query, ctx.query, (e) => validationError(fieldErrorsFromZod(e)));
  const release = route.admit?.(ctx);
  try {
    let body: unknown;
    if (route.body) {
      // The protocol's envelope holds stored values as deep as REST took them (src/json-depth.ts).
      const parsed = await readBody(
        ctx,
        'json',
        route.bodyLimitBytes ?? deps.config.http.bodyLimitBytes,
        deps.config.http.bodyTimeoutMs,
        undefined,
        SYNC_JSON_DEPTH,
      );
      body = parse(route.body, parsed.value, (e) => validationError(fieldErrorsFromZod(e)));
    }
    await handle(route, ctx, { params, query, body, principal: null, project });
  } finally {
    release?.();
  }
}
