import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cutLink, type Edge, type Node, scan, seedCloud, SyncWorld, until } from '../helpers/sync-world.js';

// The doors keep deciding through an outage and the cloud converges afterwards, nothing lost,
// nothing doubled (docs/sync.md): a cloud and an edge as real processes, the link through a TCP
// proxy the test cuts and restores; kill -9 of the edge mid-upload and of the cloud mid-batch.
// Every check compares the full event sets on both sides by uuid.

const metric = (res: { text: string }, name: string) =>
  Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(res.text)?.[1] ?? Number.NaN);
const uuids = (events: Record<string, unknown>[]) => events.map((e) => e.uuid as string).sort();

async function converged(edge: Node, cloud: Node, expected: number): Promise<void> {
  await until(
    `the cloud to hold the edge's ${expected} events`,
    async () => (await cloud.api('GET', '/access-events?per_page=1')).body.meta.total as number,
    (n) => n >= expected,
    60_000,
    250,
  );
  const [mine, theirs] = [await edge.events(), await cloud.events()];
  expect(mine).toHaveLength(expected);
  expect(uuids(theirs)).toEqual(uuids(mine));
  // Each stored once, with the edge id and the edge's raw scan time.
  const byUuid = new Map(mine.map((e) => [e.uuid, e]));
  for (const e of theirs) {
    expect(e.edge_id).toBeGreaterThan(0);
    expect(e.scanned_at).toBe(byUuid.get(e.uuid as string)!.scanned_at);
    expect(e.granted).toBe(byUuid.get(e.uuid as string)!.granted);
  }
}

describe('an outage, then convergence (processes, a cut link)', () => {
  const world = new SyncWorld();
  let edge: Edge;
  let venue: { zone: number; entry: number; exit: number };

  beforeAll(async () => {
    await world.startCloud();
    venue = await seedCloud(world.cloud, 1200);
    edge = await world.addEdge('north', { GATEHOUSE_SYNC_UPLOAD_BATCH: '100' });
    await until(
      'the tickets on the edge',
      () => edge.node.api('GET', '/attendees?search=X-1200'),
      (r) => r.status === 200 && r.body.data.length === 1,
      60_000,
    );
  }, 120_000);
  afterAll(() => world.destroy());

  it('decides 1,000 scans with the link cut, and the cloud ends with exactly those events', async () => {
    await cutLink(edge);
    const decisions = [];
    for (let i = 1; i <= 1000; i++)
      decisions.push(
        await scan(edge.node, i % 10 === 0 ? venue.exit : venue.entry, i % 50 === 0 ? 'NO-SUCH-TICKET' : `T-${i}`),
      );
    expect(decisions.filter((d) => d.access_granted).length).toBeGreaterThan(800);
    // The backlog counts what the journal's ingest has put into access_events: all of it, shortly.
    const status = (
      await until(
        'the backlog',
        () => edge.node.api('GET', '/sync/status'),
        (r) => r.body.data.backlog >= 1000,
        10_000,
      )
    ).body.data;
    expect(status.oldest_unsynced_at).not.toBeNull();
    expect((await world.cloud.api('GET', '/access-events?per_page=1')).body.meta.total).toBe(0);

    edge.proxy.set('pass');
    await converged(edge.node, world.cloud, 1000);
    const after = (await edge.node.api('GET', '/sync/status')).body.data;
    expect(after).toMatchObject({ online: true, backlog: 0, oldest_unsynced_at: null });
    // Occupancy on the cloud counts what the edge counted.
    const [cloudZone, edgeZone] = [
      (await world.cloud.api('GET', `/access-zones/${venue.zone}`)).body.data,
      (await edge.node.api('GET', `/access-zones/${venue.zone}`)).body.data,
    ];
    expect(cloudZone.current_count).toBe(edgeZone.current_count);
  }, 180_000);

  it('sends again after a kill -9 of the edge mid-upload: the cloud stores each event once', async () => {
    await cutLink(edge);
    for (let i = 1; i <= 600; i++) await scan(edge.node, venue.entry, `T-${(i % 1200) + 1}`);
    const before = (await world.cloud.api('GET', '/access-events?per_page=1')).body.meta.total as number;
    // The cloud stores the first batch, its answer never arrives: the edge dies waiting for it.
    edge.proxy.set('drop-answers');
    await until(
      'a first batch on the cloud',
      async () => (await world.cloud.api('GET', '/access-events?per_page=1')).body.meta.total as number,
      (n) => n > before,
      30_000,
      20,
    );
    await edge.node.kill9();
    const partial = (await world.cloud.api('GET', '/access-events?per_page=1')).body.meta.total as number;
    expect(partial).toBe(before + 100); // one batch of sync.uploadBatch
    const duplicatesBefore = metric(
      await world.cloud.api('GET', '/metrics'),
      'gatehouse_sync_received_duplicates_total',
    );
    edge.proxy.set('pass');
    await edge.node.start();
    await converged(edge.node, world.cloud, 1600);
    // The batch went again after the restart, and was stored once.
    expect(
      metric(await world.cloud.api('GET', '/metrics'), 'gatehouse_sync_received_duplicates_total') - duplicatesBefore,
    ).toBeGreaterThanOrEqual(100);
  }, 180_000);

  it('loses nothing when the cloud is killed -9 mid-batch and comes back', async () => {
    await cutLink(edge);
    for (let i = 1; i <= 400; i++) await scan(edge.node, i % 2 ? venue.exit : venue.entry, `T-${i}`);
    const before = (await world.cloud.api('GET', '/access-events?per_page=1')).body.meta.total as number;
    edge.proxy.set('pass');
    await until(
      'a batch arriving',
      async () => (await world.cloud.api('GET', '/access-events?per_page=1')).body.meta.total as number,
      (n) => n > before,
      30_000,
      10,
    );
    await world.cloud.kill9();
    await world.restartCloud();
    await converged(edge.node, world.cloud, 2000);
  }, 180_000);
});
