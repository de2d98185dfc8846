import Pusher from 'pusher-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authString } from '../../src/realtime/protocol.js';
import { type Postgres, startPostgres } from '../helpers/postgres.js';
import { startRedis, type TestRedis } from '../helpers/redis-server.js';
import { type Receiver, startReceiver } from '../helpers/receiver.js';
import { drained, type Edge, Node, scan, seedCloud, SyncWorld, until } from '../helpers/sync-world.js';

const APP = { appId: '515151', key: 'instances-key-01', secret: 'instances-secret-01' };

// Two instances of one cloud on one PostgreSQL database (docs/decisions.md: the cloud on
// PostgreSQL), real processes: a change committed through either reaches what the other serves
// (its long polls, through LISTEN/NOTIFY and the external-changes read), and one webhook
// subscription gets each event once and in order whichever instance made it, one instance
// delivering at a time, the other taking over when it is killed; a dashboard on one instance sees
// what an edge uploads through the other (Redis); edges listing both instances finish their
// uploads through the second when the first is killed mid-upload, every event once.

describe('a cloud of two instances on one PostgreSQL database (processes)', () => {
  const world = new SyncWorld();
  let pg: Postgres;
  let one: Node;
  let two: Node;
  let edge: Edge;
  let receiver: Receiver;
  let entry: number;
  let redis: TestRedis;

  beforeAll(async () => {
    pg = startPostgres();
    redis = await startRedis();
    const env = {
      GATEHOUSE_DATABASE_URL: pg.database(),
      GATEHOUSE_WEBHOOK_ALLOW_INSECURE: '1',
      GATEHOUSE_REDIS_URL: redis.url,
      GATEHOUSE_PUSHER_APP_ID: APP.appId,
      GATEHOUSE_PUSHER_KEY: APP.key,
      GATEHOUSE_PUSHER_SECRET: APP.secret,
    };
    one = await world.startCloud(env); // the first makes the schema and the administrator
    two = await new Node('cloud-2', { GATEHOUSE_ROLE: 'cloud', ...env }).start();
    entry = (await seedCloud(one, 1)).entry;
    receiver = await startReceiver();
    const projectId = (await one.api('GET', '')).body.data.id as number;
    const subscribed = await two.api('POST', '/api/v1/webhook/subscribe', {
      url: receiver.url,
      events: ['attendee.created'],
      project_id: projectId,
    });
    expect(subscribed.status, subscribed.text).toBe(201);
    edge = await world.addEdge('north'); // long-polls instance one
  }, 120_000);
  afterAll(async () => {
    await two?.destroy();
    await world.destroy();
    await receiver?.close();
    pg?.stop();
    await redis?.stop();
  }, 60_000);

  it('takes a revocation committed through instance two to an edge long-polling instance one', async () => {
    const attendee = (
      await one.api('POST', '/attendees', { first_name: 'Rev', last_name: 'Oked', attendee_type: 'guest' })
    ).body.data.id as number;
    const credential = (await one.api('POST', `/attendees/${attendee}/credentials`, { kind: 'qr', value: 'REV-1' }))
      .body.data.id as number;
    await until(
      'the ticket admitted at the edge',
      () => scan(edge.node, entry, 'REV-1').catch(() => null), // 404 until the venue has arrived
      (d) => d?.access_granted === true,
      30_000,
    );
    const revoked = await two.api('DELETE', `/credentials/${credential}`);
    expect(revoked.status).toBe(200);
    const started = performance.now();
    await until(
      'the revocation at the edge',
      () => scan(edge.node, entry, 'REV-1'),
      (d) => !d.access_granted,
      15_000,
    );
    console.log(`revocation through instance two reached the edge in ${Math.round(performance.now() - started)} ms`);
    // Instance one announced it as its own change too: its REST answers it.
    expect((await one.api('GET', `/attendees/${attendee}/credentials`)).body.data[0].status).toBe('revoked');
  }, 60_000);

  it('shows a dashboard on instance one what an edge uploads through instance two', async () => {
    const url = new URL(one.url);
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
          callback: (err: null, auth: { auth: string }) => void,
        ) => callback(null, { auth: authString(APP.key, APP.secret, socketId, channelName) }),
      },
    });
    try {
      const seen: { uuid?: string; edge_id?: number }[] = [];
      await new Promise((resolve, reject) => {
        const channel = pusher.subscribe('private-dashboard.project.default.access');
        channel.bind('AccessGranted', (e: { uuid?: string; edge_id?: number }) => seen.push(e));
        channel.bind('pusher:subscription_succeeded', resolve);
        channel.bind('pusher:subscription_error', (e: unknown) => reject(new Error(JSON.stringify(e))));
      });
      const south = await world.addEdge('south', { GATEHOUSE_CLOUD_URL: two.url });
      const decided = await scan(south.node, entry, 'T-1');
      expect(decided.access_granted).toBe(true);
      await until(
        'the upload announced on instance one',
        async () => seen,
        (s) => s.some((e) => e.uuid === decided.event_id),
        30_000,
      );
      expect(seen.filter((e) => e.uuid === decided.event_id)).toHaveLength(1);
    } finally {
      pusher.disconnect();
    }
  }, 60_000);

  it('lets edges that list both instances finish their uploads through instance two when one is killed mid-upload', async () => {
    const urls = `${one.url},${two.url}`;
    const edges = [
      await world.addEdge('east', { GATEHOUSE_CLOUD_URL: urls }),
      await world.addEdge('west', { GATEHOUSE_CLOUD_URL: urls }),
    ];
    const decided: string[] = [];
    const scanMany = async (e: Edge, from: number, n: number) => {
      for (let i = from; i < from + n; i++) decided.push((await scan(e.node, entry, `T-${(i % 5) + 1}`)).event_id);
    };
    const first = Promise.all(edges.map((e, k) => scanMany(e, k * 1000, 150)));
    // Uploads under way through instance one: kill it (kill -9), while the edges go on scanning.
    await until(
      'uploads arriving',
      async () => (await two.events()).filter((e) => e.edge_id !== null).length,
      (n) => n >= 20,
      30_000,
    );
    await one.kill9();
    await first;
    await Promise.all(edges.map((e, k) => scanMany(e, k * 1000 + 500, 50)));
    // (drained() also ends when a link is down: the count on the cloud is what says they finished.)
    const ours = async () => (await two.events()).filter((e) => edges.some((x) => x.id === e.edge_id));
    await until('every event on instance two', ours, (events) => events.length >= decided.length, 60_000);
    for (const e of edges) await drained(e.node);
    const onCloud = await ours();
    expect(onCloud.length).toBe(decided.length); // every event once
    expect(new Set(onCloud.map((e) => e.uuid))).toEqual(new Set(decided));
    for (const e of edges) expect((await e.node.api('GET', '/sync/status')).body.data.cloud_url).toBe(two.url);
    await one.start(); // back, for what follows
  }, 180_000);

  it('delivers each event of one subscription once and in order, whichever instance made it, and after one is killed', async () => {
    const made: number[] = [];
    const create = async (node: Node, i: number) => {
      const res = await node.api('POST', '/attendees', { first_name: `Guest${i}`, last_name: 'Ordered' });
      expect(res.status, res.text).toBe(201);
      made.push(res.body.data.id as number);
    };
    const ordered = () => receiver.received.filter((h) => h.body.data?.last_name === 'Ordered');
    // Both instances running, the attendees made through either in turn: each event once, in order.
    for (let i = 0; i < 10; i++) await create(i % 2 === 0 ? one : two, i);
    await until(
      'the first ten delivered',
      async () => ordered().length,
      (n) => n >= 10,
      30_000,
    );
    // One instance dies (kill -9) with nothing in flight: the other takes over the deliveries.
    await one.kill9();
    for (let i = 10; i < 20; i++) await create(two, i);
    await until(
      'all twenty delivered',
      async () => ordered().length,
      (n) => n >= 20,
      60_000,
    );
    // Nothing more comes: no instance delivered one twice.
    await new Promise((r) => setTimeout(r, 2000));
    const hooks = ordered();
    expect(hooks.map((h) => h.body.data.id as number)).toEqual(made); // each once, in the order they were made
    expect(new Set(hooks.map((h) => h.body.id)).size).toBe(20);
  }, 120_000);
});
