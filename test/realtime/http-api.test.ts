import { createHash, createHmac } from 'node:crypto';
import Echo from 'laravel-echo';
import PusherServerLib from 'pusher';
import Pusher from 'pusher-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { rawClient, signChannel, wsUrl } from '../helpers/pusher.js';

// The signed Pusher HTTP API, driven by the official server library (pusher-http-node), the
// app credentials, the event namespace option and the WebSocket metrics (docs/realtime.md).

const ENV = {
  GATEHOUSE_PUSHER_APP_ID: '4242',
  GATEHOUSE_PUSHER_KEY: 'local-key',
  GATEHOUSE_PUSHER_SECRET: 'local-secret',
  GATEHOUSE_PUSHER_EVENT_NAMESPACE: 'App\\Events',
};

/** A request signed by hand, for what the library will not send (stale, tampered, invalid). */
function signedPost(gh: TestAppliance, body: string, timestamp = Math.floor(Date.now() / 1000), md5Of = body) {
  const params = `auth_key=local-key&auth_timestamp=${timestamp}&auth_version=1.0&body_md5=${createHash('md5').update(md5Of).digest('hex')}`;
  const signature = createHmac('sha256', 'local-secret').update(`POST\n/apps/4242/events\n${params}`).digest('hex');
  return gh.request('POST', `/apps/4242/events?${params}&auth_signature=${signature}`, {
    rawBody: body,
    headers: { 'content-type': 'application/json' },
  });
}

describe('the Pusher HTTP API and app credentials', () => {
  let gh: TestAppliance;
  let lib: PusherServerLib;
  beforeAll(async () => {
    gh = await startAppliance(ENV);
    lib = new PusherServerLib({
      appId: '4242',
      key: 'local-key',
      secret: 'local-secret',
      host: '127.0.0.1',
      port: new URL(gh.url).port,
      useTLS: false,
    });
  });
  afterAll(() => gh.destroy());

  it('takes app id, key and secret from the environment', () => {
    expect(gh.app.deps.realtime.credentials).toMatchObject({ appId: '4242', key: 'local-key', secret: 'local-secret' });
  });

  it('publishes events signed by the official library to subscribers, excluding the socket_id given', async () => {
    const a = await rawClient(wsUrl(gh));
    const b = await rawClient(wsUrl(gh));
    const channel = 'private-dashboard.project.default.access';
    await a.subscribe(channel, signChannel(gh, a.socketId, channel));
    await b.subscribe(channel, signChannel(gh, b.socketId, channel));
    const res = await lib.trigger(channel, 'Custom', { hello: 'world' });
    expect(res.status).toBe(200);
    expect(await a.next('Custom')).toEqual({ event: 'Custom', channel, data: { hello: 'world' } });
    expect(await b.next('Custom')).toMatchObject({ data: { hello: 'world' } });
    await lib.trigger(channel, 'NotForA', 'plain', { socket_id: a.socketId });
    expect((await b.next('NotForA')).data).toBe('plain');
    await lib.triggerBatch([
      { channel, name: 'One', data: '1' },
      { channel: 'news', name: 'Two', data: '2' },
    ]);
    expect((await a.next('One')).data).toBe(1);
    expect(a.frames.some((f) => f.event === 'NotForA')).toBe(false);
    const channels = await (await lib.get({ path: '/channels', params: { info: 'subscription_count' } })).json();
    expect(channels).toEqual({ channels: { [channel]: { subscription_count: 2 } } });
    const one = await (await lib.get({ path: `/channels/${channel}`, params: { info: 'subscription_count' } })).json();
    expect(one).toEqual({ occupied: true, subscription_count: 2 });
    a.ws.close();
    b.ws.close();
  });

  it('frames broadcasts of every length class intact, in order, interleaved with direct replies', async () => {
    // Broadcast frames are built once and joined per event-loop turn (channels.ts, fan-out.ts): 7-bit, 16-bit and 64-bit lengths.
    const c = await rawClient(wsUrl(gh));
    await c.subscribe('news');
    const order: string[] = [];
    c.ws.on('message', (raw) => order.push((JSON.parse(raw.toString()) as { event: string }).event));
    const sizes = [0, 100, 125, 126, 1000, 65_535 - 40, 65_536, 90_000];
    await lib.triggerBatch(sizes.map((n, i) => ({ channel: 'news', name: `Size${i}`, data: { pad: 'x'.repeat(n) } })));
    c.send('pusher:ping', {});
    for (const [i, n] of sizes.entries())
      expect(((await c.next(`Size${i}`)).data as { pad: string }).pad).toHaveLength(n);
    await c.next('pusher:pong');
    expect(order).toEqual([...sizes.map((_, i) => `Size${i}`), 'pusher:pong']);
    c.ws.close();
  });

  it('refuses a wrong signature, a stale timestamp, a tampered body and another app id', async () => {
    const wrong = new PusherServerLib({
      appId: '4242',
      key: 'local-key',
      secret: 'not-the-secret',
      host: '127.0.0.1',
      port: new URL(gh.url).port,
      useTLS: false,
    });
    const err = (await wrong.trigger('news', 'X', {}).catch((e: unknown) => e)) as { status: number; body: string };
    expect(err.status).toBe(401);
    expect(JSON.parse(err.body)).toEqual({ error: 'invalid_signature', message: 'Invalid signature' });
    const otherApp = new PusherServerLib({
      appId: '1',
      key: 'local-key',
      secret: 'local-secret',
      host: '127.0.0.1',
      port: new URL(gh.url).port,
      useTLS: false,
    });
    expect((await otherApp.trigger('news', 'X', {}).catch((e: { status: number }) => e)).status).toBe(404);
    // By hand: an old timestamp, then a body that is not the one signed.
    const send = (body: string, timestamp: number, md5Of = body) => signedPost(gh, body, timestamp, md5Of);
    const body = JSON.stringify({ name: 'X', channel: 'news', data: '{}' });
    expect((await send(body, Math.floor(Date.now() / 1000))).status).toBe(200);
    const stale = await send(body, Math.floor(Date.now() / 1000) - 601);
    expect(stale.status).toBe(401);
    expect(stale.body.message).toMatch(/auth_timestamp/);
    const tampered = await send(body, Math.floor(Date.now() / 1000), '{"other":1}');
    expect(tampered.body).toEqual({ error: 'invalid_signature', message: 'body_md5 does not match the body' });
    expect(
      (await gh.request('POST', '/apps/4242/events', { body: { name: 'X', channel: 'news', data: '' } })).status,
    ).toBe(401);
  });

  it('validates what is published: 400 for a bad body, 413 for data over the limit', async () => {
    // The library refuses a bad channel name itself, so this one is signed by hand.
    const bad = await signedPost(gh, JSON.stringify({ name: 'X', channels: ['bad channel name'], data: '{}' }));
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ error: 'validation_failed', errors: { 'channels.0': [expect.any(String)] } });
    const big = await lib.trigger('news', 'X', 'x'.repeat(102_401)).catch((e: { status: number }) => e);
    expect(big.status).toBe(413);
  });

  it("publishes domain events under the configured namespace, which Echo's .listen('AccessGranted') expects", async () => {
    const token = await gh.token();
    const api = client(gh, token);
    const A = '/api/v1/projects/default/default';
    const zone = (await api.post(`${A}/access-zones`, { name: 'Hall' })).body.data.id;
    const gate = (await api.post(`${A}/access-points`, { name: 'Hall door', access_zone_id: zone })).body.data.id;
    const cfg = (await api.get('/api/v1/broadcasting/config')).body.data;
    const echo = new Echo({
      broadcaster: 'pusher',
      key: cfg.key,
      cluster: 'local',
      wsHost: cfg.ws_host,
      wsPort: cfg.ws_port,
      forceTLS: false,
      enabledTransports: ['ws'],
      disableStats: true,
      Pusher,
      authEndpoint: cfg.auth_endpoint,
      auth: { headers: { Authorization: `Bearer ${token}` } },
    } as never);
    const denied = new Promise<{ reason: string }>((resolve) =>
      echo.private('dashboard.project.default.access').listen('AccessDenied', resolve),
    );
    const pusher = (
      echo.connector as unknown as { pusher: { connection: { bind(event: string, callback: () => void): void } } }
    ).pusher;
    await new Promise<void>((resolve) => pusher.connection.bind('connected', () => resolve()));
    await expect
      .poll(() => gh.app.deps.realtime.server.registry.subscriberCount('private-dashboard.project.default.access'))
      .toBe(1);
    await api.post(`${A}/access-points/${gate}/scan`, { credential_value: 'NOBODY', scan_type: 'qr' });
    expect((await denied).reason).toBe('invalid_credential');
    echo.disconnect();
  });

  it('shows connections, subscriptions and frames in /metrics', async () => {
    const c = await rawClient(wsUrl(gh));
    await c.subscribe('news');
    const text = await (await fetch(`${gh.url}/metrics`)).text();
    expect(text).toMatch(/^gatehouse_ws_connections [1-9]/m);
    expect(text).toMatch(/^gatehouse_ws_subscriptions [1-9]/m);
    expect(text).toMatch(/^gatehouse_ws_messages_out_total [1-9]/m);
    expect(text).toMatch(/^gatehouse_ws_messages_in_total [1-9]/m);
    c.ws.close();
  });
});

describe('generated app credentials', () => {
  it('are made on first start, kept across restarts, and never served', async () => {
    const gh = await startAppliance();
    const first = gh.app.deps.realtime.credentials;
    expect(first.appId).toMatch(/^\d{6}$/);
    expect(first.key).toMatch(/^[0-9a-f]{20}$/);
    expect(first.secret).toMatch(/^[0-9a-f]{32}$/);
    expect(Buffer.from(first.encryptionMasterKey, 'base64')).toHaveLength(32);
    await gh.stop();
    const again = await startAppliance({}, { dataDir: gh.dataDir });
    expect(again.app.deps.realtime.credentials).toEqual(first);
    const token = await again.token();
    const config = await client(again, token).get('/api/v1/broadcasting/config');
    expect(JSON.stringify(config.body)).not.toContain(first.secret);
    expect(JSON.stringify(config.body)).not.toContain(first.encryptionMasterKey);
    // The generated master key is the one shared_secret is derived from (what a publisher configures).
    const auth = await again.request('POST', '/broadcasting/auth', {
      token,
      body: { socket_id: '1.2', channel_name: 'private-encrypted-dashboard.project.default.access' },
    });
    const lib = new PusherServerLib({
      appId: first.appId,
      key: first.key,
      secret: first.secret,
      host: '127.0.0.1',
      encryptionMasterKeyBase64: first.encryptionMasterKey,
    });
    expect(auth.body).toEqual(lib.authorizeChannel('1.2', 'private-encrypted-dashboard.project.default.access'));
    expect(JSON.stringify(auth.body)).not.toContain(first.encryptionMasterKey);
    await again.destroy();
  });
});
