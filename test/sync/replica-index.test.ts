import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VenueIndex } from '../../src/access/venue-index.js';
import { startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { writeVenue } from '../helpers/venue-writer.js';

// The edge's decision index after a pull (docs/sync.md: the edge's replica). Each
// page's rows go into the index from what the replica wrote, not read back from SQLite; the
// index must end as an index loaded from the edge's database would be, while another process
// writes the same store during the pull, the cloud changes and deletes rows of pages already
// applied, and a cloud row takes the value of a credential made on the edge. A cloud and an edge
// in this process, so the two indexes can be compared whole; the link through a proxy the test cuts.

const P = '/api/v1/projects/default/default';

async function until<T>(what: string, read: () => Promise<T> | T, ok: (v: T) => boolean, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  let last = await read();
  while (!ok(last)) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 20));
    last = await read();
  }
  return last;
}

/** Everything a decision reads from the index, in a comparable form (credentials also through their value). */
function picture(index: VenueIndex) {
  const byId = <T>(m: { values(): Iterable<T> }) =>
    [...m.values()].sort((a, b) => (a as { id: number }).id - (b as { id: number }).id);
  const credentials = byId(index.credentialsById);
  return {
    credentials,
    byValue: credentials.map((c) => index.credential(c.projectId, c.value)?.id ?? null),
    attendees: byId(index.attendees),
    typeZones: [...index.typeZones]
      .map(([type, zones]) => [type, [...zones].sort()])
      .sort((a, b) => (a[0] as number) - (b[0] as number)),
    zones: byId(index.zones),
    accessPoints: byId(index.accessPoints),
    readers: byId(index.readers),
    windows: [...index.windows.values()].flat().map((w) => ({ ...w, days: [...w.days] })),
    blocks: byId(index.blocks),
  };
}

describe("the edge's index after a pull", () => {
  let cloud: TestAppliance;
  let edge: TestAppliance;
  let proxy: TcpProxy;
  let cloudToken: string;
  let edgeToken: string;
  const ids: Record<string, number> = {};

  const onCloud = async (method: string, path: string, body?: unknown) => {
    const res = await cloud.request(method, `${P}${path}`, {
      token: cloudToken,
      ...(body === undefined ? {} : { body }),
    });
    if (res.status >= 300) throw new Error(`cloud ${method} ${path}: ${res.status} ${res.text}`);
    return res.body;
  };
  const onEdge = (method: string, path: string, body?: unknown) =>
    edge.request(method, `${P}${path}`, { token: edgeToken, ...(body === undefined ? {} : { body }) });
  /** The edge's decision at the hall's door over REST: 'granted' or the reason. */
  const decision = async (value: string) => {
    const res = await onEdge('POST', `/access-points/${ids.door}/scan`, { credential_value: value });
    const body = res.body.data ?? res.body;
    return body.access_granted ? 'granted' : body.reason;
  };

  beforeAll(async () => {
    cloud = await startAppliance({ GATEHOUSE_ROLE: 'cloud' });
    cloudToken = await cloud.token();
    const hall = (await onCloud('POST', '/access-zones', { name: 'Hall' })).data.id;
    const annex = (await onCloud('POST', '/access-zones', { name: 'Annex' })).data.id;
    ids.door = (
      await onCloud('POST', '/access-points', { name: 'Hall door', access_zone_id: hall, direction: 'in' })
    ).data.id;
    ids.annexDoor = (
      await onCloud('POST', '/access-points', { name: 'Annex door', access_zone_id: annex, direction: 'in' })
    ).data.id;
    await onCloud('POST', '/attendee-types', { name: 'Guest', zone_ids: [hall, annex] });
    const rows = Array.from({ length: 300 }, (_, i) => ({
      first_name: `Guest${i}`,
      last_name: 'Test',
      attendee_type: 'guest',
      external_id: `X-${i}`,
      credential_value: `T-${i}`,
    }));
    await onCloud('POST', '/attendees/import', rows);
    const token = (await onCloud('POST', '/sync/edges', { name: 'North' })).data.token;
    proxy = new TcpProxy(cloud.app.httpPort);
    await proxy.start();
    proxy.delayMs = 30; // a pull of many pages, slow enough to cut in the middle
    edge = await startAppliance({
      GATEHOUSE_ROLE: 'edge',
      GATEHOUSE_CLOUD_URL: proxy.url,
      GATEHOUSE_SYNC_TOKEN: token,
      GATEHOUSE_SYNC_PAGE_SIZE: '25',
      GATEHOUSE_SYNC_BACKOFF_MIN_MS: '20',
      GATEHOUSE_SYNC_BACKOFF_MAX_MS: '200',
      GATEHOUSE_SYNC_LONG_POLL_SECONDS: '1',
    });
    edgeToken = await edge.token();
  }, 60_000);
  afterAll(async () => {
    await edge?.destroy();
    await proxy?.stop();
    await cloud?.destroy();
  });

  it('ends as an index loaded from the database, with changes from the cloud and another process made during the pull', async () => {
    const sync = edge.app.services.sync.edge!;
    const external = edge.app.services.access.externalChanges;
    // Part of the pull in (the venue and the first attendees), then the link cut mid-pull.
    await until(
      'a few pages on the edge',
      () => sync.stats.downloadedRows,
      (n) => n >= 150,
      30_000,
    );
    proxy.set('cut');
    expect(sync.stats.downloadedRows).toBeLessThan(605); // 2 zones, 2 doors, a type, 300 attendees and their credentials
    const pulled = edge.app.services.store.db
      .prepare('SELECT id, attendee_id, value FROM credentials ORDER BY id LIMIT 6')
      .all() as { id: number; attendee_id: number; value: string }[];
    expect(pulled).toHaveLength(6);
    const [byOther, renamed, cancelled, gone, revoked, blocked] = pulled;

    // The cloud changes and deletes rows of pages the edge has applied, and adds some.
    await onCloud('PUT', `/attendees/${renamed!.attendee_id}`, { first_name: 'Renamed' });
    await onCloud('PUT', `/attendees/${cancelled!.attendee_id}`, { status: 'cancelled' });
    await onCloud('DELETE', `/attendees/${gone!.attendee_id}`);
    await onCloud('DELETE', `/credentials/${revoked!.id}`);
    await onCloud('DELETE', `/access-points/${ids.annexDoor}`);
    const late = (await onCloud('POST', '/attendees', { first_name: 'Late', attendee_type: 'guest' })).data
      .id as number;
    await onCloud('POST', `/attendees/${late}/credentials`, { value: 'LATE-1' });
    // The cloud gives a value to its attendee that the edge gives to one of its own below: the cloud's row wins on the edge.
    await onCloud('POST', `/attendees/${late}/credentials`, { value: 'CLASH-1' });

    // Another process revokes a pulled credential and blocklists a pulled attendee on the edge's
    // store (a blocklist entry is not uploaded: only the poll can bring it), and the edge issues a
    // credential of its own. The link returns at once: the replica's next pages land before the next poll.
    await writeVenue(edge.dataDir, [
      ['credentials', 'revoke', byOther!.id],
      ['blocklist', 'create', { attendee_id: blocked!.attendee_id, reason: 'seen on the rig' }],
    ]);
    const local = await onEdge('POST', `/attendees/${renamed!.attendee_id}/credentials`, { value: 'CLASH-1' });
    expect(local.status, local.text).toBe(201);
    proxy.delayMs = 0;
    proxy.set('pass');
    await until(
      'the newest change on the edge',
      () => decision('LATE-1'),
      (d) => d === 'granted',
      30_000,
    );
    await until(
      'caught up',
      async () => (await onEdge('GET', '/sync/status')).body.data,
      (s) => s.last_download_at !== null && s.backlog === 0,
      30_000,
    );
    // The other process's writes reach the index through the poll, the replica's pages after them notwithstanding.
    await until(
      'the blocklist entry by another process',
      () => decision(blocked!.value),
      (d) => d === 'blocklisted',
      10_000,
    );
    await new Promise((r) => setTimeout(r, 1500)); // a poll of other processes' changes; the echoes of the edge's own uploads

    const index = edge.app.services.access.index;
    const fresh = new VenueIndex(edge.app.services.store.db);
    fresh.load();
    expect(picture(index)).toEqual(picture(fresh));
    // The pulled rows were not read back: the poll read only what the other process wrote.
    expect(external.stats.rows).toBeGreaterThanOrEqual(1);
    expect(external.stats.rows).toBeLessThan(10);

    expect(await decision(byOther!.value)).toBe('invalid_credential');
    expect(await decision(renamed!.value)).toBe('granted');
    expect(index.attendees.get(renamed!.attendee_id)?.firstName).toBe('Renamed');
    expect(await decision(cancelled!.value)).toBe('invalid_credential');
    expect(await decision(gone!.value)).toBe('invalid_credential');
    expect(await decision(revoked!.value)).toBe('invalid_credential');
    expect(await decision(blocked!.value)).toBe('blocklisted');
    expect(await decision('T-299')).toBe('granted'); // on the pull's last pages
    expect(await decision('CLASH-1')).toBe('granted');
    expect(index.credential(index.credentialsById.get(pulled[1]!.id)!.projectId, 'CLASH-1')?.attendeeId).toBe(late);
    expect((await onEdge('POST', `/access-points/${ids.annexDoor}/scan`, { credential_value: 'T-299' })).status).toBe(
      404,
    );
  }, 90_000);
});
