import PusherServerLib from 'pusher';
import { createPinia, setActivePinia } from 'pinia';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { PluginEvent } from '../../src/plugins/toolkit/events.js';
import { type PluginStore, usePluginStore } from '../../src/plugins/toolkit/store.js';
import type { PluginDependency, PluginManifest } from '../../src/plugins/toolkit/types.js';
import { client, startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { accessPointsDependency } from './fixtures.js';

// Socket events for plugins (docs/plugins.md "Socket events") against a real
// appliance with real pusher-js (its node build): the dependency's events are subscribed, handed
// to the plugin under the names the manifest gives them and reflected in the store's records;
// what the manifest does not list is not handed over; refusals show in `connection`, never thrown.

const A = '/api/v1/projects/default/default';
const CHANNEL = 'private-dashboard.project.default.default.access-points';
// Device capabilities (spec: "Manifest top level"): nothing of the dependencies' permissions.
const PERMISSIONS: string[] = [];

type AccessPoint = { id: number; name: string; version: number };

function manifest(
  dependencies: PluginDependency[] = [accessPointsDependency],
  permissions = PERMISSIONS,
): PluginManifest {
  return { settings: {}, strings: { default: {} }, assets: {}, triggerState: {}, dependencies, permissions };
}

/** Every event a store hands over, by the name the plugin receives it under. */
function recorder(store: PluginStore, ...names: string[]) {
  const seen: PluginEvent[] = [];
  for (const name of names) store.onEvent(name, (_data, event) => seen.push(event));
  return seen;
}

describe('socket events for plugins', () => {
  let gh: TestAppliance;
  let admin: string;
  let zone: number;
  let api: ReturnType<typeof client>;
  let lib: PusherServerLib;
  const stores: PluginStore[] = [];

  const plugin = async (
    options: { token?: string; dependencies?: PluginDependency[]; permissions?: string[]; connect?: boolean } = {},
  ) => {
    setActivePinia(createPinia());
    const store = usePluginStore();
    store.applyManifest(manifest(options.dependencies, options.permissions));
    store.setContext({ baseUrl: gh.url, teamSlug: 'default', projectSlug: 'default', token: options.token ?? admin });
    stores.push(store);
    if (options.connect !== false) await store.connectEvents();
    return store;
  };
  const subscribed = (store: PluginStore, channel = CHANNEL) =>
    vi.waitFor(() => expect(store.connection.channels[channel]?.state).toBe('subscribed'), { timeout: 5000 });
  const accessPoint = async (name: string): Promise<AccessPoint> =>
    (await api.post(`${A}/access-points`, { name, access_zone_id: zone })).body.data;

  beforeAll(async () => {
    gh = await startAppliance();
    admin = await gh.token();
    api = client(gh, admin);
    zone = (await api.post(`${A}/access-zones`, { name: 'Hall' })).body.data.id;
    const { appId, key, secret } = gh.app.deps.realtime.credentials;
    lib = new PusherServerLib({ appId, key, secret, host: '127.0.0.1', port: new URL(gh.url).port, useTLS: false });
  });
  afterEach(() => {
    for (const store of stores.splice(0)) store.disconnectEvents();
  });
  afterAll(() => gh.destroy());

  it("connects with the access-point dependency and subscribes its events' channel", async () => {
    const store = await plugin();
    await subscribed(store);
    expect(store.connection).toMatchObject({ state: 'connected', error: null, skipped: [] });
    expect(store.connection.socketId).toMatch(/^\d+\.\d+$/);
    expect(store.connection.channels).toEqual({
      [CHANNEL]: {
        state: 'subscribed',
        status: null,
        message: null,
        events: ['AccessPointUpdated', 'AccessPointDeleted'],
      },
    });
  });

  it("hands an access point updated over REST to the plugin's handler, with the store's record already updated", async () => {
    const gate = await accessPoint('North gate');
    const store = await plugin();
    await store.callApi('access-points.index', 'access_points', { per_page: 100 });
    expect(store.getRecord('access_points', gate.id)).toMatchObject({ name: 'North gate' });
    const seen: { name: string; recordName: unknown }[] = [];
    store.onEvent<AccessPoint>('AccessPointUpdated', (data) =>
      seen.push({ name: data.name, recordName: store.getRecord('access_points', data.id)?.name }),
    );
    await subscribed(store);

    expect((await api.put(`${A}/access-points/${gate.id}`, { name: 'North gate (east)' })).status).toBe(200);
    await vi.waitFor(() => expect(seen).toEqual([{ name: 'North gate (east)', recordName: 'North gate (east)' }]));
    expect(store.lastEvents.AccessPointUpdated).toMatchObject({
      name: 'AccessPointUpdated',
      event: 'AccessPointUpdated',
      dependencies: ['access_points'],
      channel: CHANNEL,
    });
    expect(store.lastEvent?.data).toMatchObject({ id: gate.id, name: 'North gate (east)' });

    // A created access point is announced as updated: it joins the records.
    const made = await accessPoint('South gate');
    await vi.waitFor(() => expect(store.getRecord('access_points', made.id)).toMatchObject({ name: 'South gate' }));
  });

  it('removes a deleted access point from the records', async () => {
    const gate = await accessPoint('Staff door');
    const store = await plugin();
    await store.callApi('access-points.show', 'access_points', { access_point: gate.id });
    expect(store.getRecords('access_points').map((r) => r.id)).toContain(gate.id);
    const deleted = recorder(store, 'AccessPointDeleted');
    await subscribed(store);

    expect((await api.del(`${A}/access-points/${gate.id}`)).status).toBe(204);
    await vi.waitFor(() => expect(deleted.map((e) => e.data)).toEqual([{ id: gate.id }]));
    expect(store.getRecord('access_points', gate.id)).toBeUndefined();
  });

  it('does not let a GET answered late undo a newer event (version)', async () => {
    const gate = await accessPoint('Side gate');
    const store = await plugin();
    // The plugin's fetch answers the show operation with the copy from before the update, as a GET that started before it would.
    let stale: AccessPoint | null = null;
    store.setContext({
      ...store.context!,
      fetch: (input, init) =>
        stale && String(input).endsWith(`/access-points/${gate.id}`)
          ? Promise.resolve(Response.json({ data: stale }))
          : fetch(input, init),
    });
    stale = await store.callApi<AccessPoint>('access-points.show', 'access_points', { access_point: gate.id });
    await subscribed(store);
    await api.put(`${A}/access-points/${gate.id}`, { name: 'Side gate 2' });
    await vi.waitFor(() => expect(store.getRecord('access_points', gate.id)?.name).toBe('Side gate 2'));
    expect(await store.callApi('access-points.show', 'access_points', { access_point: gate.id })).toMatchObject({
      name: 'Side gate',
    });
    expect(store.getRecord('access_points', gate.id)?.name).toBe('Side gate 2');
  });

  it('reconnects with a new context: its token authorizes the channels', async () => {
    const store = await plugin();
    await subscribed(store);
    store.setContext({ ...store.context!, token: await gh.token(['attendees:read']) });
    await vi.waitFor(
      () => expect(store.connection.channels[CHANNEL]).toMatchObject({ state: 'refused', status: 403 }),
      { timeout: 5000 },
    );
  });

  it('hands over only the events the manifest lists, under the names it gives them', async () => {
    const gate = await accessPoint('Turnstile 1');
    const doomed = await accessPoint('Turnstile 2');
    const onlyUpdates: PluginDependency = { ...accessPointsDependency, events: { AccessPointUpdated: 'gateChanged' } };
    const store = await plugin({ dependencies: [onlyUpdates] });
    await store.callApi('access-points.index', 'access_points', { per_page: 100 });
    const seen = recorder(store, 'gateChanged', 'AccessPointUpdated', 'AccessPointDeleted', 'Notice');
    await subscribed(store);

    // On the subscribed channel, neither an event of the appliance's nor one published through the HTTP API is listed.
    expect((await api.del(`${A}/access-points/${doomed.id}`)).status).toBe(204);
    expect((await lib.trigger(CHANNEL, 'Notice', { text: 'Doors open' })).status).toBe(200);
    // A listed event after them: a channel's events arrive in order, so once it is here the others would be too.
    await api.put(`${A}/access-points/${gate.id}`, { name: 'Turnstile 1 (in)' });
    await vi.waitFor(() => expect(seen).toHaveLength(1));
    expect(seen[0]).toMatchObject({ name: 'gateChanged', event: 'AccessPointUpdated', data: { id: gate.id } });
    expect(Object.keys(store.lastEvents)).toEqual(['gateChanged']);
    // Only listed events change the records: the deletion was not heard.
    expect(store.getRecord('access_points', doomed.id)).toBeDefined();
  });

  it("subscribes a channel once for every dependency's events, and hands one event to each name", async () => {
    const gate = await accessPoint('Gate 7');
    const second: PluginDependency = {
      ...accessPointsDependency,
      identifier: 'doors',
      events: { AccessPointUpdated: 'doorChanged' },
    };
    const third: PluginDependency = {
      ...accessPointsDependency,
      identifier: 'gates',
      events: { AccessPointUpdated: 'AccessPointUpdated' },
    };
    const store = await plugin({ dependencies: [accessPointsDependency, second, third] });
    const seen = recorder(store, 'AccessPointUpdated', 'doorChanged');
    await subscribed(store);
    expect(Object.keys(store.connection.channels)).toEqual([CHANNEL]);
    const info = await (await lib.get({ path: `/channels/${CHANNEL}`, params: { info: 'subscription_count' } })).json();
    expect(info).toMatchObject({ occupied: true, subscription_count: 1 });

    await api.put(`${A}/access-points/${gate.id}`, { name: 'Gate 7b' });
    await vi.waitFor(() => expect(seen).toHaveLength(2));
    expect(seen.map((e) => [e.name, e.dependencies])).toEqual([
      ['AccessPointUpdated', ['access_points', 'gates']],
      ['doorChanged', ['doors']],
    ]);
    for (const identifier of ['access_points', 'doors', 'gates'])
      expect(store.getRecord(identifier, gate.id)).toMatchObject({ name: 'Gate 7b' });
  });

  it('follows a reloaded manifest: leaves a channel no dependency needs any more and joins it again', async () => {
    const store = await plugin();
    await subscribed(store);
    store.applyManifest(manifest([{ ...accessPointsDependency, events: {} }]));
    expect(store.connection.channels).toEqual({});
    await vi.waitFor(async () =>
      expect(
        await (await lib.get({ path: `/channels/${CHANNEL}`, params: { info: 'subscription_count' } })).json(),
      ).toMatchObject({ occupied: false }),
    );
    store.applyManifest(manifest());
    await subscribed(store);
  });

  it("subscribes a seed-style manifest's dependency events: its permissions are device capabilities, the token's abilities decide", async () => {
    const store = await plugin({ permissions: ['camera'] });
    const seen = recorder(store, 'AccessPointUpdated');
    await subscribed(store);
    expect(store.connection.skipped).toEqual([]);
    const gate = await accessPoint('Seed gate');
    await vi.waitFor(() => expect(seen.map((e) => (e.data as AccessPoint).id)).toContain(gate.id));
  });

  it('shows a subscription the token may not have as refused, with the reason, and throws nothing', async () => {
    const store = await plugin({ token: await gh.token(['attendees:read']) });
    await vi.waitFor(() => expect(store.connection.channels[CHANNEL]?.state).toBe('refused'), { timeout: 5000 });
    expect(store.connection.state).toBe('connected');
    expect(store.connection.channels[CHANNEL]).toMatchObject({
      status: 403,
      message: expect.stringContaining('needs *, read or access:read'),
    });
    expect(store.connection.error).toMatchObject({ kind: 'subscription', status: 403, channel: CHANNEL });
  });

  it('shows a token the appliance does not accept as a failed connection, and throws nothing', async () => {
    const store = await plugin({ token: 'not-a-token' });
    expect(store.connection).toMatchObject({ state: 'failed', socketId: null, error: { kind: 'config', status: 401 } });
    const noContext = (setActivePinia(createPinia()), usePluginStore());
    await noContext.connectEvents();
    expect(noContext.connection).toMatchObject({
      state: 'failed',
      error: { kind: 'config', message: expect.stringContaining('setContext') },
    });
  });

  it("shows the end of the token's access (revoked: close 4009) in the connection", async () => {
    const token = await gh.token();
    const store = await plugin({ token });
    await subscribed(store);
    expect((await gh.request('DELETE', '/api/v1/auth/token', { token })).status).toBe(200);
    await vi.waitFor(() =>
      expect(store.connection).toMatchObject({ state: 'disconnected', error: { kind: 'connection', status: 4009 } }),
    );
    expect(store.connection.channels[CHANNEL]?.state).toBe('pending');
  });

  it('stops handing over events once disconnected', async () => {
    const gate = await accessPoint('Gate 9');
    const store = await plugin();
    const control = await plugin();
    const seen = recorder(store, 'AccessPointUpdated');
    const heard = recorder(control, 'AccessPointUpdated');
    await subscribed(store);
    await subscribed(control);

    store.disconnectEvents();
    expect(store.connection).toMatchObject({ state: 'disconnected', socketId: null, channels: {} });
    // Its socket is closed: the channel keeps the control's subscription only.
    await vi.waitFor(async () =>
      expect(
        await (await lib.get({ path: `/channels/${CHANNEL}`, params: { info: 'subscription_count' } })).json(),
      ).toMatchObject({ subscription_count: 1 }),
    );
    await api.put(`${A}/access-points/${gate.id}`, { name: 'Gate 9b' });
    await vi.waitFor(() => expect(heard).toHaveLength(1));
    expect(seen).toEqual([]);
    expect(store.lastEvent).toBeNull();
  });

  it('keeps handing an event to the other handlers when one throws, and not to one unsubscribed', async () => {
    const gate = await accessPoint('Gate 10');
    const store = await plugin();
    const error = vi.spyOn(console, 'error').mockImplementation(() => {});
    store.onEvent('AccessPointUpdated', () => {
      throw new Error('plugin bug');
    });
    const seen = recorder(store, 'AccessPointUpdated');
    const removed = vi.fn();
    const unsubscribe = store.onEvent('AccessPointUpdated', removed);
    unsubscribe();
    await subscribed(store);
    await api.put(`${A}/access-points/${gate.id}`, { name: 'Gate 10b' });
    await vi.waitFor(() => expect(seen).toHaveLength(1));
    expect(error).toHaveBeenCalledWith(expect.stringContaining('"AccessPointUpdated" failed'), expect.any(Error));
    expect(removed).not.toHaveBeenCalled();
    error.mockRestore();
  });
});

describe('socket events on the page origin, with a namespace', () => {
  // baseUrl '' (behind the dev server's proxy): the WebSocket goes to the page's host and port,
  // not to ws_host/ws_port, which here name an address nothing listens on (http.publicUrl).
  let gh: TestAppliance;
  let store: PluginStore;
  beforeAll(async () => {
    gh = await startAppliance({
      GATEHOUSE_HTTP_PUBLIC_URL: 'http://gatehouse.invalid:9',
      GATEHOUSE_PUSHER_EVENT_NAMESPACE: 'App\\Events',
    });
  });
  afterAll(async () => {
    store?.disconnectEvents();
    await gh.destroy();
  });

  it('connects to the page, and hands over namespaced events under the names the manifest gives them', async () => {
    const admin = await gh.token();
    const api = client(gh, admin);
    const zone = (await api.post(`${A}/access-zones`, { name: 'Hall' })).body.data.id;
    const config = (await api.get('/api/v1/broadcasting/config')).body.data;
    expect(config).toMatchObject({ ws_host: 'gatehouse.invalid', ws_port: 9 });

    setActivePinia(createPinia());
    store = usePluginStore();
    store.applyManifest(manifest());
    const page = new URL(gh.url);
    // The page's fetch: paths resolve against the page's origin, as in a browser.
    const pageFetch: typeof fetch = (input, init) => fetch(new URL(String(input), page), init);
    store.setContext({ baseUrl: '', teamSlug: 'default', projectSlug: 'default', token: admin, fetch: pageFetch });
    const seen = recorder(store, 'AccessPointUpdated');
    await store.connectEvents({ page: { protocol: page.protocol, hostname: page.hostname, port: page.port } });
    await vi.waitFor(() => expect(store.connection.channels[CHANNEL]?.state).toBe('subscribed'), { timeout: 5000 });

    const gate = (await api.post(`${A}/access-points`, { name: 'Proxy gate', access_zone_id: zone })).body.data;
    await vi.waitFor(() => expect(seen).toHaveLength(1));
    expect(seen[0]).toMatchObject({ name: 'AccessPointUpdated', event: 'AccessPointUpdated' });
    expect(store.getRecord('access_points', gate.id)).toMatchObject({ name: 'Proxy gate' });
  });
});
