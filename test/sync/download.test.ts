import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Edge, type Node, scan, seedCloud, SyncWorld, until } from '../helpers/sync-world.js';

// The download side and the link (docs/sync.md), with real processes: a pull cut
// at page 3 of 50 while the cloud changes rows of page 1 resumes and misses nothing; deletions
// arrive as tombstones; the edge refuses writes to what the cloud owns and numbers its own
// attendees from its block; a black-holed link while scanning at full speed.

const metric = (text: string, name: string) =>
  Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);

async function all(node: Node, path: string): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  for (let page = 1; ; page++) {
    const res = await node.api('GET', `${path}${path.includes('?') ? '&' : '?'}per_page=100&page=${page}`);
    if (res.status !== 200) throw new Error(`${node.name} ${path}: ${res.status} ${res.text}`);
    out.push(...(res.body.data as Record<string, unknown>[]));
    if (res.body.data.length < 100) return out;
  }
}

const picture = (attendees: Record<string, unknown>[]) =>
  attendees.map((a) => `${a.id}:${a.first_name}:${a.last_name}:${a.status}:${a.attendee_type}:${a.external_id}`).sort();

describe('download, ids and the link (processes)', () => {
  const world = new SyncWorld();
  let edge: Edge;
  let venue: { zone: number; entry: number; exit: number };

  beforeAll(async () => {
    await world.startCloud();
    venue = await seedCloud(world.cloud, 1000); // with the zone, doors and type: 2,004 rows, 50 pages of 41
    edge = await world.addEdge('north', { GATEHOUSE_SYNC_PAGE_SIZE: '41' });
  }, 120_000);
  afterAll(() => world.destroy());

  it('resumes a pull cut at page 3 of 50 while page 1 changes on the cloud, and misses nothing', async () => {
    edge.proxy.set('cut');
    edge.proxy.delayMs = 40;
    // Pages 1 and 2 in; then the cut, with page 3 on its way.
    edge.proxy.set('pass');
    await until(
      'two pages on the edge',
      async () => metric((await edge.node.api('GET', '/metrics')).text, 'gatehouse_sync_downloaded_rows_total'),
      (n) => n >= 82,
      60_000,
      10,
    );
    edge.proxy.set('cut');
    const applied = metric((await edge.node.api('GET', '/metrics')).text, 'gatehouse_sync_downloaded_rows_total');
    expect(applied).toBeLessThan(2004 / 2);
    // Page 1 had the first attendees: change, revoke, delete some of them on the cloud.
    const early = (await all(world.cloud, '/attendees?changed_since=0')).slice(0, 6);
    await world.cloud.api('PUT', `/attendees/${early[0]!.id}`, { first_name: 'Renamed' });
    await world.cloud.api('PUT', `/attendees/${early[1]!.id}`, { status: 'cancelled' });
    await world.cloud.api('DELETE', `/attendees/${early[2]!.id}`);
    const credential = (await world.cloud.api('GET', `/attendees/${early[3]!.id}/credentials`)).body.data[0];
    await world.cloud.api('DELETE', `/credentials/${credential.id}`);
    edge.proxy.delayMs = 0;
    edge.proxy.set('pass');
    await until(
      'the edge to reach the newest change',
      () => edge.node.api('GET', '/sync/status'),
      (r) => r.body.data.last_download_at !== null && r.body.data.online,
      60_000,
    );
    await until(
      'the same attendees on both sides',
      async () => [picture(await all(edge.node, '/attendees')), picture(await all(world.cloud, '/attendees'))],
      ([mine, theirs]) => JSON.stringify(mine) === JSON.stringify(theirs),
      30_000,
      500,
    );
    expect((await edge.node.api('GET', `/attendees/${early[0]!.id}`)).body.data.first_name).toBe('Renamed');
    expect((await edge.node.api('GET', `/attendees/${early[2]!.id}`)).status).toBe(404);
    // And the engine decides on it: cancelled and revoked are refused, the rest admitted.
    const value = (n: Record<string, unknown>) => `T-${String(n.external_id).slice(2)}`;
    expect((await scan(edge.node, venue.entry, value(early[1]!))).access_granted).toBe(false);
    expect((await scan(edge.node, venue.entry, value(early[3]!))).access_granted).toBe(false);
    expect((await scan(edge.node, venue.entry, value(early[4]!))).access_granted).toBe(true);
  }, 120_000);

  it('takes deletions and new reference data at once: a new door, a deleted zone out of the type', async () => {
    const zone = (await world.cloud.api('POST', '/access-zones', { name: 'Backstage' })).body.data.id;
    const door = (await world.cloud.api('POST', '/access-points', { name: 'Backstage door', access_zone_id: zone }))
      .body.data.id;
    await world.cloud.api('PUT', '/attendee-types/1', { zone_ids: [venue.zone, zone] });
    await until(
      'the door on the edge',
      () => edge.node.api('GET', `/access-points/${door}`),
      (r) => r.status === 200,
      15_000,
    );
    await until(
      'admitted backstage',
      () => scan(edge.node, door, 'T-500'),
      (d) => d.access_granted,
      15_000,
    );
    await world.cloud.api('DELETE', `/access-points/${door}`);
    await world.cloud.api('PUT', '/attendee-types/1', { zone_ids: [venue.zone] }); // a zone a type grants is not deleted (docs/venue.md)
    expect((await world.cloud.api('DELETE', `/access-zones/${zone}`)).status).toBe(204);
    await until(
      'the zone gone from the edge',
      () => edge.node.api('GET', `/access-zones/${zone}`),
      (r) => r.status === 404,
      15_000,
    );
    expect((await edge.node.api('GET', '/attendee-types/1')).body.data.zone_ids).toEqual([venue.zone]);
    expect((await edge.node.api('GET', `/access-points/${door}`)).status).toBe(404);
  }, 60_000);

  it("refuses writes to the cloud's reference data on the edge, with a clear error", async () => {
    const res = await edge.node.api('POST', '/access-zones', { name: 'Local zone' });
    expect(res.status).toBe(409);
    expect(res.body.message).toBe('This edge replicates access zones from its cloud: change them on the cloud.');
    expect((await edge.node.api('PUT', `/access-points/${venue.entry}`, { name: 'x' })).status).toBe(409);
    expect((await edge.node.api('GET', `/access-points/${venue.entry}`)).body.data.name).toBe('Entry');
  });

  it('numbers attendees made on the edge from its own block; the cloud keeps the id, and the ticket works there', async () => {
    const made = await edge.node.api('POST', '/attendees', {
      first_name: 'Walk',
      last_name: 'In',
      attendee_type: 'guest',
    });
    expect(made.status).toBe(201);
    const id = made.body.data.id as number;
    expect(id).toBeGreaterThan(edge.id * 2 ** 32);
    expect(id).toBeLessThan((edge.id + 1) * 2 ** 32);
    const credential = await edge.node.api('POST', `/attendees/${id}/credentials`, { value: 'WALK-IN-1' });
    expect(credential.status).toBe(201);
    expect((await scan(edge.node, venue.entry, 'WALK-IN-1')).access_granted).toBe(true);
    const onCloud = await until(
      'the attendee on the cloud',
      () => world.cloud.api('GET', `/attendees/${id}`),
      (r) => r.status === 200,
    );
    expect(onCloud.body.data).toMatchObject({ first_name: 'Walk', last_name: 'In', attendee_type: 'guest' });
    const credentials = await until(
      'the credential on the cloud',
      () => world.cloud.api('GET', `/attendees/${id}/credentials`),
      (r) => r.body.data?.length === 1,
    );
    expect(credentials.body.data[0]).toMatchObject({ id: credential.body.data.id, value: 'WALK-IN-1' });
    // The event uploaded from the edge names the cloud's attendee and credential.
    const event = await until(
      'the event on the cloud',
      async () => (await world.cloud.events()).find((e) => e.credential_value === 'WALK-IN-1'),
      (e) => e !== undefined,
    );
    expect(event).toMatchObject({ attendee_id: id, credential_id: credential.body.data.id, granted: true });
  }, 60_000);

  it('goes on deciding at full speed through a black-holed link, notices it is offline, and uploads after', async () => {
    const before = (await world.cloud.api('GET', '/access-events?per_page=1')).body.meta.total as number;
    edge.proxy.set('blackhole');
    const started = Date.now();
    let answered = 0;
    const latencies: number[] = [];
    const worker = async (w: number) => {
      for (let i = 0; Date.now() - started < 4000; i++) {
        const t = performance.now();
        await scan(edge.node, i % 2 ? venue.exit : venue.entry, `T-${600 + ((w * 50 + i) % 300)}`);
        latencies.push(performance.now() - t);
        answered++;
      }
    };
    await Promise.all([0, 1, 2, 3].map(worker));
    latencies.sort((x, y) => x - y);
    console.log(
      `sync: ${answered} REST scans in 4 s with the link black-holed; p50 ${latencies[latencies.length >> 1]!.toFixed(1)} ms, p99 ${latencies[Math.floor(latencies.length * 0.99)]!.toFixed(1)} ms`,
    );
    const status = (
      await until(
        'offline',
        () => edge.node.api('GET', '/sync/status'),
        (r) => r.body.data.online === false,
        20_000,
      )
    ).body.data;
    expect(status.state).toBe('offline');
    expect(status.last_error).toMatch(/no answer within/);
    expect(answered).toBeGreaterThan(100);
    edge.proxy.set('pass');
    await until(
      'the scans on the cloud',
      async () => (await world.cloud.api('GET', '/access-events?per_page=1')).body.meta.total as number,
      (n) => n >= before + answered,
      60_000,
      250,
    );
    expect((await edge.node.api('GET', '/sync/status')).body.data).toMatchObject({ online: true, backlog: 0 });
  }, 90_000);
});
