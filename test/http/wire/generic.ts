import { sign } from '@octokit/webhooks-methods';
import type { AnyRoute } from '../../../src/http/route.js';
import type { Operation } from './check.js';
import { kindOfRoute, PUSHER_ENV, type Case, type World } from './world.js';

// The requests every route with the same declaration is refused the same way: no credentials, a
// token without the ability, an unknown project, a malformed id or query, each bad body, each
// refusal of the webhook gate. They are sent to every operation that has the declaration, so a
// new route is tried with them without a line here; its own answers are in the case tables.

const FILL: Record<string, string> = {
  teamSlug: 'default',
  projectSlug: 'default',
  appId: PUSHER_ENV.GATEHOUSE_PUSHER_APP_ID,
  channelName: 'presence-wire',
};

/** The path with its parameters filled: slugs of the default project, ids that parse (and name nothing), overrides. */
export const fill = (path: string, over: Record<string, string> = {}) =>
  path.replace(/\{(\w+)\}/g, (_, name: string) => over[name] ?? FILL[name] ?? '999999');

/** A value the query parameter refuses, read from its schema in the document; null when none can be refused. */
function refused(schema: Record<string, unknown>): string | null {
  if (schema.type === 'integer' || schema.type === 'number') return 'x';
  if (Array.isArray(schema.enum)) return '~not-one-of-them~';
  if (schema.format === 'date-time' || schema.format === 'date') return 'someday';
  if (typeof schema.maxLength === 'number') return 'x'.repeat(schema.maxLength + 1);
  return null;
}

/** The route's path without its last segment when that segment is its id (`.../access-points`), else null. */
const collectionOf = (path: string, idName: string): string | null =>
  path.endsWith(`/{${idName}}`) ? path.slice(0, -`/{${idName}}`.length) : null;

export function genericCases(
  w: World,
  route: AnyRoute,
  operation: Operation,
  routes: readonly AnyRoute[] = [],
): Case[] {
  const { method } = route;
  const op = route.operationId;
  const path = fill(route.path);
  const kind = kindOfRoute(route);
  const out: Case[] = [];
  const add = (status: number, why: string, send: Case['send']) => out.push({ op, status, why, send });
  const invalid = route.envelope === 'webhook' ? 400 : 422;
  /** The credentials the route takes, made for these body bytes. */
  const credentials = async (raw: string): Promise<Record<string, string>> => {
    if (route.ability === 'sync')
      return { authorization: `Bearer ${await w.syncToken()}`, 'Gatehouse-Sync-Protocol': '1' };
    if (route.ability !== 'public') return { authorization: `Bearer ${w.admin}` };
    if (route.csrf) return w.csrf();
    if (kind) {
      const { secret } = await w.source(kind);
      return { [kind === 'registration-partner' ? 'X-Partner-Signature' : 'X-Svc-Signature']: await sign(secret, raw) };
    }
    return {};
  };
  const withBody =
    (raw: string, type = 'application/json') =>
    async () =>
      w.send({ method, path, raw, type, headers: await credentials(raw) });
  const at = (p: string) => async () => w.send({ method, path: p, headers: await credentials('') });

  if (route.ability === 'sync') {
    add(401, 'no credentials', () => w.send({ method, path }));
    add(401, "a user's token, not a sync token", () => w.send({ method, path, token: w.admin }));
  } else if (route.ability !== 'public') {
    add(401, 'no credentials', () => w.send({ method, path }));
    if (method !== 'GET')
      add(419, 'an X-XSRF-TOKEN header and no session', () =>
        w.send({ method, path, headers: { 'x-xsrf-token': 'forged' } }),
      );
    if (route.ability !== 'authenticated') {
      add(401, `a token made without ${route.ability}`, () =>
        w.send({ method, path, token: route.ability === 'forms:read' ? w.weak.attendees : w.weak.forms }),
      );
      const writeLike = route.revealsSecrets || (method !== 'GET' && !route.readOnly);
      if (writeLike) add(403, "a read-only account's full token", () => w.send({ method, path, token: w.viewer }));
    }
  }
  if (route.admin)
    add(403, 'a full token of an account that is not an administrator', () => w.send({ method, path, token: w.staff }));
  if (route.csrf) add(419, 'no CSRF session', () => w.send({ method, path, json: {} }));
  const ids = operation.spec.parameters as { name: string; in: string; schema: Record<string, unknown> }[];
  const numeric = ids.filter((p) => p.in === 'path' && p.schema.type === 'integer').map((p) => p.name);
  if (numeric.length) add(404, `a non-numeric ${numeric[0]}`, at(fill(route.path, { [numeric[0]!]: 'x' })));
  // An empty id (`.../blocklist/`, as `.` or `..` for an id also become): the path names no route of
  // this method. Where the collection path answers the method itself (a GET lists) it is that route's.
  const last = numeric.at(-1);
  const collection = last === undefined ? null : collectionOf(route.path, last);
  if (last !== undefined && collection !== null && !routes.some((r) => r.path === collection && r.method === method))
    add(404, `an empty ${last} (the path ends in /)`, at(fill(route.path, { [last]: '' })));
  if (route.project) add(404, 'an unknown project', at(fill(route.path, { teamSlug: 'nope', projectSlug: 'nope' })));
  for (const p of ids.filter((q) => q.in === 'query')) {
    const value = refused(p.schema);
    if (value === null) continue;
    add(invalid, `query ${p.name}=${value.slice(0, 20)}`, at(`${path}?${p.name}=${encodeURIComponent(value)}`));
    break;
  }
  if (route.body) {
    add(415, 'a text/plain body', withBody('x', 'text/plain'));
    add(413, 'a Content-Length over the limit', async () => w.oversized(method, path, await credentials('{')));
    add(400, 'malformed JSON', withBody('{'));
    add(invalid, 'a JSON body of the wrong type', withBody('42'));
  }
  if (kind) {
    const header = kind === 'registration-partner' ? 'X-Partner-Signature' : 'X-Svc-Signature';
    add(401, 'a signature no source made', () =>
      w.send({ method, path, raw: '{}', type: 'application/json', headers: { [header]: `sha256=${'0'.repeat(64)}` } }),
    );
    add(
      401,
      'a timestamp outside the tolerance',
      w.signed(kind, '{"stale":true}', { headers: { 'X-Svc-Timestamp': '1' } }),
    );
    add(403, "a client outside the source's allowlist", async () => {
      await w.source(kind, 'allowlisted', { ip_allowlist: ['10.0.0.0/8'] });
      return w.signed(kind, '{"outside":true}', { source: 'allowlisted' })();
    });
    add(429, "a second request past the source's limit of 1 a minute", async () => {
      await w.source(kind, 'limited', { rate_limit_per_minute: 1 });
      await w.signed(kind, '{"first":true}', { source: 'limited' })();
      return w.signed(kind, '{"second":true}', { source: 'limited' })();
    });
  }
  return out;
}
