import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Replica } from '../../sync/replica.js';
import { requester, startAppliance } from '../helpers/appliance.js';
import { type Receiver, startReceiver } from '../helpers/receiver.js';
import { type Edge, P, scan, seedCloud, SyncWorld, until } from '../helpers/sync-world.js';

// Rows one side deleted while the other still used them (docs/sync.md: conflicts): an access
// event naming an access point and zone the cloud deleted during an outage (deleted_reference),
// an attendee edited at an offline edge that the cloud deleted, and one deleted at the edge that
// the cloud edited (deleted_row: the deletion wins, both sides kept in the conflict). A cloud and
// an edge as processes, the link through a proxy the test cuts; bad uploads sent straight to the
// cloud with the edge's sync token.

describe('rows deleted on the other side (processes)', () => {
  const world = new SyncWorld();
  let edge: Edge;
  let receiver: Receiver;
  let venue: { zone: number; entry: number; exit: number };
  let guestType: number;

  const conflicts = async (kind: string) =>
    (await world.cloud.api('GET', `/sync/conflicts?kind=${kind}&per_page=100`)).body.data as Record<string, any>[];
  const hallCount = async () =>
    (await world.cloud.api('GET', `/access-zones/${venue.zone}`)).body.data.current_count as number;
  const attendeeId = async (externalId: string) =>
    (await world.cloud.api('GET', `/attendees?search=${externalId}`)).body.data[0].id as number;
  const eventOnCloud = (uuid: string) =>
    until(
      `event ${uuid} on the cloud`,
      async () => (await world.cloud.events()).find((e) => e.uuid === uuid),
      (e) => e !== undefined,
    );
  const status = () => edge.node.api('GET', '/sync/status');
  const offline = async () => {
    edge.proxy.set('cut');
    await until('the link down', status, (r) => r.body.data.online === false, 20_000);
  };
  const online = async () => {
    edge.proxy.set('pass');
    await until('everything uploaded', status, (r) => r.body.data.online === true && r.body.data.backlog === 0, 30_000);
  };
  const upload = (items: unknown[]) =>
    requester(world.cloud.url)('POST', `${P}/sync/upload`, {
      token: edge.syncToken,
      headers: { 'Gatehouse-Sync-Protocol': '1' },
      body: { clock: { offset_ms: 0, synchronised: true }, backlog: 0, items },
    });
  const change = (event: string, data: Record<string, unknown>, uuid: string = randomUUID()) => ({
    kind: 'change',
    uuid,
    event,
    data,
    created_at: new Date().toISOString(),
  });

  beforeAll(async () => {
    receiver = await startReceiver();
    await world.startCloud({ GATEHOUSE_WEBHOOK_ALLOW_INSECURE: '1' });
    venue = await seedCloud(world.cloud, 20);
    guestType = ((await world.cloud.api('GET', '/attendee-types')).body.data as { id: number; slug: string }[]).find(
      (t) => t.slug === 'guest',
    )!.id;
    const projectId = (await world.cloud.api('GET', P)).body.data.id as number;
    const subscribed = await world.cloud.api('POST', '/api/v1/webhook/subscribe', {
      url: receiver.url,
      events: ['sync.conflict'],
      project_id: projectId,
    });
    expect(subscribed.status, subscribed.text).toBe(201);
    edge = await world.addEdge('north');
    await until(
      'the tickets on the edge',
      () => edge.node.api('GET', '/attendees?search=X-20'),
      (r) => r.body.data?.length === 1,
      60_000,
    );
  }, 120_000);
  afterAll(async () => {
    await world.destroy();
    await receiver?.close();
  });

  it('keeps an entry at an access point and zone the cloud deleted meanwhile, flags it, and moves nobody into the deleted zone', async () => {
    const side = (await world.cloud.api('POST', '/access-zones', { name: 'Side hall' })).body.data.id as number;
    const door = (
      await world.cloud.api('POST', '/access-points', { name: 'Side door', access_zone_id: side, direction: 'in' })
    ).body.data.id as number;
    expect(
      (await world.cloud.api('PUT', `/attendee-types/${guestType}`, { zone_ids: [venue.zone, side] })).status,
    ).toBe(200);
    expect((await scan(edge.node, venue.entry, 'T-3')).access_granted).toBe(true);
    const opened = await until(
      'the side door open to guests at the edge',
      () => edge.node.api('POST', `/access-points/${door}/scan`, { credential_value: 'T-4' }),
      (r) => r.status === 200 && (r.body.data ?? r.body).access_granted === true,
      20_000,
    );
    await online();
    await until('T-3 counted in the hall', hallCount, (n) => n === 1);
    // Every scan so far on the cloud before the link is cut (the upload keeps the edge's order): a
    // scan at the side door still on the edge would go up after the door's deletion, and be flagged too.
    await eventOnCloud((opened.body.data ?? opened.body).event_id as string);

    await offline();
    const late = await scan(edge.node, door, 'T-3'); // from the hall into the side hall
    expect(late.access_granted).toBe(true);
    expect((await world.cloud.api('DELETE', `/access-points/${door}`)).status).toBe(204);
    expect((await world.cloud.api('PUT', `/attendee-types/${guestType}`, { zone_ids: [venue.zone] })).status).toBe(200);
    expect((await world.cloud.api('DELETE', `/access-zones/${side}`)).status).toBe(204);
    await online();

    const stored = await eventOnCloud(late.event_id);
    expect(stored).toMatchObject({
      access_point_id: door,
      access_zone_id: side,
      granted: true,
      edge_id: edge.id,
      deleted_reference: 'access_point,access_zone',
      review: null,
    });
    const [flag, ...more] = (await conflicts('deleted_reference')).filter((c) => c.event_id === late.event_id);
    expect(more).toEqual([]);
    expect(flag).toMatchObject({
      edge_id: edge.id,
      entity: 'access_zone',
      entity_id: side,
      edge_value: { reader_id: null, access_point_id: door, access_zone_id: side },
      cloud_value: [
        { entity: 'access_point', id: door, deleted_at: expect.any(String) },
        { entity: 'access_zone', id: side, deleted_at: expect.any(String) },
      ],
      detail: expect.stringMatching(/access point .*deleted.*access zone .*deleted/),
    });
    // Delivered as a webhook (not necessarily the first one the receiver got: the list says which came).
    const delivered = await until(
      `the deleted_reference webhook for ${late.event_id}`,
      () => receiver.received.map((r) => `${r.body.data?.kind}:${r.body.data?.event_id}`),
      (seen) => seen.includes(`deleted_reference:${late.event_id}`),
      20_000,
    );
    expect(delivered).toContain(`deleted_reference:${late.event_id}`);
    // Not moved out of the hall into a zone that no longer exists: T-3 is still counted there.
    expect(await hallCount()).toBe(1);
    // Flags nothing without cause: the earlier scans at the living door and the side door before its deletion.
    expect((await conflicts('deleted_reference')).length).toBe(1);
  }, 120_000);

  it('keeps an attendee the cloud deleted while an offline edge edited it deleted, and records the edit as a deleted_row conflict', async () => {
    const id = await attendeeId('X-5');
    await offline();
    expect(
      (await edge.node.api('PUT', `/attendees/${id}`, { last_name: 'Edited', email: 'edited@example.test' })).status,
    ).toBe(200);
    expect((await world.cloud.api('DELETE', `/attendees/${id}`)).status).toBe(204);
    await online();
    const [conflict] = await until(
      'the deleted_row conflict',
      async () => (await conflicts('deleted_row')).filter((c) => c.entity_id === id),
      (list) => list.length === 1,
    );
    expect(conflict).toMatchObject({
      edge_id: edge.id,
      entity: 'attendee',
      edge_value: {
        event: 'attendee.updated',
        data: expect.objectContaining({ id, last_name: 'Edited', email: 'edited@example.test' }),
      },
      cloud_value: { deleted_at: expect.any(String) },
      detail: expect.stringMatching(/deleted on the cloud/),
    });
    expect((await world.cloud.api('GET', `/attendees/${id}`)).status).toBe(404); // the deletion wins
    await until(
      'the deletion at the edge',
      () => edge.node.api('GET', `/attendees/${id}`),
      (r) => r.status === 404,
    );
    await until(
      'announced',
      () => receiver.received.filter((r) => r.body.data.kind === 'deleted_row' && r.body.data.entity_id === id),
      (l) => l.length === 1,
    );
  }, 120_000);

  it("applies an attendee's deletion at an offline edge that the cloud edited meanwhile, and keeps the cloud's edit in a deleted_row conflict", async () => {
    const id = await attendeeId('X-6');
    await offline();
    expect((await world.cloud.api('PUT', `/attendees/${id}`, { email: 'cloud@example.test' })).status).toBe(200);
    expect((await edge.node.api('DELETE', `/attendees/${id}`)).status).toBe(204);
    await online();
    const [conflict] = await until(
      'the deleted_row conflict',
      async () => (await conflicts('deleted_row')).filter((c) => c.entity_id === id),
      (list) => list.length === 1,
    );
    expect(conflict).toMatchObject({
      edge_id: edge.id,
      entity: 'attendee',
      edge_value: { event: 'attendee.deleted', data: expect.objectContaining({ id }) },
      cloud_value: expect.objectContaining({ id, email: 'cloud@example.test', external_id: 'X-6' }),
      detail: expect.stringMatching(/email/),
    });
    expect((await world.cloud.api('GET', `/attendees/${id}`)).status).toBe(404);
    await until(
      'announced',
      () => receiver.received.filter((r) => r.body.data.kind === 'deleted_row' && r.body.data.entity_id === id),
      (l) => l.length === 1,
    );
  }, 120_000);

  it('records nothing for a deletion at the edge of an attendee only the edge changed, offline or not', async () => {
    const before = (await conflicts('deleted_row')).length;
    const [quiet, edited] = [await attendeeId('X-7'), await attendeeId('X-8')];
    expect((await edge.node.api('DELETE', `/attendees/${quiet}`)).status).toBe(204);
    await offline();
    expect((await edge.node.api('PUT', `/attendees/${edited}`, { first_name: 'Renamed' })).status).toBe(200);
    expect((await edge.node.api('DELETE', `/attendees/${edited}`)).status).toBe(204);
    await online();
    for (const id of [quiet, edited])
      await until(
        `attendee ${id} gone from the cloud`,
        () => world.cloud.api('GET', `/attendees/${id}`),
        (r) => r.status === 404,
      );
    expect((await conflicts('deleted_row')).length).toBe(before);
    expect((await conflicts('attendee_field')).length).toBe(0);
  }, 120_000);

  it('takes bad uploads without failing the batch: references the cloud never had, deletions of what is gone, a malformed base, a conflicting edit sent twice', async () => {
    const walker = await attendeeId('X-10');
    const ticket = (await world.cloud.api('GET', `/attendees/${walker}/credentials`)).body.data[0].id as number;
    const before = await hallCount();
    expect((await scan(edge.node, venue.entry, 'T-10')).access_granted).toBe(true);
    await online();
    const counted = await until('T-10 counted in the hall', hallCount, (n) => n === before + 1);
    const gone = await attendeeId('X-11');
    const goneTicket = (await world.cloud.api('GET', `/attendees/${gone}/credentials`)).body.data[0].id as number;
    expect((await world.cloud.api('DELETE', `/attendees/${gone}`)).status).toBe(204);
    const malformed = await attendeeId('X-12');
    const ghost = {
      kind: 'access',
      uuid: randomUUID(),
      access_point_id: 999_999,
      access_zone_id: 999_998,
      reader_id: 999_997,
      credential_id: ticket,
      credential_value: 'T-10',
      attendee_id: walker,
      granted: true,
      reason: null,
      movement: 'in',
      scanned_at: new Date(Date.now() + 60_000).toISOString(), // the latest movement of T-10 by scan time
      decided_at: new Date(Date.now() + 60_000).toISOString(),
      source: 'api',
    };
    const edit = change('attendee.updated', {
      id: gone,
      attendee_id: gone,
      first_name: 'Ghost',
      previous_attributes: { first_name: 'Guest11' },
    });
    const items = [
      ghost,
      edit,
      change('attendee.deleted', { id: 888_888, attendee_id: 888_888 }), // never in this project: refused, recorded
      change('attendee.deleted', { id: gone, attendee_id: gone }), // gone already: both sides agree
      change('attendee.deleted', { id: malformed, attendee_id: malformed, previous_attributes: 'not an object' }),
      change('credential.revoked', { id: goneTicket, revoked_at: new Date().toISOString() }), // revoked at the edge, deleted with its holder on the cloud
      change('credential.revoked', { id: 777_777 }), // never in this project: refused, recorded
    ];
    const first = await upload(items);
    expect(first.status, first.text).toBe(200);
    expect(first.body.data).toMatchObject({ accepted: 7, duplicates: 0, refused: 2 });
    const again = await upload(items); // an answer lost on the way: nothing recorded twice
    expect(again.body.data).toMatchObject({ accepted: 0, duplicates: 7 });

    const stored = await eventOnCloud(ghost.uuid);
    expect(stored!.deleted_reference).toBe('reader,access_point,access_zone');
    expect(stored!.review).toBe('unknown_reference'); // never known here: it may be another project's (docs/security.md: a stolen edge)
    const refused = (await conflicts('refused_change')).filter((c) => [888_888, 777_777].includes(c.entity_id));
    expect(refused.map((c) => [c.entity, c.entity_id, c.detail])).toEqual([
      ['attendee', 888_888, 'no attendee 888888 in this project: nothing to delete'],
      ['credential', 777_777, 'no credential 777777 in this project: nothing to revoke'],
    ]);
    const [flag, ...more] = (await conflicts('deleted_reference')).filter((c) => c.event_id === ghost.uuid);
    expect(more).toEqual([]);
    expect(flag).toMatchObject({ entity: 'access_zone', entity_id: 999_998, detail: expect.stringMatching(/never/) });
    expect(flag!.cloud_value).toEqual([
      { entity: 'reader', id: 999_997, deleted_at: null },
      { entity: 'access_point', id: 999_999, deleted_at: null },
      { entity: 'access_zone', id: 999_998, deleted_at: null },
    ]);
    expect(await hallCount()).toBe(counted); // not moved out of the hall into a zone that does not exist

    const rows = (await conflicts('deleted_row')).filter((c) =>
      [gone, 888_888, malformed, goneTicket, 777_777].includes(c.entity_id),
    );
    expect(rows).toEqual([
      expect.objectContaining({
        entity: 'attendee',
        entity_id: gone,
        edge_value: { event: 'attendee.updated', data: edit.data },
      }),
      expect.objectContaining({
        entity: 'credential',
        entity_id: goneTicket,
        edge_value: expect.objectContaining({ event: 'credential.revoked' }),
        detail: expect.stringMatching(/nothing left to revoke/),
      }),
    ]);
    expect((await world.cloud.api('GET', `/attendees/${malformed}`)).status).toBe(404); // a base it cannot read: the deletion applies
    expect((await world.cloud.api('GET', `/attendees/${gone}`)).status).toBe(404); // the edit did not bring it back
  }, 120_000);
});

describe("the edge's replica taking a zone's tombstone", () => {
  it('drops the zone from the types that still grant it: a cloud (or the upstream platform) may send the tombstone before the types change', async () => {
    const gh = await startAppliance();
    try {
      const token = await gh.token();
      const api = (method: string, path: string, body?: unknown) =>
        gh.request(method, `${P}${path}`, { token, ...(body === undefined ? {} : { body }) });
      const keep = (await api('POST', '/access-zones', { name: 'Keep' })).body.data.id as number;
      const drop = (await api('POST', '/access-zones', { name: 'Drop' })).body.data.id as number;
      const type = (await api('POST', '/attendee-types', { name: 'Crew', zone_ids: [keep, drop] })).body.data
        .id as number;
      const projectId = (await api('GET', '')).body.data.id as number;
      const { store, clock, access } = gh.app.services;
      const replica = new Replica(store.db, clock, access.externalChanges);
      expect(await replica.apply(projectId, [{ entity: 'access_zone', op: 'delete', id: drop, version: 1 }])).toEqual({
        rows: 0,
        deletions: 1,
        skipped: 0,
      });
      expect((await api('GET', `/access-zones/${drop}`)).status).toBe(404);
      expect((await api('GET', `/attendee-types/${type}`)).body.data.zone_ids).toEqual([keep]);
    } finally {
      await gh.destroy();
    }
  });
});
