import PusherServerLib from 'pusher';
import Pusher from 'pusher-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authString } from '../../src/realtime/protocol.js';
import { startProcessAppliance, type ProcessAppliance } from '../helpers/process-appliance.js';
import { startRedis, type TestRedis } from '../helpers/redis-server.js';

// Two instances of a cloud, each its own process with its own data directory, sharing one
// redis-server (docs/realtime.md, "Several instances"): unmodified pusher-js clients connected
// to either get what is published on either, once; presence members and the HTTP API's counts
// are the cluster's; a killed instance's members are removed.

const APP = { appId: '424242', key: 'cluster-key-0001', secret: 'cluster-secret-0001' };

interface Client {
  pusher: any;
  /** Every event each channel received, in order: [event, data]. */
  got: Map<string, [string, unknown][]>;
  subscribe(channel: string): Promise<any>;
}

const clients: Client[] = [];

/** pusher-js against one instance; private and presence channels signed with the shared app secret. */
async function connect(instance: ProcessAppliance, user?: { id: number; name: string }): Promise<Client> {
  const url = new URL(instance.url);
  const pusher = new (Pusher as any)(APP.key, {
    cluster: 'local',
    wsHost: url.hostname,
    wsPort: Number(url.port),
    forceTLS: false,
    enabledTransports: ['ws'],
    disableStats: true,
    channelAuthorization: {
      customHandler: (
        { socketId, channelName }: { socketId: string; channelName: string },
        callback: (err: null, auth: { auth: string; channel_data?: string }) => void,
      ) => {
        const channelData = channelName.startsWith('presence-')
          ? JSON.stringify({ user_id: user!.id, user_info: { name: user!.name } })
          : undefined;
        callback(null, {
          auth: authString(APP.key, APP.secret, socketId, channelName, channelData),
          ...(channelData ? { channel_data: channelData } : {}),
        });
      },
    },
  });
  await new Promise((resolve) => pusher.connection.bind('connected', resolve));
  const got = new Map<string, [string, unknown][]>();
  const client: Client = {
    pusher,
    got,
    subscribe: (channel) =>
      new Promise((resolve, reject) => {
        const c = pusher.subscribe(channel);
        got.set(channel, []);
        c.bind_global((event: string, data: unknown) => got.get(channel)!.push([event, data]));
        c.bind('pusher:subscription_succeeded', () => resolve(c));
        c.bind('pusher:subscription_error', (e: unknown) => reject(new Error(JSON.stringify(e))));
      }),
  };
  clients.push(client);
  return client;
}

const events = (c: Client, channel: string, event: string) =>
  (c.got.get(channel) ?? []).filter(([e]) => e === event).map(([, d]) => d);

const api = (instance: ProcessAppliance) =>
  new PusherServerLib({ ...APP, host: '127.0.0.1', port: new URL(instance.url).port, useTLS: false });

async function channelState(instance: ProcessAppliance, channel: string) {
  const res = await api(instance).get({
    path: `/channels/${channel}`,
    params: { info: 'subscription_count,user_count' },
  });
  return res.json();
}

const POLL = { timeout: 30_000, interval: 100 };

describe('several instances sharing one Redis (processes)', () => {
  let redis: TestRedis;
  let one: ProcessAppliance;
  let two: ProcessAppliance;

  beforeAll(async () => {
    redis = await startRedis();
    const env = {
      GATEHOUSE_ROLE: 'cloud',
      GATEHOUSE_REDIS_URL: redis.url,
      GATEHOUSE_REDIS_INSTANCE_TIMEOUT_MS: '3000',
      GATEHOUSE_PUSHER_APP_ID: APP.appId,
      GATEHOUSE_PUSHER_KEY: APP.key,
      GATEHOUSE_PUSHER_SECRET: APP.secret,
      GATEHOUSE_PUSHER_CLIENT_EVENTS: 'true',
    };
    [one, two] = await Promise.all([startProcessAppliance(env), startProcessAppliance(env)]);
  }, 120_000);

  afterAll(async () => {
    for (const c of clients.splice(0)) c.pusher.disconnect();
    await Promise.all([one?.destroy(), two?.destroy()]);
    await redis?.stop();
  }, 60_000);

  it('delivers HTTP API and client events sent on one instance to a subscriber on the other, once', async () => {
    const here = await connect(one);
    await here.subscribe('news');
    await here.subscribe('private-chat');
    const there = await connect(two);
    const chat = await there.subscribe('private-chat');
    // Instance two knows of the subscriber on instance one once its channel list shows it.
    await expect
      .poll(async () => Object.keys((await (await api(two).get({ path: '/channels' })).json()).channels), POLL)
      .toEqual(expect.arrayContaining(['news', 'private-chat']));

    await api(two).trigger('news', 'Headline', { text: 'doors open' });
    chat.trigger('client-typing', { who: 'there' });
    await api(two).trigger('news', 'Marker', { n: 1 });
    chat.trigger('client-marker', { n: 1 });
    await expect.poll(() => events(here, 'news', 'Marker').length, POLL).toBe(1);
    await expect.poll(() => events(here, 'private-chat', 'client-marker').length, POLL).toBe(1);
    expect(events(here, 'news', 'Headline')).toEqual([{ text: 'doors open' }]);
    expect(events(here, 'private-chat', 'client-typing')).toEqual([{ who: 'there' }]);
    // The sender of a client event does not get it back, from its own instance or the other.
    expect(events(there, 'private-chat', 'client-typing')).toEqual([]);
  });

  it("delivers a domain event of one instance's bus to its project's channel's subscriber on the other", async () => {
    const channel = 'private-console.project.default.occupancy';
    const here = await connect(one);
    await here.subscribe(channel);
    await expect
      .poll(async () => Object.keys((await (await api(two).get({ path: '/channels' })).json()).channels), POLL)
      .toContain(channel);
    const token = await two.token();
    const created = await two.request('POST', '/api/v1/projects/default/default/access-zones', {
      token,
      body: { name: 'Hall B', capacity: 50 },
    });
    expect(created.status).toBe(201);
    await expect.poll(() => events(here, channel, 'AccessZoneUpdated').length, POLL).toBe(1);
    expect(events(here, channel, 'AccessZoneUpdated')[0]).toMatchObject({ name: 'Hall B', capacity: 50 });
    await api(two).trigger(channel, 'Marker', { n: 2 });
    await expect.poll(() => events(here, channel, 'Marker').length, POLL).toBe(1);
    expect(events(here, channel, 'AccessZoneUpdated')).toHaveLength(1);
  });

  it('shows presence members on both instances to each other as they join and leave', async () => {
    const ann = await connect(one, { id: 1, name: 'Ann' });
    const room = await ann.subscribe('presence-room');
    expect(room.members.count).toBe(1);
    const bob = await connect(two, { id: 2, name: 'Bob' });
    const bobRoom = await bob.subscribe('presence-room');
    // Bob's list names Ann, who is connected to the other instance.
    expect(bobRoom.members.count).toBe(2);
    expect(bobRoom.members.get(1)).toEqual({ id: 1, info: { name: 'Ann' } });
    await expect
      .poll(() => events(ann, 'presence-room', 'pusher:member_added'), POLL)
      .toEqual([{ id: 2, info: { name: 'Bob' } }]);
    bob.pusher.disconnect();
    await expect
      .poll(() => events(ann, 'presence-room', 'pusher:member_removed'), POLL)
      .toEqual([{ id: 2, info: { name: 'Bob' } }]);
    expect(room.members.count).toBe(1);
  });

  it("answers the HTTP API's channel counts and users as the sum over the instances, on either", async () => {
    const cleo = await connect(two, { id: 3, name: 'Cleo' });
    await cleo.subscribe('presence-room');
    const dan = await connect(two, { id: 4, name: 'Dan' });
    await dan.subscribe('presence-room');
    const annAgain = await connect(one, { id: 1, name: 'Ann' }); // a second tab of Ann: one member
    await annAgain.subscribe('presence-room');
    const alone = await connect(two);
    await alone.subscribe('only-on-two');
    const want = { occupied: true, subscription_count: 4, user_count: 3 };
    await expect.poll(() => channelState(one, 'presence-room'), POLL).toEqual(want);
    expect(await channelState(two, 'presence-room')).toEqual(want);
    for (const instance of [one, two]) {
      const users = await (await api(instance).get({ path: '/channels/presence-room/users' })).json();
      expect(users.users.map((u: { id: number }) => u.id).sort()).toEqual([1, 3, 4]);
    }
    const listed = await (
      await api(one).get({ path: '/channels', params: { filter_by_prefix: 'only-', info: 'subscription_count' } })
    ).json();
    expect(listed).toEqual({ channels: { 'only-on-two': { subscription_count: 1 } } });
  });

  it('carries on through a Redis restart: the state is written again, events cross again', async () => {
    const backBefore = (p: ProcessAppliance) => p.proc.output.filter((l) => l.includes('Redis connection back')).length;
    const before = [backBefore(one), backBefore(two)];
    await redis.stop(true);
    redis = await startRedis(redis.dir); // an empty Redis at the same socket
    // Both clients of both instances reconnect (ioredis) and each instance writes its part again.
    await expect.poll(() => [backBefore(one) - before[0]!, backBefore(two) - before[1]!], POLL).toEqual([2, 2]);
    await expect
      .poll(() => channelState(one, 'presence-room'), POLL)
      .toEqual({
        occupied: true,
        subscription_count: 4,
        user_count: 3,
      });
    const here = await connect(one);
    await here.subscribe('after-restart');
    await expect
      .poll(async () => Object.keys((await (await api(two).get({ path: '/channels' })).json()).channels), POLL)
      .toContain('after-restart');
    await api(two).trigger('after-restart', 'Hello', { again: true });
    await expect.poll(() => events(here, 'after-restart', 'Hello'), POLL).toEqual([{ again: true }]);
  });

  it("removes a killed instance's presence members and subscriptions within its heartbeat timeout", async () => {
    const ann = clients.find((c) => c.got.has('presence-room') && c.pusher.connection.state === 'connected')!;
    const removedBefore = events(ann, 'presence-room', 'pusher:member_removed').length;
    await two.proc.stop('SIGKILL');
    await expect
      .poll(
        () =>
          events(ann, 'presence-room', 'pusher:member_removed')
            .slice(removedBefore)
            .map((m: any) => m.id)
            .sort(),
        POLL,
      )
      .toEqual([3, 4]);
    expect(await channelState(one, 'presence-room')).toEqual({
      occupied: true,
      subscription_count: 2,
      user_count: 1,
    });
    const listed = await (await api(one).get({ path: '/channels', params: { filter_by_prefix: 'only-' } })).json();
    expect(listed).toEqual({ channels: {} });
  });
});
