import { createConnection } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { rawClient, signChannel, wsUrl, type RawClient } from '../helpers/pusher.js';

// The Pusher protocol 7 server seen frame by frame (docs/realtime.md).

const ACCESS = 'private-dashboard.project.default.access';

describe('the Pusher protocol server', () => {
  let gh: TestAppliance;
  beforeAll(async () => {
    gh = await startAppliance({
      GATEHOUSE_PUSHER_ACTIVITY_TIMEOUT_SECONDS: '1',
      GATEHOUSE_PUSHER_PONG_TIMEOUT_SECONDS: '1',
      GATEHOUSE_PUSHER_MAX_BUFFERED_BYTES: '65536',
    });
  });
  afterAll(() => gh.destroy());

  it('greets with a digits.digits socket id and a non-zero activity timeout, and answers pusher:ping', async () => {
    const c = await rawClient(wsUrl(gh));
    expect(c.socketId).toMatch(/^\d+\.\d+$/);
    expect(c.activityTimeout).toBe(1);
    c.send('pusher:ping', {});
    expect((await c.next('pusher:pong')).event).toBe('pusher:pong');
    c.ws.close();
  });

  it('closes an unknown app key with 4001 and an old protocol with 4007, saying why first', async () => {
    const unknown = await rawClient(wsUrl(gh, 'not-our-key'));
    expect(await unknown.closed).toEqual({ code: 4001, reason: expect.stringContaining('not-our-key') });
    const old = await rawClient(wsUrl(gh, undefined, '?protocol=5'));
    expect((await old.closed).code).toBe(4007);
  });

  it('answers a WebSocket upgrade on any other path with 404', async () => {
    const text = await new Promise<string>((resolve) => {
      const socket = createConnection(Number(new URL(gh.url).port), '127.0.0.1', () =>
        socket.write(
          'GET /nothing-here HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
        ),
      );
      let data = '';
      socket.on('data', (d) => (data += d.toString()));
      socket.on('close', () => resolve(data));
    });
    expect(text).toMatch(/^HTTP\/1.1 404/);
  });

  it('subscribes to public channels freely and to private ones only with the right signature', async () => {
    const c = await rawClient(wsUrl(gh));
    expect((await c.subscribe('news')).event).toBe('pusher_internal:subscription_succeeded');
    const ok = await c.subscribe(ACCESS, signChannel(gh, c.socketId, ACCESS));
    expect(ok).toMatchObject({ event: 'pusher_internal:subscription_succeeded', channel: ACCESS });
    // A signature for another socket, another channel, or with another key is refused, as Echo's .error() expects.
    const other = 'private-dashboard.project.default.occupancy';
    for (const auth of [
      signChannel(gh, '1.1', other),
      signChannel(gh, c.socketId, ACCESS),
      `wrong:${signChannel(gh, c.socketId, other).split(':')[1]}`,
      'no-colon',
      '',
    ]) {
      const refused = await c.subscribe(other, auth);
      expect(refused).toEqual({
        event: 'pusher:subscription_error',
        channel: other,
        data: { type: 'AuthError', error: 'Invalid signature', status: 401 },
      });
    }
    expect(gh.app.deps.realtime.server.registry.has(other, c.socketId)).toBe(false);
    // Server frames carry data as a JSON string (protocol 7).
    gh.app.deps.realtime.server.publish(['news'], 'Hello', { a: 1 });
    const raw = await new Promise<string>((resolve) => c.ws.once('message', (m) => resolve(m.toString())));
    expect(JSON.parse(raw)).toEqual({ event: 'Hello', channel: 'news', data: '{"a":1}' });
    c.ws.close();
  });

  it('refuses bad channel names, unknown events and non-JSON frames with pusher:error, and frames over the limit with 1009', async () => {
    const c = await rawClient(wsUrl(gh));
    for (const name of ['', 'a'.repeat(165), 'spaces are bad', 'slash/bad', 42]) {
      c.send('pusher:subscribe', { channel: name });
      expect((await c.next('pusher:error')).data.message).toMatch(/Invalid channel name/);
    }
    c.ws.send('{not json');
    expect((await c.next('pusher:error')).data.message).toBe('Messages must be JSON');
    c.send('pusher:bogus', {});
    expect((await c.next('pusher:error')).data.message).toMatch(/Unknown event/);
    c.ws.send(JSON.stringify({ event: 'pusher:ping', data: 'x'.repeat(11_000) }));
    expect((await c.closed).code).toBe(1009);
  });

  it('refuses client events when they are off (the default)', async () => {
    const c = await rawClient(wsUrl(gh));
    await c.subscribe(ACCESS, signChannel(gh, c.socketId, ACCESS));
    c.send('client-typing', { who: 'me' }, ACCESS);
    expect((await c.next('pusher:error')).data.message).toMatch(/Client events are not enabled/);
    c.ws.close();
  });

  it('pings an idle client and closes it with 4201 when no pong comes; WebSocket pongs count as activity', async () => {
    const silent = await rawClient(wsUrl(gh));
    silent.ws.pong = () => {}; // do not answer control-frame pings either
    expect((await silent.next('pusher:ping', 3000)).event).toBe('pusher:ping');
    expect(await silent.closed).toEqual({ code: 4201, reason: 'Pong reply not received in time' });

    const lively = await rawClient(wsUrl(gh));
    const beat = setInterval(() => lively.ws.pong(), 300); // unsolicited control-frame pongs
    await new Promise((r) => setTimeout(r, 3000));
    clearInterval(beat);
    expect(lively.ws.readyState).toBe(lively.ws.OPEN);
    expect(lively.frames.some((f) => f.event === 'pusher:ping')).toBe(false);
    lively.ws.close();
  });

  it('closes a client that stops reading with 4100 instead of buffering without bound', async () => {
    const server = gh.app.deps.realtime.server;
    // A hand-made client that completes the handshake, subscribes, and never reads again.
    const socket = createConnection(Number(new URL(gh.url).port), '127.0.0.1');
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    socket.on('error', () => {});
    const key = new URL(wsUrl(gh)).pathname.split('/').pop();
    socket.write(
      `GET /app/${key}?protocol=7 HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`,
    );
    await new Promise((resolve) => socket.once('data', resolve));
    socket.pause();
    const payload = Buffer.from(JSON.stringify({ event: 'pusher:subscribe', data: { channel: 'firehose' } }));
    socket.write(Buffer.concat([Buffer.from([0x81, 0x80 | payload.length, 0, 0, 0, 0]), payload])); // masked with a zero key
    await expect.poll(() => server.registry.subscriberCount('firehose')).toBe(1);
    const before = server.stats.connections;
    const big = 'x'.repeat(100_000);
    let offered = 0;
    const heapBefore = process.memoryUsage().heapUsed;
    for (; offered < 2000 && server.registry.subscriberCount('firehose') > 0; offered++) {
      server.publish(['firehose'], 'Big', big);
      await new Promise((r) => setImmediate(r));
    }
    // Dropped once the kernel's socket buffers were full and 64 KB more had queued: far less
    // than the 200 MB offered, and the server's heap did not grow by what was offered.
    expect(server.registry.subscriberCount('firehose')).toBe(0);
    expect(offered).toBeLessThan(2000);
    expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(64 * 1024 * 1024);
    await expect.poll(() => server.stats.connections, { timeout: 3000 }).toBe(before - 1);
    socket.destroy();
    await closed;
  });
});

describe('Pusher server limits', () => {
  let gh: TestAppliance;
  beforeAll(async () => {
    gh = await startAppliance({
      GATEHOUSE_PUSHER_MAX_CONNECTIONS: '2',
      GATEHOUSE_PUSHER_CLIENT_EVENTS: '1',
      GATEHOUSE_PUSHER_CLIENT_EVENTS_PER_SECOND: '3',
    });
  });
  afterAll(() => gh.destroy());

  it('delivers client events to the other subscribers only, with the user id on presence, and closes a flooder with 4301', async () => {
    const a = await rawClient(wsUrl(gh));
    const b = await rawClient(wsUrl(gh));
    const channel = 'presence-console.project.default';
    const dataA = JSON.stringify({ user_id: 7, user_info: { name: 'A' } });
    const dataB = JSON.stringify({ user_id: 'eight', user_info: { name: 'B' } });
    await a.subscribe(channel, signChannel(gh, a.socketId, channel, dataA), dataA);
    await b.subscribe(channel, signChannel(gh, b.socketId, channel, dataB), dataB);
    a.send('client-typing', { text: 'hi' }, channel);
    // user_id as the sender's channel_data gave it: a number stays a number (docs/realtime.md, "Encrypted channels").
    expect(await b.next('client-typing')).toEqual({
      event: 'client-typing',
      channel,
      data: { text: 'hi' },
      user_id: 7,
    });
    // The sender does not get its own event back.
    await new Promise((r) => setTimeout(r, 100));
    expect(a.frames.some((f) => f.event === 'client-typing')).toBe(false);
    // A public channel never carries client events.
    a.send('client-typing', {}, 'news');
    expect((await a.next('pusher:error')).data.message).toMatch(/private or presence channel/);
    for (let i = 0; i < 5; i++) a.send('client-typing', { i }, channel);
    expect(await a.closed).toEqual({ code: 4301, reason: 'Client event rate limit exceeded' });
    b.ws.close();
  });

  it('closes connections past pusher.maxConnections with 4004', async () => {
    const one = await rawClient(wsUrl(gh));
    const two = await rawClient(wsUrl(gh));
    const three = await rawClient(wsUrl(gh));
    expect(three.socketId).toBe('');
    expect((await three.closed).code).toBe(4004);
    one.ws.close();
    await one.closed;
    await expect.poll(() => gh.app.deps.realtime.server.stats.connections).toBe(1);
    const four = await rawClient(wsUrl(gh));
    expect(four.socketId).toMatch(/^\d+\.\d+$/);
    two.ws.close();
    four.ws.close();
  });

  it('closes every connection with 4200 when the appliance stops', async () => {
    await expect.poll(() => gh.app.deps.realtime.server.stats.connections).toBe(0);
    const c = await rawClient(wsUrl(gh));
    expect(c.socketId).not.toBe('');
    await gh.stop();
    expect((await c.closed).code).toBe(4200);
  });
});

describe('presence members', () => {
  let gh: TestAppliance;
  beforeAll(async () => {
    gh = await startAppliance();
  });
  afterAll(() => gh.destroy());

  const channel = 'presence-console.project.default';
  const join = async (userId: unknown, name: string) => {
    const c = await rawClient(wsUrl(gh));
    const data = JSON.stringify({ user_id: userId, user_info: { name } });
    return { c, joined: await c.subscribe(channel, signChannel(gh, c.socketId, channel, data), data) };
  };
  /** Everything the server sent this client before now has arrived (frames keep their order). */
  const settled = async (c: RawClient) => {
    c.send('pusher:ping', {});
    await c.next('pusher:pong');
  };

  it('keeps each user id\'s JSON type in subscription_succeeded, member_added and member_removed; 2 and "2" are one member', async () => {
    const watcher = await join('w-1', 'Watcher');
    expect(watcher.joined.data).toEqual({ presence: { ids: ['w-1'], hash: { 'w-1': { name: 'Watcher' } }, count: 1 } });
    const two = await join(2, 'Two');
    // ids keep the number; hash keys are strings, as JSON object keys are.
    expect(two.joined.data).toEqual({
      presence: { ids: ['w-1', 2], hash: { 'w-1': { name: 'Watcher' }, 2: { name: 'Two' } }, count: 2 },
    });
    expect(JSON.stringify(two.joined.data.presence.ids)).toBe('["w-1",2]');
    expect((await watcher.c.next('pusher_internal:member_added')).data).toEqual({
      user_id: 2,
      user_info: { name: 'Two' },
    });
    // The string "2" is the same member: no member_added, and the member keeps the id it joined with.
    const twoAgain = await join('2', 'Two, second tab');
    expect(twoAgain.joined.data.presence).toEqual({
      ids: ['w-1', 2],
      hash: { 'w-1': { name: 'Watcher' }, 2: { name: 'Two' } },
      count: 2,
    });
    two.c.ws.close();
    await expect.poll(() => gh.app.deps.realtime.server.registry.subscriberCount(channel)).toBe(2);
    await settled(watcher.c);
    expect(watcher.c.frames.filter((f) => f.event.startsWith('pusher_internal:member'))).toEqual([]);
    twoAgain.c.ws.close();
    expect((await watcher.c.next('pusher_internal:member_removed')).data).toEqual({ user_id: 2 });
    watcher.c.ws.close();
  });

  it('refuses channel_data whose user_id is neither a string nor a number, or empty', async () => {
    for (const userId of [null, true, { id: 1 }, [1], '']) {
      const c = await rawClient(wsUrl(gh));
      const data = JSON.stringify({ user_id: userId });
      const refused = await c.subscribe(channel, signChannel(gh, c.socketId, channel, data), data);
      expect(refused).toMatchObject({
        event: 'pusher:subscription_error',
        data: { type: 'AuthError', status: 400, error: expect.stringContaining('user_id') },
      });
      c.ws.close();
    }
  });
});
