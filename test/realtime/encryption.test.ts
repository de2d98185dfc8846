import { randomBytes } from 'node:crypto';
import Echo from 'laravel-echo';
import PusherServerLib from 'pusher';
import Pusher from 'pusher-js';
import nacl from 'tweetnacl';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { rawClient, signChannel, wsUrl } from '../helpers/pusher.js';

// End-to-end encrypted channels (docs/realtime.md): /broadcasting/auth hands
// out the channel's key as the official server library derives it, the appliance seals its own
// events for private-encrypted- channels, and what a publisher sealed with that library goes
// through unchanged; real pusher-js and laravel-echo open both.

const MASTER_KEY = randomBytes(32).toString('base64');
const ENV = {
  GATEHOUSE_PUSHER_APP_ID: '777',
  GATEHOUSE_PUSHER_KEY: 'enc-key',
  GATEHOUSE_PUSHER_SECRET: 'enc-secret',
  GATEHOUSE_PUSHER_ENCRYPTION_MASTER_KEY: MASTER_KEY,
  GATEHOUSE_PUSHER_CLIENT_EVENTS: '1',
};
const A = '/api/v1/projects/default/default';
const ACCESS = 'private-encrypted-dashboard.project.default.access';

/** The parts of a pusher-js client these tests use (its default export types as a namespace). */
type PusherClient = {
  connection: { bind(event: string, callback: () => void): void; socket_id: string };
  subscribe(name: string): { bind(event: string, callback: (data: any) => void): void };
  disconnect(): void;
};
const opened: { disconnect(): void }[] = [];

async function openPusher(
  gh: TestAppliance,
  token: string,
  extra: Record<string, unknown> = {},
): Promise<PusherClient> {
  const port = Number(new URL(gh.url).port);
  const options = {
    cluster: 'local',
    wsHost: '127.0.0.1',
    wsPort: port,
    forceTLS: false,
    enabledTransports: ['ws'],
    disableStats: true,
    authEndpoint: `${gh.url}/broadcasting/auth`,
    auth: { headers: { Authorization: `Bearer ${token}` } },
    ...extra,
  };
  const pusher = new (Pusher as unknown as new (key: string, options: unknown) => PusherClient)('enc-key', options);
  opened.push(pusher);
  await new Promise<void>((resolve) => pusher.connection.bind('connected', () => resolve()));
  return pusher;
}

/** Resolves with the first event of that name on the channel; rejects on a subscription error. */
function first(
  pusher: PusherClient,
  channel: string,
  event: string,
): { subscribed: Promise<void>; received: Promise<any> } {
  const c = pusher.subscribe(channel);
  const subscribed = new Promise<void>((resolve, reject) => {
    c.bind('pusher:subscription_succeeded', () => resolve());
    c.bind('pusher:subscription_error', (e: unknown) => reject(new Error(JSON.stringify(e))));
  });
  return { subscribed, received: new Promise((resolve) => c.bind(event, resolve)) };
}

const lib = (gh: TestAppliance, masterKey?: string) =>
  new PusherServerLib({
    appId: '777',
    key: 'enc-key',
    secret: 'enc-secret',
    host: '127.0.0.1',
    port: new URL(gh.url).port,
    useTLS: false,
    ...(masterKey ? { encryptionMasterKeyBase64: masterKey } : {}),
  });

describe('end-to-end encrypted channels', () => {
  let gh: TestAppliance;
  let admin: string;
  let gate: number;
  beforeAll(async () => {
    gh = await startAppliance(ENV);
    admin = await gh.token();
    const api = client(gh, admin);
    const zone = (await api.post(`${A}/access-zones`, { name: 'Arena' })).body.data.id;
    gate = (await api.post(`${A}/access-points`, { name: 'North gate', access_zone_id: zone })).body.data.id;
    await api.post(`${A}/attendees/import`, [
      { first_name: 'Ada', last_name: 'Lovelace', credential_value: 'TICKET-1' },
    ]);
  });
  afterAll(async () => {
    for (const pusher of opened.splice(0)) pusher.disconnect();
    await gh.destroy();
  });

  it('answers the auth signature and the shared_secret exactly as the official server library does', async () => {
    for (const channel of [ACCESS, 'private-encrypted-console.project.default.default.devices']) {
      const res = await gh.request('POST', '/broadcasting/auth', {
        token: admin,
        rawBody: `socket_id=123.456&channel_name=${channel}`,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      expect(res.status).toBe(200);
      expect(res.body).toEqual(lib(gh, MASTER_KEY).authorizeChannel('123.456', channel));
      expect(Buffer.from(res.body.shared_secret, 'base64')).toHaveLength(32);
    }
    // A plain private channel gets no key, and the two names of one channel get different keys.
    const plain = await gh.request('POST', '/broadcasting/auth', {
      token: admin,
      body: { socket_id: '1.2', channel_name: 'private-dashboard.project.default.access' },
    });
    expect(plain.body).toEqual({ auth: expect.any(String) });
    const qualified = await gh.request('POST', '/broadcasting/auth', {
      token: admin,
      body: { socket_id: '1.2', channel_name: 'private-encrypted-dashboard.project.default.default.access' },
    });
    const bare = await gh.request('POST', '/broadcasting/auth', {
      token: admin,
      body: { socket_id: '1.2', channel_name: ACCESS },
    });
    expect(qualified.body.shared_secret).not.toBe(bare.body.shared_secret);
  });

  it("seals the appliance's own events for the encrypted channel, which pusher-js opens", async () => {
    const pusher = await openPusher(gh, admin);
    const { subscribed, received } = first(pusher, ACCESS, 'AccessGranted');
    await subscribed;
    // A raw subscriber sees only ciphertext on the wire.
    const raw = await rawClient(wsUrl(gh));
    expect((await raw.subscribe(ACCESS, signChannel(gh, raw.socketId, ACCESS))).event).toBe(
      'pusher_internal:subscription_succeeded',
    );
    const api = client(gh, admin);
    expect(
      (await api.post(`${A}/access-points/${gate}/scan`, { credential_value: 'TICKET-1', scan_type: 'qr' })).body
        .access_granted,
    ).toBe(true);
    const event = (await api.get(`${A}/access-events?per_page=1`)).body.data[0];
    expect(await received).toEqual({
      attendee_id: event.attendee_id,
      attendee: { first_name: 'Ada', last_name: 'Lovelace' },
      access_point_id: gate,
      access_zone_id: event.access_zone_id,
      credential_id: event.credential_id,
      timestamp: event.scanned_at,
    });
    const wire = await raw.next('AccessGranted');
    expect(Object.keys(wire.data).sort()).toEqual(['ciphertext', 'nonce']);
    expect(JSON.stringify(wire)).not.toContain('Lovelace');
    raw.ws.close();
  });

  it('relays unchanged an event the official library sealed with encryptionMasterKeyBase64, and pusher-js opens it', async () => {
    const pusher = await openPusher(gh, admin);
    const channel = 'private-encrypted-console.project.default.occupancy';
    const { subscribed, received } = first(pusher, channel, 'Notice');
    await subscribed;
    const raw = await rawClient(wsUrl(gh));
    await raw.subscribe(channel, signChannel(gh, raw.socketId, channel));
    expect((await lib(gh, MASTER_KEY).trigger(channel, 'Notice', { text: 'Doors open' })).status).toBe(200);
    expect(await received).toEqual({ text: 'Doors open' });
    // What the raw subscriber got opens with the key the auth endpoint handed out: relayed as sealed.
    const { data } = await raw.next('Notice');
    const key = Buffer.from(lib(gh, MASTER_KEY).authorizeChannel(raw.socketId, channel).shared_secret!, 'base64');
    const opened = nacl.secretbox.open(Buffer.from(data.ciphertext, 'base64'), Buffer.from(data.nonce, 'base64'), key);
    expect(JSON.parse(Buffer.from(opened!).toString())).toEqual({ text: 'Doors open' });
    raw.ws.close();
  });

  it("delivers to laravel-echo's encryptedPrivate() channel", async () => {
    const echo = new Echo({
      broadcaster: 'pusher',
      key: 'enc-key',
      cluster: 'local',
      wsHost: '127.0.0.1',
      wsPort: Number(new URL(gh.url).port),
      forceTLS: false,
      enabledTransports: ['ws'],
      disableStats: true,
      Pusher,
      authEndpoint: `${gh.url}/broadcasting/auth`,
      auth: { headers: { Authorization: `Bearer ${admin}` } },
    } as never);
    opened.push(echo);
    const channel = echo.encryptedPrivate('dashboard.project.default.access');
    const denied = new Promise<unknown>((resolve) => channel.listen('.AccessDenied', resolve));
    await new Promise<void>((resolve, reject) =>
      channel.subscribed(() => resolve()).error((e: unknown) => reject(new Error(JSON.stringify(e)))),
    );
    await client(gh, admin).post(`${A}/access-points/${gate}/scan`, { credential_value: 'FORGED-9', scan_type: 'qr' });
    expect(await denied).toMatchObject({
      credential_value: 'FORGED-9',
      access_point_id: gate,
      reason: 'invalid_credential',
    });
  });

  it('refuses a forged auth with 401 and a user who may not read the project with 403, as pusher-js reports them', async () => {
    const forged = await openPusher(gh, admin, {
      authorizer: () => ({
        authorize: (_: string, callback: (e: null, a: unknown) => void) =>
          callback(null, { auth: `enc-key:${'0'.repeat(64)}`, shared_secret: randomBytes(32).toString('base64') }),
      }),
    });
    const refused = first(forged, ACCESS, 'AccessGranted').subscribed.catch((e: Error) => JSON.parse(e.message));
    expect(await refused).toMatchObject({ type: 'AuthError', status: 401 });
    const narrow = await openPusher(gh, await gh.token(['attendees:read']));
    const forbidden = first(narrow, ACCESS, 'AccessGranted').subscribed.catch((e: Error) => JSON.parse(e.message));
    expect(await forbidden).toMatchObject({ type: 'AuthError', status: 403 });
  });

  it('refuses client events on an encrypted channel, even with client events on', async () => {
    const a = await rawClient(wsUrl(gh));
    const b = await rawClient(wsUrl(gh));
    for (const c of [a, b]) await c.subscribe(ACCESS, signChannel(gh, c.socketId, ACCESS));
    a.send('client-typing', { text: 'in clear' }, ACCESS);
    expect((await a.next('pusher:error')).data.message).toBe('Client events are not supported on encrypted channels');
    // On a plain private channel the same event goes through (client events are on here).
    const plain = 'private-dashboard.project.default.access';
    for (const c of [a, b]) await c.subscribe(plain, signChannel(gh, c.socketId, plain));
    a.send('client-typing', { text: 'hi' }, plain);
    expect((await b.next('client-typing')).channel).toBe(plain);
    expect(b.frames.some((f) => f.channel === ACCESS && f.event === 'client-typing')).toBe(false);
    a.ws.close();
    b.ws.close();
  });

  it('answers 400 on the HTTP API for data not sealed and for an encrypted event to several channels', async () => {
    const post = (path: string, body: unknown) =>
      lib(gh)
        .post({ path, body: body as never })
        .catch((e: { status: number; body: string }) => ({ status: e.status, json: JSON.parse(e.body) }));
    const plaintext = (await post('/events', {
      name: 'Leak',
      channel: ACCESS,
      data: JSON.stringify({ attendee: 'Ada' }),
    })) as { status: number; json: any };
    expect(plaintext.status).toBe(400);
    expect(plaintext.json).toMatchObject({
      error: 'validation_failed',
      errors: { data: [expect.stringContaining('{nonce, ciphertext}')] },
    });
    const sealed = JSON.stringify({
      nonce: randomBytes(24).toString('base64'),
      ciphertext: randomBytes(40).toString('base64'),
    });
    const several = (await post('/events', {
      name: 'X',
      channels: [ACCESS, 'private-encrypted-dashboard.project.default.default.access'],
      data: sealed,
    })) as { status: number; json: any };
    expect(several.status).toBe(400);
    expect(several.json.errors).toHaveProperty('channels');
    const shortNonce = (await post('/events', {
      name: 'X',
      channel: ACCESS,
      data: JSON.stringify({ nonce: 'AAAA', ciphertext: randomBytes(40).toString('base64') }),
    })) as { status: number };
    expect(shortNonce.status).toBe(400);
    const batch = (await post('/batch_events', {
      batch: [
        { name: 'Ok', channel: 'news', data: '{}' },
        { name: 'Leak', channel: ACCESS, data: '{"a":1}' },
      ],
    })) as { status: number; json: any };
    expect(batch.status).toBe(400);
    expect(batch.json.errors).toHaveProperty(['batch.1.data']);
    // Sealed data for one encrypted channel is accepted (whoever holds the key can open it).
    expect(
      (await lib(gh).post({ path: '/events', body: { name: 'X', channel: ACCESS, data: sealed } as never })).status,
    ).toBe(200);
  });
});
