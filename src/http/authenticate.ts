import type { Context } from 'koa';
import { AppError } from '../errors.js';
import { SessionService } from '../auth/sessions.js';
import { effectiveAbilities } from '../auth/abilities.js';
import type { HttpDeps } from './deps.js';
import type { Principal } from './route.js';

export const SESSION_COOKIE = 'gatehouse_session';
export const XSRF_COOKIE = 'XSRF-TOKEN';
export const XSRF_HEADER = 'x-xsrf-token';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export type AuthOutcome = { principal: Principal } | { error: AppError } | { principal: null };

type Deps = Pick<HttpDeps, 'tokens' | 'sessions' | 'users'>;

/** Who is calling: a bearer token, else a cookie session (CSRF-checked on state-changing
 * requests), else nobody. Never throws; the pipeline decides what a failure means for the
 * route, after the rate limiter has counted the request. */
export function authenticate(ctx: Context, deps: Deps): AuthOutcome {
  const header = ctx.get('authorization');
  if (header) return fromBearer(header, deps);
  const sessionId = ctx.cookies.get(SESSION_COOKIE);
  if (sessionId) return fromSession(ctx, sessionId, deps);
  // A browser that has (or should have) the CSRF cookie but no session: spec Authentication
  // item 7 answers 'Token Mismatch' rather than 'Unauthenticated'.
  if (!SAFE_METHODS.has(ctx.method) && (ctx.cookies.get(XSRF_COOKIE) || ctx.get(XSRF_HEADER))) {
    return { error: new AppError('token_mismatch') };
  }
  return { principal: null };
}

function fromBearer(header: string, { tokens, users }: Deps): AuthOutcome {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  const record = match ? tokens.verify(match[1]!) : null;
  if (!record) return { error: new AppError('unauthenticated') };
  const user = users.find(record.userId);
  if (!user?.is_active) return { error: new AppError('unauthenticated') };
  const token = tokens.touch(record);
  return {
    principal: { user, kind: 'token', token, session: null, abilities: effectiveAbilities(user, token.abilities) },
  };
}

function fromSession(ctx: Context, sessionId: string, { sessions, users }: Deps): AuthOutcome {
  const session = sessions.find(sessionId);
  if (!session) return { error: new AppError(SAFE_METHODS.has(ctx.method) ? 'unauthenticated' : 'token_mismatch') };
  if (!SAFE_METHODS.has(ctx.method) && !SessionService.csrfMatches(session, ctx.get(XSRF_HEADER))) {
    return { error: new AppError('token_mismatch') };
  }
  const user = session.userId === null ? null : users.find(session.userId);
  if (!user?.is_active) return { error: new AppError('unauthenticated') };
  // A first-party session acts with every ability, like Sanctum's TransientToken (a read-only
  // account's with the read scopes).
  return { principal: { user, kind: 'session', token: null, session, abilities: effectiveAbilities(user, ['*']) } };
}

/** For the session login route: the anonymous session and a matching CSRF header are required. */
export function requireCsrfSession(ctx: Context, sessions: SessionService) {
  const sessionId = ctx.cookies.get(SESSION_COOKIE);
  const session = sessionId ? sessions.find(sessionId) : null;
  if (!session || !SessionService.csrfMatches(session, ctx.get(XSRF_HEADER))) throw new AppError('token_mismatch');
  return session;
}
