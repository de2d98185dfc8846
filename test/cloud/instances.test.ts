import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Postgres, startPostgres } from '../helpers/postgres.js';
import { type Receiver, startReceiver } from '../helpers/receiver.js';
import { type Edge, Node, scan, seedCloud, SyncWorld, until } from '../helpers/sync-world.js';

// Two instances of one cloud on one PostgreSQL database (docs/decisions.md: the cloud on
// PostgreSQL), real processes: a change committed through either reaches what the other serves
// (its long polls, through LISTEN/NOTIFY and the external-changes read), and one webhook
// subscription gets each event once and in order whichever instance made it, one instance
// delivering at a time, the other taking over when it is killed.

describe('a cloud of two instances on one PostgreSQL database (processes)', () => {
  const world = new SyncWorld();
  let pg: Postgres;
  let one: Node;
  let two: Node;
  let edge: Edge;
  let receiver: Receiver;
  let entry: number;

  beforeAll(async () => {
    pg = startPostgres();
    const env = { GATEHOUSE_DATABASE_URL: pg.database(), GATEHOUSE_WEBHOOK_ALLOW_INSECURE: '1' };
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
  }, 60_000);

  it('takes a revocation committed through instance two to an edge long-polling instance one', async () => {
    const attendee = (
      await one.api('POST', '/attendees', { first_name: 'Rev', last_name: 'Oked', attendee_type: 'guest' })
    ).body.data.id as number;
    const credential = (await one.api('POST', `/attendees/${attendee}/credentials`, { kind: 'qr', value: 'REV-1' }))
      .body.data.id as number;
    await until(
      'the ticket admitted at the edge',
      () => scan(edge.node, entry, 'REV-1'),
      (d) => d.access_granted,
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
