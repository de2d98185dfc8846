import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestResponse } from '../helpers/appliance.js';
import { signedInBrowser } from '../helpers/cookie-session.js';
import { type ProcessAppliance, startProcessAppliance } from '../helpers/process-appliance.js';

// Every write is refused to whoever may only read (docs/auth.md "Read-only accounts"; docs/security.md
// "A stolen edge": what held): a read-only account's token and cookie session, and a `read` token of an
// account that may write. The write routes are read from the served OpenAPI document, so a route added
// later is tried without a line here. The built appliance in its own process.

const A = '/api/v1/projects/default/default';
const PASSWORD = 'a long enough password';

/** Writes any signed-in account may make on its own sign-in, whatever it may do in a project: ending
 * its token or session, revoking its own tokens, and authorizing a channel it may read. A new route
 * with ability `authenticated` that writes must be judged and added here (or given a scope). */
const OWN_SIGN_IN = ['auth.token.destroy', 'auth.tokens.destroy', 'auth.session.destroy', 'broadcasting.auth'];

interface Operation {
  method: string;
  path: string;
  operationId: string;
  'x-ability': string;
  'x-read-only'?: boolean;
}

const fill = (path: string) =>
  path.replace(
    /\{(\w+)\}/g,
    (_, name: string) => ({ teamSlug: 'default', projectSlug: 'default', appId: 'app' })[name] ?? '1',
  );
const isWrite = (o: Operation) =>
  (o.method !== 'GET' && o.method !== 'HEAD' && !o['x-read-only']) || o['x-ability'].endsWith(':write'); // a GET needing a write scope shows secrets (reader OTPs)

describe('read-only accounts and read tokens, every write route', () => {
  let gh: ProcessAppliance;
  let admin: string;
  let operations: Operation[];
  const venue = async () => {
    const read = async (p: string) => (await gh.request('GET', `${A}/${p}`, { token: admin })).body.data;
    return { zones: await read('access-zones'), attendees: await read('attendees'), readers: await read('readers') };
  };

  beforeAll(async () => {
    gh = await startProcessAppliance();
    admin = await gh.token();
    const doc = (await gh.request('GET', '/api/v1/openapi.json')).body as {
      paths: Record<string, Record<string, Omit<Operation, 'method' | 'path'>>>;
    };
    operations = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.entries(ops).map(([method, op]) => ({ ...op, method: method.toUpperCase(), path })),
    );
    for (const [email, readOnly] of [
      ['viewer@example.test', true],
      ['writer@example.test', false],
    ] as const) {
      const made = await gh.request('POST', '/api/v1/users', {
        token: admin,
        body: { name: email, email, password: PASSWORD, read_only: readOnly },
      });
      expect(made.status, made.text).toBe(201);
      expect(
        (
          await gh.request('POST', `/api/v1/users/${made.body.data.id}/teams`, {
            token: admin,
            body: { team_slug: 'default' },
          })
        ).status,
      ).toBeLessThan(300);
    }
    const zone = (await gh.request('POST', `${A}/access-zones`, { token: admin, body: { name: 'Hall' } })).body.data.id;
    const door = (
      await gh.request('POST', `${A}/access-points`, { token: admin, body: { name: 'Door', access_zone_id: zone } })
    ).body.data.id;
    expect(
      (await gh.request('POST', `${A}/readers`, { token: admin, body: { identifier: 'R-1', access_point_id: door } }))
        .status,
    ).toBe(201);
    expect(
      (await gh.request('POST', `${A}/attendees`, { token: admin, body: { first_name: 'Ada', last_name: 'Lovelace' } }))
        .status,
    ).toBe(201);
  }, 60_000);
  afterAll(() => gh?.destroy());

  const token = async (email: string, scopes?: string[]) => {
    const res = await gh.request('POST', '/api/v1/auth/token', {
      body: { email, password: PASSWORD, device_name: 'read-only test', ...(scopes ? { scopes } : {}) },
    });
    expect(res.status, res.text).toBe(201);
    return res.body.token as string;
  };
  const expectRefused = (res: TestResponse, what: string) => {
    expect(res.status, `${what}: ${res.text}`).toBe(403);
    expect(res.body, what).toEqual({ message: 'Invalid ability provided.' });
  };

  it('knows every write that asks for no scope: only those on the caller’s own sign-in', () => {
    const unscoped = operations
      .filter((o) => o['x-ability'] === 'authenticated' && isWrite(o))
      .map((o) => o.operationId);
    expect(unscoped.sort()).toEqual([...OWN_SIGN_IN].sort());
  });

  it("refuses every write to a read-only account's token (403) and to a read token of an account that may write (401, naming the ability), nothing changed", async () => {
    const before = await venue();
    const writes = operations.filter(
      (o) => isWrite(o) && !['public', 'sync', 'authenticated'].includes(o['x-ability']),
    );
    expect(writes.length).toBeGreaterThan(60);
    const viewer = await token('viewer@example.test');
    const reader = await token('writer@example.test', ['read']);
    for (const o of writes) {
      const body = o.method === 'GET' || o.method === 'DELETE' ? {} : { body: {} };
      // The account may not write: forbidden, 403.
      expectRefused(
        await gh.request(o.method, fill(o.path), { token: viewer, ...body }),
        `read-only account: ${o.method} ${o.path}`,
      );
      // The account may, the token was not made to: unauthenticated as the platform's contract says, naming the ability (docs/auth.md).
      const res = await gh.request(o.method, fill(o.path), { token: reader, ...body });
      expect(res.status, `read token: ${o.method} ${o.path}: ${res.text}`).toBe(401);
      expect(res.body, `read token: ${o.method} ${o.path}`).toEqual({
        message: 'Unauthenticated.',
        missing_ability: o['x-ability'],
      });
    }
    expect(await venue()).toEqual(before);
  });

  it("refuses every write to a read-only account's cookie session, its CSRF token sent: 403, nothing changed", async () => {
    const before = await venue();
    const browser = await signedInBrowser(gh, 'viewer@example.test', PASSWORD);
    const writes = operations.filter(
      (o) => isWrite(o) && !['public', 'sync', 'authenticated'].includes(o['x-ability']),
    );
    for (const o of writes) {
      const res = await browser.send(o.method, fill(o.path), {
        csrf: true,
        ...(o.method === 'GET' || o.method === 'DELETE' ? {} : { body: { any: 1 } }),
      });
      expectRefused(res, `session: ${o.method} ${o.path}`);
    }
    expect((await browser.send('GET', `${A}/access-zones`)).status).toBe(200); // it still reads
    expect(await venue()).toEqual(before);
  });

  it('still lets a read-only account read, and end its own sign-in', async () => {
    const t = await token('viewer@example.test');
    const project = '/api/v1/projects/{teamSlug}/{projectSlug}/';
    const lists = operations.filter(
      (x) =>
        x.method === 'GET' &&
        x.path.startsWith(project) &&
        !x.path.slice(project.length).includes('{') &&
        !isWrite(x) &&
        x['x-ability'] !== 'sync',
    );
    expect(lists.length).toBeGreaterThan(10);
    let read = 0;
    for (const o of lists) {
      const res = await gh.request('GET', fill(o.path), { token: t });
      expect([401, 403], `${o.path}: ${res.status} ${res.text.slice(0, 200)}`).not.toContain(res.status); // a route of another role answers its own 404
      if (res.status === 200) read++;
    }
    expect(read).toBeGreaterThan(10);
    expect((await gh.request('DELETE', '/api/v1/auth/token', { token: t })).status).toBe(200);
    expect((await gh.request('GET', '/api/v1/me', { token: t })).status).toBe(401);
  });
});
