import Echo from 'laravel-echo';
import PusherServerLib from 'pusher';
import Pusher from 'pusher-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ADMIN_EMAIL,
  ADMIN_PASSWORD,
  client,
  createUser,
  startAppliance,
  type TestAppliance,
} from '../helpers/appliance.js';
import { signChannel } from '../helpers/pusher.js';

// Unmodified pusher-js and laravel-echo against the appliance (docs/realtime.md): the access channel
// carries the contract's AccessGranted / AccessDenied payloads, /broadcasting/auth decides who may
// listen, presence counts a user's tabs as one member. docs/realtime.md.

const A = '/api/v1/projects/default/default';
const ACCESS = 'dashboard.project.default.access';
/** What these tests use of a pusher-js client (its default export types as a namespace here). */
type PusherClient = {
  connection: { bind(event: string, callback: (...args: unknown[]) => void): void };
  channel(name: string): any;
};
type Opened = { echo: InstanceType<typeof Echo>; pusher: PusherClient };
const opened: Opened[] = [];

/** An Echo client configured from GET /api/v1/broadcasting/config, as a dashboard would be. */
async function openEcho(gh: TestAppliance, token: string, extra: Record<string, unknown> = {}): Promise<Opened> {
  const cfg = (await client(gh, token).get('/api/v1/broadcasting/config')).body.data;
  const echo = new Echo({
    broadcaster: 'pusher',
    key: cfg.key,
    cluster: 'local',
    wsHost: cfg.ws_host,
    wsPort: cfg.ws_port,
    wsPath: cfg.ws_path,
    forceTLS: cfg.force_tls,
    enabledTransports: ['ws'],
    disableStats: true,
    Pusher,
    authEndpoint: cfg.auth_endpoint,
    auth: { headers: { Authorization: `Bearer ${token}` } },
    ...extra,
  } as never);
  const pusher = (echo.connector as unknown as { pusher: PusherClient }).pusher;
  await new Promise((resolve) => pusher.connection.bind('connected', resolve));
  const handle = { echo, pusher };
  opened.push(handle);
  return handle;
}

const subscribed = (pusher: PusherClient, channel: string) =>
  new Promise<void>((resolve, reject) => {
    const c = pusher.channel(channel);
    if (c?.subscribed) return resolve();
    c.bind('pusher:subscription_succeeded', () => resolve());
    c.bind('pusher:subscription_error', (e: unknown) => reject(new Error(JSON.stringify(e))));
  });

describe('pusher-js and laravel-echo against the appliance', () => {
  let gh: TestAppliance;
  let admin: string;
  let gate: number;
  let zone: number;
  beforeAll(async () => {
    gh = await startAppliance();
    admin = await gh.token();
    const api = client(gh, admin);
    zone = (await api.post(`${A}/access-zones`, { name: 'Arena', capacity: 10 })).body.data.id;
    gate = (await api.post(`${A}/access-points`, { name: 'North gate', access_zone_id: zone })).body.data.id;
    await api.post(`${A}/attendees/import`, [
      { first_name: 'Ada', last_name: 'Lovelace', credential_value: 'TICKET-1' },
    ]);
  });
  afterAll(async () => {
    for (const { echo } of opened.splice(0)) echo.disconnect();
    await gh.destroy();
  });

  it('tells a client how to connect', async () => {
    const res = await client(gh, admin).get('/api/v1/broadcasting/config');
    const port = Number(new URL(gh.url).port);
    expect(res.body).toEqual({
      data: {
        key: gh.app.deps.realtime.credentials.key,
        ws_host: '127.0.0.1',
        ws_port: port,
        ws_path: '',
        force_tls: false,
        auth_endpoint: `${gh.url}/broadcasting/auth`,
      },
    });
    expect((await gh.request('GET', '/api/v1/broadcasting/config')).status).toBe(401);
  });

  it('delivers AccessGranted and AccessDenied with the spec payloads (AccessDenied with reason_detail beside them) after a scan', async () => {
    const { echo, pusher } = await openEcho(gh, admin);
    const granted = new Promise<unknown>((resolve) => echo.private(ACCESS).listen('.AccessGranted', resolve));
    const denied = new Promise<unknown>((resolve) => echo.private(ACCESS).listen('.AccessDenied', resolve));
    await subscribed(pusher, `private-${ACCESS}`);
    const api = client(gh, admin);
    const ok = await api.post(`${A}/access-points/${gate}/scan`, { credential_value: 'TICKET-1', scan_type: 'qr' });
    expect(ok.body.access_granted).toBe(true);
    const event = (await api.get(`${A}/access-events?per_page=1`)).body.data[0];
    expect(await granted).toEqual({
      attendee_id: event.attendee_id,
      attendee: { first_name: 'Ada', last_name: 'Lovelace' },
      access_point_id: gate,
      access_zone_id: zone,
      credential_id: event.credential_id,
      timestamp: event.scanned_at,
    });
    await api.post(`${A}/access-points/${gate}/scan`, { credential_value: 'FORGED-9', scan_type: 'qr' });
    const deniedEvent = (await api.get(`${A}/access-events?per_page=1`)).body.data[0];
    // The contract's four fields, and reason_detail beside them (ours; null for every denial but not_authorized's causes).
    expect(await denied).toEqual({
      credential_value: 'FORGED-9',
      access_point_id: gate,
      reason: 'invalid_credential',
      reason_detail: null,
      timestamp: deniedEvent.scanned_at,
    });
  });

  it('announces access point changes and zone occupancy on their documented channels', async () => {
    const { echo, pusher } = await openEcho(gh, admin);
    const updates: unknown[] = [];
    const deleted = new Promise<unknown>((resolve) =>
      echo
        .private('dashboard.project.default.access-points')
        .listen('.AccessPointUpdated', (e: unknown) => updates.push(e))
        .listen('.AccessPointDeleted', resolve),
    );
    const occupancy = new Promise<unknown>((resolve) =>
      echo.private('console.project.default.default.occupancy').listen('.ZoneOccupancyChanged', resolve),
    );
    await subscribed(pusher, 'private-dashboard.project.default.access-points');
    await subscribed(pusher, 'private-console.project.default.default.occupancy');
    const api = client(gh, admin);
    const side = (await api.post(`${A}/access-points`, { name: 'Side door', access_zone_id: zone })).body.data;
    await api.post(`${A}/readers`, { identifier: 'SIDE-1', type: 'qr', access_point_id: side.id });
    // The event carries the access point as REST shows it: its readers with gateway_id and status.
    const renamed = (await api.put(`${A}/access-points/${side.id}`, { name: 'Side door 2' })).body.data;
    expect(renamed.readers).toEqual([
      expect.objectContaining({
        identifier: 'SIDE-1',
        gateway_id: null,
        status: expect.objectContaining({ status: 'unknown', errors: 0 }),
      }),
    ]);
    await api.del(`${A}/access-points/${side.id}`);
    expect(await deleted).toEqual({ id: side.id });
    expect(updates.slice(0, 2)).toEqual([side, renamed]);
    // Ada is inside since the previous test; out and in again moves the count.
    const side2 = (await api.post(`${A}/access-points`, { name: 'Exit', access_zone_id: zone, direction: 'out' })).body
      .data;
    expect(
      (await api.post(`${A}/access-points/${side2.id}/scan`, { credential_value: 'TICKET-1', scan_type: 'qr' })).body
        .access_granted,
    ).toBe(true);
    expect(await occupancy).toEqual({
      access_zone_id: zone,
      capacity: 10,
      current_count: 0,
      available: 10,
      timestamp: expect.any(String),
    });
  });

  it('refuses the channel to a token without a read ability and to a user outside the project, and Echo reports it', async () => {
    const narrow = await gh.token(['attendees:read']);
    const outsider = await createUser(gh, admin, 'outsider@example.test');
    for (const token of [narrow, outsider.token]) {
      const { echo } = await openEcho(gh, token);
      const error = await new Promise<{ status: number }>((resolve) => echo.private(ACCESS).error(resolve));
      expect(error.status).toBe(403);
    }
    const res = await gh.request('POST', '/broadcasting/auth', {
      token: narrow,
      rawBody: 'socket_id=1.2&channel_name=private-dashboard.project.default.access',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(res.status).toBe(403);
    // access:read alone is enough
    const reader = await gh.token(['access:read']);
    const ok = await gh.request('POST', '/broadcasting/auth', {
      token: reader,
      rawBody: 'socket_id=1.2&channel_name=private-dashboard.project.default.access',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(ok.status).toBe(200);
    expect(ok.body.auth).toMatch(new RegExp(`^${gh.app.deps.realtime.credentials.key}:[0-9a-f]{64}$`));
  });

  it('refuses a forged auth string at subscription, and Echo reports it', async () => {
    const { echo } = await openEcho(gh, admin, {
      authorizer: () => ({
        authorize: (_socketId: string, callback: (e: null, a: { auth: string }) => void) =>
          callback(null, { auth: `${gh.app.deps.realtime.credentials.key}:${'0'.repeat(64)}` }),
      }),
    });
    const error = await new Promise<{ type: string; status: number }>((resolve) => echo.private(ACCESS).error(resolve));
    expect(error).toMatchObject({ type: 'AuthError', status: 401 });
  });

  it('answers bad auth requests clearly: 422 for a malformed socket id or channel, 401 without credentials', async () => {
    const token = admin;
    const form = (body: string) =>
      gh.request('POST', '/broadcasting/auth', {
        token,
        rawBody: body,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
    const bad = await form('socket_id=abc&channel_name=private-x y');
    expect(bad.status).toBe(422);
    expect(Object.keys(bad.body.errors).sort()).toEqual(['channel_name', 'socket_id']);
    expect((await form('socket_id=1.2&channel_name=private-not-ours')).status).toBe(403);
    expect(
      (
        await gh.request('POST', '/broadcasting/auth', {
          rawBody: 'socket_id=1.2&channel_name=x',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        })
      ).status,
    ).toBe(401);
  });

  it('authorizes with a cookie session when the CSRF header matches, 419 otherwise', async () => {
    const cookies = new Map<string, string>();
    const take = (h: Headers) =>
      h.getSetCookie().forEach((line) => {
        const [pair] = line.split(';');
        const i = pair!.indexOf('=');
        cookies.set(pair!.slice(0, i), pair!.slice(i + 1));
      });
    const jar = () => [...cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    take((await fetch(`${gh.url}/sanctum/csrf-cookie`)).headers);
    const xsrf = () => decodeURIComponent(cookies.get('XSRF-TOKEN')!);
    const login = await gh.request('POST', '/api/v1/auth/session', {
      body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD },
      headers: { cookie: jar(), 'x-xsrf-token': xsrf() },
    });
    expect(login.status).toBe(200);
    take(login.headers);
    const body = 'socket_id=1.2&channel_name=private-dashboard.project.default.access';
    const ok = await gh.request('POST', '/broadcasting/auth', {
      rawBody: body,
      headers: { cookie: jar(), 'x-xsrf-token': xsrf(), 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(ok.status).toBe(200);
    const noCsrf = await gh.request('POST', '/broadcasting/auth', {
      rawBody: body,
      headers: { cookie: jar(), 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(noCsrf.status).toBe(419);
  });

  it('counts two tabs of one user as one presence member: added on the first, removed after the last', async () => {
    const other = await createUser(gh, admin, 'colleague@example.test');
    expect((await client(gh, admin).post(`/api/v1/users/${other.id}/teams`, { team_slug: 'default' })).status).toBe(
      200,
    );
    const channel = 'console.project.default';
    const watcher = await openEcho(gh, other.token);
    const events: string[] = [];
    await new Promise<void>((resolve) =>
      watcher.echo
        .join(channel)
        .here(() => resolve())
        .joining((m: { name: string }) => events.push(`+${m.name}`))
        .leaving((m: { name: string }) => events.push(`-${m.name}`)),
    );
    const tab1 = await openEcho(gh, admin);
    const tab2 = await openEcho(gh, admin);
    const here = await new Promise<{ name: string }[]>((resolve) => tab1.echo.join(channel).here(resolve));
    expect(here.map((m) => m.name).sort()).toEqual(['Administrator', 'colleague@example.test']);
    await new Promise<void>((resolve) => tab2.echo.join(channel).here(() => resolve()));
    await expect.poll(() => events).toEqual(['+Administrator']); // once, for two tabs
    const stranger = await openEcho(gh, (await createUser(gh, admin, 'stranger@example.test')).token);
    const refused = await new Promise<{ status: number }>((resolve) => stranger.echo.join(channel).error(resolve));
    expect(refused.status).toBe(403);
    expect(gh.app.deps.realtime.server.registry.members(`presence-${channel}`)).toHaveLength(2);
    tab1.echo.disconnect();
    await new Promise((r) => setTimeout(r, 200));
    expect(events).toEqual(['+Administrator']); // one tab left: still a member
    tab2.echo.disconnect();
    await expect.poll(() => events).toEqual(['+Administrator', '-Administrator']);
    watcher.echo.disconnect();
    await expect.poll(() => gh.app.deps.realtime.server.registry.members(`presence-${channel}`).length).toBe(0);
  });

  it("gives pusher-js members their integer user ids back as numbers, the appliance's own and a Laravel app's", async () => {
    const channel = 'presence-console.project.default';
    const me = (await client(gh, admin).get('/api/v1/me')).body.data;
    // The appliance's own /broadcasting/auth gives the integer id.
    const ours = await openEcho(gh, admin);
    await new Promise<void>((resolve) => ours.echo.join('console.project.default').here(() => resolve()));
    const joined = new Promise<{ id: unknown; info: unknown }>((resolve) =>
      ours.pusher.channel(channel).bind('pusher:member_added', resolve),
    );
    expect(ours.pusher.channel(channel).members.me).toEqual({ id: me.id, info: { name: me.name } });
    expect(typeof ours.pusher.channel(channel).members.me.id).toBe('number');
    // A Laravel app's auth endpoint answers {user_id: 2}, an integer; the server keeps it one.
    const laravel = await openEcho(gh, admin, {
      authorizer: (c: { name: string }) => ({
        authorize: (socketId: string, callback: (e: null, a: { auth: string; channel_data: string }) => void) => {
          const channelData = JSON.stringify({ user_id: 2, user_info: { name: 'Laravel user' } });
          callback(null, { auth: signChannel(gh, socketId, c.name, channelData), channel_data: channelData });
        },
      }),
    });
    await new Promise<void>((resolve) => laravel.echo.join('console.project.default').here(() => resolve()));
    expect(await joined).toEqual({ id: 2, info: { name: 'Laravel user' } });
    expect(laravel.pusher.channel(channel).members.me.id).toBe(2);
    // The HTTP API lists the members with their ids' types too.
    const { appId, key, secret } = gh.app.deps.realtime.credentials;
    const lib = new PusherServerLib({
      appId,
      key,
      secret,
      host: '127.0.0.1',
      port: new URL(gh.url).port,
      useTLS: false,
    });
    const users = await (await lib.get({ path: `/channels/${channel}/users` })).json();
    expect(users).toEqual({ users: [{ id: me.id }, { id: 2 }] });
    ours.echo.disconnect();
    laravel.echo.disconnect();
    await expect.poll(() => gh.app.deps.realtime.server.registry.members(channel).length).toBe(0);
  });
});
