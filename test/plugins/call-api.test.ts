import { createPinia, setActivePinia } from 'pinia';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usePluginStore } from '../../src/plugins/toolkit/store.js';
import { createCallApi, PluginApiError, type PluginContext, xsrfCookie } from '../../src/plugins/toolkit/call-api.js';
import type { PluginDependency } from '../../src/plugins/toolkit/types.js';
import { accessPointsDependency } from './fixtures.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, client, startAppliance, type TestAppliance } from '../helpers/appliance.js';

// callApi against a real appliance (docs/plugins.md "callApi"): the contract's access-point dependency,
// path parameters from additionalData, the rest as query or body, the answer's data; refusals
// before any request (counted with a fetch that records what was sent), API errors with status,
// message and field errors. What a token may do is the appliance's to decide: a manifest whose
// `permissions` are device capabilities (the contract's `camera`, ...) calls its dependencies as well.

// The contract's access-point dependency, with one operation that is not "<method>:<path>".
const accessPoints: PluginDependency = {
  ...accessPointsDependency,
  operations: { ...accessPointsDependency.operations, broken: 'fetch /nowhere' },
};

describe('callApi against a running appliance', () => {
  let gh: TestAppliance;
  let zone: number;
  const sent: string[] = [];
  let token = '';
  const context = (): PluginContext => ({
    baseUrl: gh.url,
    teamSlug: 'default',
    projectSlug: 'default',
    token,
    fetch: (input, init) => {
      sent.push(`${init?.method} ${String(input)}`);
      return fetch(input, init);
    },
  });
  const callApi = createCallApi(context, () => ({ dependencies: [accessPoints] }));

  beforeAll(async () => {
    gh = await startAppliance();
    token = await gh.token();
    zone = (await client(gh, token).post('/api/v1/projects/default/default/access-zones', { name: 'Hall' })).body.data
      .id;
  });
  afterAll(() => gh.destroy());

  it('stores, shows, lists, updates and deletes through the operations map, resolving to the data', async () => {
    const made = await callApi<{ id: number; name: string }>('access-points.store', 'access_points', {
      name: 'North gate',
      access_zone_id: zone,
      direction: 'in',
    });
    expect(made).toMatchObject({ name: 'North gate', access_zone_id: zone });
    expect(await callApi('access-points.show', 'access_points', { access_point: made.id })).toMatchObject({
      id: made.id,
      name: 'North gate',
    });
    const page = await callApi<{ id: number }[]>('access-points.index', 'access_points', { per_page: 5 });
    expect(page.map((p) => p.id)).toContain(made.id);
    expect(sent.at(-1)).toBe(`GET ${gh.url}/api/v1/projects/default/default/access-points?per_page=5`);
    expect(
      await callApi('access-points.update', 'access_points', { access_point: made.id, name: 'North gate 2' }),
    ).toMatchObject({ name: 'North gate 2' });
    expect(sent.at(-1)).toBe(`PUT ${gh.url}/api/v1/projects/default/default/access-points/${made.id}`);
    expect(await callApi('access-points.destroy', 'access_points', { access_point: made.id })).toBeNull();
    expect((await client(gh, token).get(`/api/v1/projects/default/default/access-points/${made.id}`)).status).toBe(404);
  });

  it('refuses before any request: an unknown identifier or operation, a bad operation, a missing path parameter', async () => {
    const before = sent.length;
    const refused = async (promise: Promise<unknown>, code: string, message: RegExp) => {
      const err = await promise.then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(PluginApiError);
      expect((err as PluginApiError).code).toBe(code);
      expect((err as PluginApiError).message).toMatch(message);
    };
    await refused(
      callApi('access-points.index', 'gates'),
      'unknown_dependency',
      /No dependency "gates".*declared: access_points/,
    );
    await refused(
      callApi('access-points.purge', 'access_points'),
      'unknown_operation',
      /no operation "access-points.purge"/,
    );
    await refused(callApi('broken', 'access_points'), 'invalid_operation', /expected "<method>:<path>"/);
    await refused(
      callApi('access-points.show', 'access_points', {}),
      'missing_parameter',
      /path parameter "access_point"/,
    );
    expect(sent.length).toBe(before);
  });

  it("calls a seed-style manifest's dependencies: its permissions are device capabilities, and the appliance says what the token may not do", async () => {
    setActivePinia(createPinia());
    const store = usePluginStore();
    // The contract's manifest: top-level permissions name what the device may do; the dependency's are its own.
    store.applyManifest({
      settings: {},
      strings: { default: {} },
      assets: {},
      triggerState: {},
      dependencies: [accessPoints],
      permissions: ['camera'],
    });
    expect(store.hasPermission('camera')).toBe(true);
    expect(store.hasPermission('view_access_points')).toBe(false);
    store.setContext({ ...context(), token });
    const made = await store.callApi<{ id: number }>('access-points.store', 'access_points', {
      name: 'Seed gate',
      access_zone_id: zone,
    });
    expect(await store.callApi('access-points.show', 'access_points', { access_point: made.id })).toMatchObject({
      name: 'Seed gate',
    });
    expect((await store.callApi<{ id: number }[]>('access-points.index', 'access_points')).map((p) => p.id)).toContain(
      made.id,
    );
    // No permissions at all, and a token that may only read: the read is answered, the write is sent and refused by the appliance.
    store.applyManifest({
      settings: {},
      strings: { default: {} },
      assets: {},
      triggerState: {},
      dependencies: [accessPoints],
      permissions: [],
    });
    store.setContext({ ...context(), token: await gh.token(['access:read']) });
    expect(await store.callApi('access-points.show', 'access_points', { access_point: made.id })).toMatchObject({
      id: made.id,
    });
    const before = sent.length;
    const refused = await store
      .callApi('access-points.destroy', 'access_points', { access_point: made.id })
      .catch((e: unknown) => e as PluginApiError);
    expect(refused).toMatchObject({ code: 'api', status: 401 }); // a token made without access:write (docs/auth.md): the appliance's answer, as it gives it
    expect(sent.slice(before)).toEqual([`DELETE ${gh.url}/api/v1/projects/default/default/access-points/${made.id}`]);
    expect((await client(gh, token).get(`/api/v1/projects/default/default/access-points/${made.id}`)).status).toBe(200);
  });

  it("is the store's callApi: the manifest's dependencies and permissions as they are now, the context the host set", async () => {
    setActivePinia(createPinia());
    const store = usePluginStore();
    const manifest = {
      settings: {},
      strings: { default: {} },
      assets: {},
      triggerState: {},
      dependencies: [accessPoints],
      permissions: [],
    };
    store.applyManifest(manifest);
    await expect(store.callApi('access-points.index', 'access_points')).rejects.toThrow(
      /before the plugin has its context/,
    );
    store.setContext({ baseUrl: gh.url, teamSlug: 'default', projectSlug: 'default', token });
    const made = await store.callApi<{ id: number }>('access-points.store', 'access_points', {
      name: 'Via store',
      access_zone_id: zone,
    });
    expect(await store.callApi('access-points.show', 'access_points', { access_point: made.id })).toMatchObject({
      name: 'Via store',
    });
    // A reloaded manifest applies at once.
    store.applyManifest({ ...manifest, dependencies: [] });
    await expect(store.callApi('access-points.index', 'access_points')).rejects.toMatchObject({
      code: 'unknown_dependency',
    });
  });

  it("resolves to the whole answer with {envelope: true}: what it carries beside data (a page's meta), the records still filled from its data", async () => {
    setActivePinia(createPinia());
    const store = usePluginStore();
    store.applyManifest({
      settings: {},
      strings: { default: {} },
      assets: {},
      triggerState: {},
      dependencies: [accessPoints],
      permissions: [],
    });
    store.setContext({ baseUrl: gh.url, teamSlug: 'default', projectSlug: 'default', token });
    const made = await callApi<{ id: number }>('access-points.store', 'access_points', {
      name: 'Enveloped',
      access_zone_id: zone,
    });
    const page = await store.callApi<{ data: { id: number }[]; meta: { total: number; per_page: number } }>(
      'access-points.index',
      'access_points',
      { per_page: 1 },
      { envelope: true },
    );
    expect(page.meta).toMatchObject({ per_page: 1 });
    expect(page.meta.total).toBeGreaterThanOrEqual(1);
    expect(page.data).toHaveLength(1);
    expect(store.getRecords('access_points').map((r) => r.id)).toEqual([page.data[0]!.id]);
    expect(await callApi('access-points.show', 'access_points', { access_point: made.id }, { envelope: true })).toEqual(
      { data: expect.objectContaining({ id: made.id, name: 'Enveloped' }) },
    );
  });

  it('rejects an API error with its status, message and field errors', async () => {
    const invalid = await callApi('access-points.store', 'access_points', { name: '' }).catch(
      (e: unknown) => e as PluginApiError,
    );
    expect(invalid).toMatchObject({ code: 'api', status: 422 });
    expect((invalid as PluginApiError).errors.name?.[0]).toBeTruthy();
    expect((invalid as PluginApiError).message).toBeTruthy();
    const missing = await callApi('access-points.show', 'access_points', { access_point: 999_999 }).catch(
      (e: unknown) => e as PluginApiError,
    );
    expect(missing).toMatchObject({ code: 'api', status: 404 });
    token = await gh.token(['access:read']);
    const forbidden = await callApi('access-points.store', 'access_points', { name: 'x', access_zone_id: zone }).catch(
      (e: unknown) => e as PluginApiError,
    );
    expect(forbidden).toMatchObject({ code: 'api', status: 401 }); // a token made without access:write (docs/auth.md)
    token = 'not-a-token';
    expect(
      await callApi('access-points.index', 'access_points').catch((e: unknown) => (e as PluginApiError).status),
    ).toBe(401);
    token = await gh.token();
  });
  it('with a cookie session (no token) sends the XSRF-TOKEN cookie as X-XSRF-TOKEN on writes, so the appliance does not answer 419', async () => {
    // What a browser holds after GET /sanctum/csrf-cookie and POST /auth/session: the cookies by name.
    const cookies = new Map<string, string>();
    const keep = (res: Response) => {
      for (const line of res.headers.getSetCookie()) {
        const [pair] = line.split(';');
        const eq = pair!.indexOf('=');
        cookies.set(pair!.slice(0, eq), pair!.slice(eq + 1));
      }
    };
    const cookieHeader = () => [...cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    keep(await fetch(`${gh.url}/sanctum/csrf-cookie`));
    const xsrf = decodeURIComponent(cookies.get('XSRF-TOKEN')!);
    const login = await fetch(`${gh.url}/api/v1/auth/session`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json',
        cookie: cookieHeader(),
        'x-xsrf-token': xsrf,
      },
      body: JSON.stringify({ email: ADMIN_EMAIL, password: ADMIN_PASSWORD }),
    });
    expect(login.status).toBe(200);
    keep(login);

    const headersSent: Record<string, string>[] = [];
    const sessionContext = (): PluginContext => ({
      baseUrl: gh.url,
      teamSlug: 'default',
      projectSlug: 'default',
      token: null,
      // Node's fetch has no cookie jar: the browser's part (sending the cookies) is played here; the header is callApi's.
      fetch: (input, init) => {
        headersSent.push({ ...(init?.headers as Record<string, string>) });
        return fetch(input, {
          ...init,
          headers: { ...(init?.headers as Record<string, string>), cookie: cookieHeader() },
        });
      },
    });
    const sessionApi = createCallApi(sessionContext, () => ({ dependencies: [accessPoints] }));
    const g = globalThis as { document?: { cookie: string } };
    g.document = { cookie: `other=1; XSRF-TOKEN=${cookies.get('XSRF-TOKEN')}` };
    try {
      const made = await sessionApi<{ id: number }>('access-points.store', 'access_points', {
        name: 'Session gate',
        access_zone_id: zone,
      });
      expect(headersSent.at(-1)!['x-xsrf-token']).toBe(xsrf);
      expect(headersSent.at(-1)!.authorization).toBeUndefined();
      await sessionApi('access-points.show', 'access_points', { access_point: made.id });
      expect(headersSent.at(-1)!['x-xsrf-token']).toBeUndefined(); // a read needs none
      await sessionApi('access-points.destroy', 'access_points', { access_point: made.id });
      expect(headersSent.at(-1)!['x-xsrf-token']).toBe(xsrf);
      // Without the cookie nothing is invented: the appliance's 419 comes back as the API error it is.
      g.document = { cookie: 'other=1' };
      const refused = await sessionApi('access-points.store', 'access_points', {
        name: 'No CSRF',
        access_zone_id: zone,
      }).catch((e: unknown) => e as PluginApiError);
      expect(refused).toMatchObject({ code: 'api', status: 419, message: 'Token Mismatch' });
    } finally {
      delete g.document;
    }
  });

  it('reads the XSRF-TOKEN cookie URL-decoded, and nothing when it is absent', () => {
    expect(xsrfCookie('a=1; XSRF-TOKEN=ab%3Dcd; b=2')).toBe('ab=cd');
    expect(xsrfCookie('NOT-XSRF-TOKEN=x')).toBeNull();
    expect(xsrfCookie('')).toBeNull();
    expect(xsrfCookie(undefined)).toBeNull();
  });
});
