import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scopes } from '../../src/auth/abilities.js';
import type { AnyRoute } from '../../src/http/route.js';
import { createUser, startAppliance, type TestAppliance } from '../helpers/appliance.js';

// Walks every route of the route table with a token of each scope and checks allow/deny
// against the contract's scope table (spec: Authentication item 4), derived here from the path
// alone, so a route that declares the wrong ability, or none, fails.

/** Routes any valid token may call, whatever its scopes. Adding one is a decision: list it here. */
const ANY_TOKEN = new Set([
  'me.show',
  'auth.token.destroy',
  'auth.tokens.destroy',
  'auth.session.destroy',
  'projects.index',
  'projects.show',
  'broadcasting.auth',
  'broadcasting.config',
]);

/** Public routes that authenticate by a Pusher signature instead of a token (docs/realtime.md). */
const signed = (route: AnyRoute) => route.tags.includes('Pusher HTTP API');

function area(path: string): 'attendees' | 'forms' | 'access' | null {
  if (/\/attendees(\/|$)|\/attendee-types(\/|$)/.test(path)) return 'attendees';
  if (/\/forms(\/|$)/.test(path)) return 'forms';
  if (
    /\/(access-points|access-zones|readers|credentials|credential-keys|time-restrictions|blocklist|access-events|gateways|devices|analytics|sync\/status|sync\/conflicts)(\/|$)/.test(
      path,
    )
  )
    return 'access';
  return null;
}

function specAllows(scope: string, route: AnyRoute): boolean {
  if (ANY_TOKEN.has(route.operationId)) return true;
  if (route.ability === 'sync') return false; // an edge's sync token only (docs/sync.md), never a user's token
  // Issuing and re-confirming edges: a token naming sync:edges, or an administrator's `*` (these tokens are an administrator's; docs/auth.md).
  if (route.ability === 'sync:edges') return scope === '*' || scope === 'sync:edges';
  if (scope === '*') return true;
  // A read made as a POST (analytics) counts as a GET: docs/decisions.md. A GET that reveals
  // credentials (reader OTPs) counts as a write: `read` and `*:read` do not reach it (docs/security.md, attack 2).
  const method = route.revealsSecrets ? 'POST' : route.readOnly ? 'GET' : route.method;
  if (scope === 'read') return method === 'GET';
  const a = area(route.path);
  return a !== null && scope === `${a}:${method === 'GET' ? 'read' : 'write'}`;
}

function concretePath(route: AnyRoute, userId: number): string {
  return route.path
    .replace('{teamSlug}/{projectSlug}', 'default/default')
    .replace('{teamSlug}', 'default')
    .replace('{projectSlug}', 'default')
    .replace('{userId}', String(userId))
    .replace(/\{\w+\}/g, '999999');
}

describe('abilities on every route', () => {
  let gh: TestAppliance;
  let adminId: number;
  const tokens = new Map<string, string>();
  beforeAll(async () => {
    gh = await startAppliance();
    for (const scope of scopes) tokens.set(scope, await gh.token([scope]));
    adminId = (await gh.request('GET', '/api/v1/me', { token: tokens.get('*') })).body.data.id;
  });
  afterAll(() => gh.destroy());

  it('declares a known ability for every route, and only known routes are open to any token', () => {
    expect(gh.app.routes.length).toBeGreaterThan(20);
    for (const route of gh.app.routes) {
      expect([...scopes, 'authenticated', 'public', 'sync'], route.operationId).toContain(route.ability);
      if (route.ability === 'authenticated') expect(ANY_TOKEN, route.operationId).toContain(route.operationId);
    }
  });

  it('lets public routes answer without a token', async () => {
    for (const route of gh.app.routes.filter((r) => r.ability === 'public' && r.method === 'GET')) {
      const res = await gh.request(route.method, concretePath(route, adminId));
      if (signed(route))
        expect(res.body, route.operationId).toEqual({
          error: 'unknown_app',
          message: 'No app with id 999999 on this server.',
        });
      else expect([200, 204], route.operationId).toContain(res.status);
    }
  });

  it('refuses every protected route without a token', async () => {
    for (const route of gh.app.routes.filter((r) => r.ability !== 'public')) {
      const res = await gh.request(route.method, concretePath(route, adminId), route.body ? { body: {} } : {});
      expect(res.status, `${route.method} ${route.path}`).toBe(401);
      expect(res.body).toEqual({ message: 'Unauthenticated.' });
    }
  });

  it('allows and denies each scope as the spec table says', async () => {
    const revoker = await createUser(gh, tokens.get('*')!, 'revoker@example.test');
    const mismatches: string[] = [];
    for (const route of gh.app.routes.filter((r) => r.ability !== 'public')) {
      if (route.ability === 'sync') {
        // The sync protocol takes an edge's sync token only: every user token is unknown to it (401).
        for (const scope of scopes) {
          const res = await gh.request(route.method, concretePath(route, adminId), {
            token: tokens.get(scope)!,
            ...(route.body ? { body: {} } : {}),
          });
          if (res.status !== 401) mismatches.push(`${scope} ${route.method} ${route.path}: ${res.status}, not 401`);
        }
        continue;
      }
      for (const scope of scopes) {
        let token = tokens.get(scope)!;
        // Revoking routes would revoke the walker's own tokens: give them a token of their own.
        if (route.operationId.startsWith('auth.token')) {
          token = await gh.token([scope], 'revoker@example.test', 'a long enough password');
        }
        // A user id that does not exist: allowed calls answer 404 or 422 and change nothing.
        const res = await gh.request(route.method, concretePath(route, adminId + 100000), {
          token,
          ...(route.body ? { body: {} } : {}),
        });
        // Refused as the platform's contract says (Authentication, item 6): 401 'Unauthenticated.', naming the ability it lacks.
        const denied =
          res.status === 401 && res.body?.message === 'Unauthenticated.' && res.body?.missing_ability === route.ability;
        if (res.status === 401 && !denied)
          mismatches.push(`${scope} ${route.method} ${route.path}: 401 ${JSON.stringify(res.body)}`);
        if (res.status === 403 && res.body?.message === 'Invalid ability provided.')
          mismatches.push(`${scope} ${route.method} ${route.path}: 403 for a token lacking its ability`);
        if (denied === specAllows(scope, route))
          mismatches.push(`${scope} ${route.method} ${route.path}: ${denied ? 'denied' : 'allowed'} (${res.status})`);
      }
    }
    expect(revoker.id).toBeGreaterThan(0);
    expect(mismatches).toEqual([]);
  });

  it("answers 403 'This action is unauthorized.' to a non-administrator's full token on admin routes", async () => {
    const user = await createUser(gh, tokens.get('*')!, 'not-admin@example.test');
    for (const route of gh.app.routes.filter((r) => r.admin)) {
      const res = await gh.request(
        route.method,
        concretePath(route, adminId),
        route.body ? { token: user.token, body: {} } : { token: user.token },
      );
      expect(res.status, `${route.method} ${route.path}`).toBe(403);
      expect(res.body.message).toBe('This action is unauthorized.');
    }
  });
});
