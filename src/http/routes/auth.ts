import type { Context } from 'koa';
import { z } from 'zod';
import { effectiveAbilities, mayGrant, scopes } from '../../auth/abilities.js';
import { dummyPasswordHash, verifyPassword } from '../../auth/password.js';
import { iso } from '../../clock.js';
import { AppError, validationError } from '../../errors.js';
import type { User } from '../../accounts/users.js';
import { SESSION_COOKIE, XSRF_COOKIE } from '../authenticate.js';
import type { HttpDeps } from '../deps.js';
import { loginLocked } from '../responses.js';
import { defineRoute, type AnyRoute, type Principal } from '../route.js';
import {
  meSchema,
  messageSchema,
  revokedSchema,
  single,
  tokenResultSchema,
  validationErrorSchema,
} from '../resources.js';

// spec: Authentication, Token lifecycle, Current user. Response bodies we chose where the
// spec is open are in docs/auth.md.

const tokenRequest = z
  .object({
    email: z.string().max(255).optional(),
    password: z.string().max(1024).optional(),
    device_name: z.string().max(255).optional(),
    scopes: z.array(z.enum(scopes)).max(scopes.length).optional(),
  })
  .optional();

const sessionLogin = z
  .object({ email: z.string().max(255).optional(), password: z.string().max(1024).optional() })
  .optional();

/** The user behind an email and password, or 'Unable to authenticate' without saying which part
 * failed; 429 while the account has too many failed logins (auth/login-throttle.ts). The caller
 * reports a login that succeeded to deps.loginThrottle.succeeded(). */
async function checkCredentials(
  deps: HttpDeps,
  email: string | undefined,
  password: string | undefined,
): Promise<User> {
  await deps.loginThrottle.attempt(email);
  const found = email ? deps.users.findWithHash(email.trim()) : null;
  // Always run the KDF, so an unknown email costs as long as a wrong password.
  const ok = await verifyPassword(password ?? '', found?.passwordHash ?? (await dummyPasswordHash()));
  if (!found || !ok || !password || !found.user.is_active) throw new AppError('unable_to_authenticate');
  return found.user;
}

/**
 * The scopes a new token of `user` gets: those asked for (default `*`), never more than the user has:
 * a read-only account's default is `read`, and a write scope asked for is a 422 on `scopes`.
 */
export function grantable(
  user: User,
  asked: readonly string[] | undefined,
  held: readonly string[] = effectiveAbilities(user, ['*']),
): string[] {
  const wanted = [...new Set(asked ?? (held.includes('*') ? ['*'] : held))];
  const refused = wanted.filter((s) => !mayGrant(held, s));
  if (refused.length)
    throw validationError({
      scopes: [`This account cannot give a token ${refused.join(', ')}: it holds ${held.join(', ') || 'no scope'}.`],
    });
  return wanted;
}

function setSessionCookies(ctx: Context, deps: HttpDeps, id: string | null, csrf: string | null): void {
  const base = { path: '/', sameSite: 'lax' as const, secure: deps.config.auth.secureCookies, overwrite: true };
  const maxAge = deps.sessions.lifetimeMs;
  ctx.cookies.set(SESSION_COOKIE, id, { ...base, httpOnly: true, maxAge: id ? maxAge : 0 });
  // Readable by the page's script, which echoes it in X-XSRF-TOKEN (spec: Authentication item 7).
  ctx.cookies.set(XSRF_COOKIE, csrf, { ...base, httpOnly: false, maxAge: csrf ? maxAge : 0 });
}

function currentToken(principal: Principal, now: number) {
  if (principal.token) {
    const t = principal.token;
    return {
      name: t.name,
      abilities: [...principal.abilities],
      expires_at: t.expiresAt,
      last_used_at: t.lastUsedAt ?? iso(now),
    };
  }
  // A cookie session has no token; it is described as one named "session".
  return {
    name: 'session',
    abilities: [...principal.abilities],
    expires_at: principal.session!.expiresAt,
    last_used_at: iso(now),
  };
}

export function authRoutes(deps: HttpDeps): AnyRoute[] {
  return [
    defineRoute({
      method: 'POST',
      path: '/api/v1/auth/token',
      operationId: 'auth.token.store',
      tags: ['Authentication'],
      summary: 'Create a personal access token from an email and password',
      description:
        'device_name is required. Any failure answers 401 \'Unable to authenticate\' without saying which part failed. scopes default to ["*"].',
      ability: 'public',
      rateClass: 'standard',
      body: tokenRequest,
      bodyRequired: true,
      conditions: [loginLocked],
      responses: {
        201: { description: 'The token, shown once', schema: tokenResultSchema },
        401: { description: 'Unable to authenticate', schema: messageSchema },
        422: { description: 'A field of the wrong type or an unknown scope', schema: validationErrorSchema },
      },
      handler: async ({ body }) => {
        const user = await checkCredentials(deps, body?.email, body?.password);
        const deviceName = body?.device_name?.trim();
        if (!deviceName) throw new AppError('unable_to_authenticate');
        const abilities = grantable(user, body?.scopes);
        const { plainText, record } = deps.tokens.create(user.id, deviceName, abilities);
        await deps.loginThrottle.succeeded(body?.email);
        deps.log.info({ userId: user.id, tokenId: record.id, abilities }, 'token created');
        return { status: 201, body: { token: plainText, token_type: 'Bearer', expires_at: record.expiresAt } };
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: '/api/v1/auth/token',
      operationId: 'auth.token.destroy',
      tags: ['Authentication'],
      summary: 'Revoke the token this request is made with',
      ability: 'authenticated',
      rateClass: 'standard',
      responses: {
        200: { description: 'Revoked; data.revoked is 1', schema: revokedSchema },
        400: { description: 'The request was made with a cookie session, not a token', schema: messageSchema },
      },
      handler: ({ principal }) => {
        if (!principal!.token) throw new AppError('not_a_token');
        deps.tokens.revoke(principal!.token.id);
        return { body: { data: { revoked: 1 } } };
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: '/api/v1/auth/tokens',
      operationId: 'auth.tokens.destroy',
      tags: ['Authentication'],
      summary: "Revoke every token of the current user (other users' tokens are untouched)",
      ability: 'authenticated',
      rateClass: 'standard',
      responses: {
        200: { description: 'data.revoked counts the tokens revoked, the current one included', schema: revokedSchema },
      },
      handler: ({ principal }) => ({ body: { data: { revoked: deps.tokens.revokeAllOf(principal!.user.id) } } }),
    }),
    defineRoute({
      method: 'GET',
      path: '/api/v1/me',
      operationId: 'me.show',
      tags: ['Authentication'],
      summary: 'The current user and the token (or session) in use',
      ability: 'authenticated',
      rateClass: 'standard',
      responses: { 200: { description: 'The current user', schema: single(meSchema) } },
      handler: ({ principal }) => {
        const { user } = principal!;
        return {
          body: {
            data: {
              id: user.id,
              name: user.name,
              email: user.email,
              is_admin: user.is_admin,
              current_token: currentToken(principal!, deps.clock.now()),
            },
          },
        };
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/sanctum/csrf-cookie',
      operationId: 'csrf-cookie.show',
      tags: ['Authentication'],
      summary: 'Start a cookie session and set the XSRF-TOKEN cookie',
      description: 'Send the cookie value back in the X-XSRF-TOKEN header on every POST, PUT, PATCH and DELETE.',
      ability: 'public',
      rateClass: 'standard',
      // A GET that writes: a new session is a row in SQLite (store_busy while another connection holds the lock).
      writes: true,
      responses: { 204: { description: 'Cookies gatehouse_session (HttpOnly) and XSRF-TOKEN set' } },
      handler: ({ koa }) => {
        const existingId = koa.cookies.get(SESSION_COOKIE);
        const existing = existingId ? deps.sessions.find(existingId) : null;
        if (existing && existingId) setSessionCookies(koa, deps, existingId, existing.csrfToken);
        else {
          const { id, record } = deps.sessions.start();
          setSessionCookies(koa, deps, id, record.csrfToken);
        }
        return { status: 204 };
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/api/v1/auth/session',
      operationId: 'auth.session.store',
      tags: ['Authentication'],
      summary: 'Log in a cookie session (after GET /sanctum/csrf-cookie, with X-XSRF-TOKEN)',
      ability: 'public',
      csrf: true,
      rateClass: 'standard',
      body: sessionLogin,
      bodyRequired: true,
      conditions: [loginLocked],
      responses: {
        200: {
          description: 'Logged in; a new session cookie is set',
          schema: single(meSchema.omit({ current_token: true })),
        },
        401: { description: 'Unable to authenticate', schema: messageSchema },
        419: {
          description: 'Token Mismatch: no CSRF session, or X-XSRF-TOKEN missing or wrong',
          schema: messageSchema,
        },
      },
      handler: async ({ body, koa }) => {
        const user = await checkCredentials(deps, body?.email, body?.password);
        const previous = deps.sessions.find(koa.cookies.get(SESSION_COOKIE)!)!;
        const { id, record } = deps.sessions.login(previous, user.id);
        await deps.loginThrottle.succeeded(body?.email);
        setSessionCookies(koa, deps, id, record.csrfToken);
        return { body: { data: { id: user.id, name: user.name, email: user.email, is_admin: user.is_admin } } };
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: '/api/v1/auth/session',
      operationId: 'auth.session.destroy',
      tags: ['Authentication'],
      summary: 'Log out the cookie session',
      ability: 'authenticated',
      rateClass: 'standard',
      responses: {
        204: { description: 'Logged out; cookies cleared' },
        400: { description: 'The request was made with a token, not a session', schema: messageSchema },
      },
      handler: ({ principal, koa }) => {
        if (!principal!.session) throw new AppError('not_a_session');
        deps.sessions.destroy(principal!.session);
        setSessionCookies(koa, deps, null, null);
        return { status: 204 };
      },
    }),
  ];
}
