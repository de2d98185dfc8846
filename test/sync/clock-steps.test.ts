import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { converged, cutLink, type Edge, mqttReader, scan, seedCloud, SyncWorld, until } from '../helpers/sync-world.js';

// Clocks as NTP treats boxes (docs/sync.md: clocks): an edge's wall clock stepped back and forward
// while it holds several upload batches, offline and online, with REST and MQTT scans; every event
// reaches the cloud exactly once. And the cloud's own outgoing webhooks, whose feed meets
// uploaded events older than the live ones before them. Real processes; each edge's clock is
// stepped by a preload (test/fixtures/clock-step.cjs).

describe('an edge whose clock is stepped (processes)', () => {
  const world = new SyncWorld();
  let edge: Edge;
  let venue: { zone: number; entry: number; exit: number };
  let ticket = 0;
  const next = () => `T-${(ticket++ % 600) + 1}`;

  beforeAll(async () => {
    await world.startCloud({ GATEHOUSE_WEBHOOK_ALLOW_INSECURE: 'true' });
    venue = await seedCloud(world.cloud, 600);
    expect(
      (await world.cloud.api('POST', '/readers', { identifier: 'GATE-MQTT', type: 'qr', access_point_id: venue.entry }))
        .status,
    ).toBe(201);
    edge = await world.addEdge('north', { GATEHOUSE_SYNC_UPLOAD_BATCH: '50' });
    await until(
      'the tickets and the reader on the edge',
      async () => [
        (await edge.node.api('GET', '/attendees?search=X-600')).body.data?.length,
        (await edge.node.api('GET', '/readers')).body.data?.length,
      ],
      ([a, r]) => a === 1 && r === 1,
      60_000,
    );
  }, 120_000);
  afterAll(() => world.destroy());

  const cut = () => cutLink(edge);

  it('loses no event to a backward step while offline with several batches queued (REST and MQTT scans)', async () => {
    await cut();
    for (let i = 0; i < 100; i++) await scan(edge.node, i % 3 === 0 ? venue.exit : venue.entry, next());
    await edge.node.setClock(-1000); // NTP steps the clock back 1 s
    const reader = await mqttReader(edge.node, 'GATE-MQTT');
    for (let i = 0; i < 60; i++) expect((await reader.scan(next())).event_id).toBeTruthy();
    for (let i = 0; i < 40; i++) await scan(edge.node, venue.entry, next());
    await edge.node.setClock(-601_000); // and 10 minutes more
    for (let i = 0; i < 50; i++) await reader.scan(next());
    for (let i = 0; i < 50; i++) await scan(edge.node, venue.exit, next());
    await reader.close();
    await until(
      'the backlog',
      () => edge.node.api('GET', '/sync/status'),
      (r) => r.body.data.backlog >= 300,
      10_000,
    );
    edge.proxy.set('pass');
    await converged(edge.node, world.cloud);
    expect(await edge.node.events()).toHaveLength(300);
    // A restart sends nothing again and loses nothing.
    await edge.node.stop();
    await edge.node.start();
    await converged(edge.node, world.cloud);
  }, 180_000);

  it('loses no event to a step back while online, mid-upload', async () => {
    const before = (await edge.node.events()).length;
    await cut();
    for (let i = 0; i < 120; i++) await scan(edge.node, venue.entry, next());
    edge.proxy.set('pass');
    await edge.node.setClock(-606_000); // 5 s further back, as the first batch goes up
    for (let i = 0; i < 80; i++) await scan(edge.node, i % 2 ? venue.exit : venue.entry, next());
    await converged(edge.node, world.cloud);
    expect(await edge.node.events()).toHaveLength(before + 200);
  }, 180_000);

  it('loses no event to forward steps, offline and online, with several batches queued', async () => {
    const before = (await edge.node.events()).length;
    await cut();
    for (let i = 0; i < 80; i++) await scan(edge.node, venue.entry, next());
    await edge.node.setClock(3_600_000); // an hour forward, offline
    const reader = await mqttReader(edge.node, 'GATE-MQTT');
    for (let i = 0; i < 70; i++) await reader.scan(next());
    edge.proxy.set('pass');
    await edge.node.setClock(3_605_000); // 5 s more as the backlog goes up
    for (let i = 0; i < 50; i++) await scan(edge.node, i % 2 ? venue.exit : venue.entry, next());
    await reader.close();
    await converged(edge.node, world.cloud);
    expect(await edge.node.events()).toHaveLength(before + 200);
    await edge.node.setClock(0); // and back to the truth, online: the step back loses nothing either
    for (let i = 0; i < 60; i++) await scan(edge.node, venue.entry, next());
    await converged(edge.node, world.cloud);
    expect(await edge.node.events()).toHaveLength(before + 260);
  }, 180_000);

  describe("the cloud's outgoing webhooks", () => {
    let receiver: Receiver;
    beforeAll(async () => {
      receiver = await startReceiver();
    });
    afterAll(() => receiver.close());

    it('deliver every event when an edge uploads events older than live ones already in the feed', async () => {
      const project = (await world.cloud.api('GET', '')).body.data.id as number;
      const sub = await world.cloud.api('POST', '/api/v1/webhook/subscribe', {
        project_id: project,
        url: receiver.url,
        events: ['access.granted', 'access.denied'],
      });
      expect(sub.status).toBe(201);
      // Paused (PUT active false), the subscription keeps its place and the feed queues.
      expect(
        (await world.cloud.api('PUT', `/api/v1/webhook-subscriptions/${sub.body.data.id}`, { active: false })).status,
      ).toBe(200);
      await cut();
      for (let i = 0; i < 150; i++) await scan(edge.node, venue.entry, next()); // older: decided before the cloud's live scans
      const live: string[] = [];
      for (let i = 0; i < 20; i++) live.push((await scan(world.cloud, venue.entry, next())).event_id);
      edge.proxy.set('pass');
      await converged(edge.node, world.cloud);
      const total = (await world.cloud.api('GET', '/access-events?per_page=1')).body.meta.total as number;
      expect(
        (await world.cloud.api('PUT', `/api/v1/webhook-subscriptions/${sub.body.data.id}`, { active: true })).status,
      ).toBe(200);
      // Every event since the subscription began: the 20 live ones and the 150 uploaded after them.
      await receiver.waitFor(170, undefined, 60_000);
      await new Promise((r) => setTimeout(r, 1500)); // nothing more, nothing twice
      const delivered = receiver.received.map((r) => (r.body.data.uuid as string) ?? r.body.id);
      expect(new Set(delivered).size).toBe(delivered.length);
      expect(delivered).toHaveLength(170);
      for (const id of live) expect(delivered).toContain(id);
      expect(total).toBeGreaterThanOrEqual(170);
    }, 180_000);
  });
});
