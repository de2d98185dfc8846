import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Edge, type Node, scan, seedCloud, SyncWorld, until } from '../helpers/sync-world.js';

// Conflicts (docs/sync.md), with a cloud and two edges as processes: the same ticket at
// two offline edges, a revocation during an outage and one while online, an attendee changed
// on both sides. Nothing is flagged without cause.

const total = async (node: Node) => (await node.api('GET', '/access-events?per_page=1')).body.meta.total as number;
const eventOn = async (node: Node, uuid: string) => (await node.events()).find((e) => e.uuid === uuid);
const down = (edge: Edge) =>
  until(
    `${edge.node.name}'s link down`,
    () => edge.node.api('GET', '/sync/status'),
    (r) => r.body.data.online === false,
    20_000,
  );
const drained = (edge: Edge) =>
  until(
    `${edge.node.name} uploaded everything`,
    () => edge.node.api('GET', '/sync/status'),
    (r) => r.body.data.online === true && r.body.data.backlog === 0,
    30_000,
  );

describe('sync conflicts (processes)', () => {
  const world = new SyncWorld();
  let a: Edge;
  let b: Edge;
  let venue: { zone: number; entry: number; exit: number };

  beforeAll(async () => {
    await world.startCloud();
    venue = await seedCloud(world.cloud, 50);
    // The hall refuses re-entry (a zone's choice, off unless asked): a re-entry at one edge is a denial there.
    expect((await world.cloud.api('PUT', `/access-zones/${venue.zone}`, { anti_passback: true })).status).toBe(200);
    // A long poll far longer than the revocation bound below: only the push path can meet it.
    a = await world.addEdge('north', { GATEHOUSE_SYNC_LONG_POLL_SECONDS: '30' });
    b = await world.addEdge('south');
    for (const e of [a, b]) {
      await until(
        'the tickets on the edge',
        () => e.node.api('GET', '/attendees?search=X-50'),
        (r) => r.body.data?.length === 1,
        60_000,
      );
      await until(
        "the hall's anti-passback on the edge",
        () => e.node.api('GET', `/access-zones/${venue.zone}`),
        (r) => r.body.data?.anti_passback === true,
        60_000,
      );
    }
  }, 120_000);
  afterAll(() => world.destroy());

  it('stores the same ticket admitted at two offline edges once each, flags the later as a duplicate entry and counts the person once', async () => {
    a.proxy.set('cut');
    b.proxy.set('cut');
    await Promise.all([down(a), down(b)]);
    const first = await scan(a.node, venue.entry, 'T-5');
    await new Promise((r) => setTimeout(r, 20));
    const second = await scan(b.node, venue.entry, 'T-5');
    expect([first.access_granted, second.access_granted]).toEqual([true, true]);
    // The later one reaches the cloud first: it is flagged all the same once the earlier arrives.
    b.proxy.set('pass');
    await drained(b);
    a.proxy.set('pass');
    await drained(a);
    const later = await until(
      'the flag',
      () => eventOn(world.cloud, second.event_id),
      (e) => e?.duplicate_of === first.event_id,
    );
    expect(later!.edge_id).toBe(b.id);
    expect((await eventOn(world.cloud, first.event_id))!.duplicate_of).toBeNull();
    const conflicts = (await world.cloud.api('GET', '/sync/conflicts?kind=duplicate_entry')).body.data;
    expect(conflicts).toEqual([
      expect.objectContaining({
        event_id: second.event_id,
        duplicate_of: first.event_id,
        edge_id: b.id,
        reviewed_at: null,
      }),
    ]);
    expect((await world.cloud.api('GET', `/access-zones/${venue.zone}`)).body.data.current_count).toBe(1);
  }, 120_000);

  it('flags nothing without cause: an exit between two entries at two edges, one edge re-admitting after an exit, a re-entry refused by anti-passback', async () => {
    const flagged = (await world.cloud.api('GET', '/sync/conflicts')).body.meta.total as number;
    a.proxy.set('cut');
    b.proxy.set('cut');
    await Promise.all([down(a), down(b)]);
    await scan(a.node, venue.entry, 'T-7');
    await scan(a.node, venue.exit, 'T-7');
    await new Promise((r) => setTimeout(r, 20));
    await scan(b.node, venue.entry, 'T-7'); // after the exit at the other edge
    await scan(a.node, venue.entry, 'T-8');
    const again = await scan(a.node, venue.entry, 'T-8'); // the hall's anti-passback at the same edge
    expect(again.access_granted).toBe(false);
    await scan(a.node, venue.exit, 'T-8');
    await scan(a.node, venue.entry, 'T-8'); // the same edge, after an exit
    const expected = (await total(world.cloud)) + 7;
    // The other edge's entry arrives first; the exit between them comes later in the same batch as the first entry.
    b.proxy.set('pass');
    await drained(b);
    a.proxy.set('pass');
    await until(
      'all uploaded',
      () => total(world.cloud),
      (n) => n === expected,
    );
    expect((await world.cloud.api('GET', '/sync/conflicts')).body.meta.total).toBe(flagged);
    expect((await world.cloud.events()).filter((e) => e.duplicate_of !== null).length).toBe(1); // the first test's only
  }, 120_000);

  it('orders an exit uploaded before the entry it follows by scan time: the person is not counted in', async () => {
    const count = async () =>
      (await world.cloud.api('GET', `/access-zones/${venue.zone}`)).body.data.current_count as number;
    await Promise.all([drained(a), drained(b)]);
    const before = await count();
    a.proxy.set('cut');
    b.proxy.set('cut');
    await Promise.all([down(a), down(b)]);
    const entry = await scan(a.node, venue.entry, 'T-20');
    await new Promise((r) => setTimeout(r, 20));
    const exit = await scan(b.node, venue.exit, 'T-20');
    expect([entry.access_granted, exit.access_granted]).toEqual([true, true]);
    b.proxy.set('pass'); // the exit arrives first
    await drained(b);
    a.proxy.set('pass');
    await drained(a);
    await until(
      'both on the cloud',
      async () =>
        (await world.cloud.events()).filter((e) => e.uuid === entry.event_id || e.uuid === exit.event_id).length,
      (n) => n === 2,
    );
    expect(await count()).toBe(before);
    const inOrder = (
      await world.cloud.api(
        'GET',
        `/access-events?attendee_id=${(await world.cloud.events()).find((e) => e.uuid === entry.event_id)!.attendee_id}`,
      )
    ).body.data;
    expect(inOrder.map((e: { uuid: string }) => e.uuid).slice(0, 2)).toEqual([exit.event_id, entry.event_id]); // newest first, by scan time
  }, 60_000);

  it('keeps an admission made during an outage after a revocation on the cloud, flags it for review, and refuses the next scan after sync', async () => {
    a.proxy.set('cut');
    await down(a);
    const attendee = (await world.cloud.api('GET', '/attendees?search=X-9')).body.data[0];
    const credential = (await world.cloud.api('GET', `/attendees/${attendee.id}/credentials`)).body.data[0];
    expect((await world.cloud.api('DELETE', `/credentials/${credential.id}`)).status).toBe(200);
    await new Promise((r) => setTimeout(r, 20));
    const admitted = await scan(a.node, venue.entry, 'T-9');
    expect(admitted.access_granted).toBe(true); // the edge could not know
    a.proxy.set('pass');
    const stored = await until(
      'the admission on the cloud',
      () => eventOn(world.cloud, admitted.event_id),
      (e) => e !== undefined,
    );
    expect(stored).toMatchObject({ granted: true, review: 'revoked_credential', edge_id: a.id });
    const conflicts = (await world.cloud.api('GET', '/sync/conflicts?kind=revoked_credential')).body.data;
    expect(conflicts.map((c: { event_id: string }) => c.event_id)).toContain(admitted.event_id);
    const next = await until(
      'the refusal at the edge',
      () => scan(a.node, venue.exit, 'T-9'),
      (d) => !d.access_granted,
      20_000,
    );
    expect(next.reason).toBe('invalid_credential'); // the spec's reason for a revoked credential
    // Reviewed by staff on the cloud.
    const id = conflicts.find((c: { event_id: string }) => c.event_id === admitted.event_id).id;
    expect((await world.cloud.api('POST', `/sync/conflicts/${id}/review`)).body.data.reviewed_at).not.toBeNull();
    expect((await world.cloud.api('GET', '/sync/conflicts?kind=revoked_credential&reviewed=false')).body.data).toEqual(
      [],
    );
  }, 120_000);

  it('refuses a credential revoked on the cloud at an online edge by the push, long before its long poll would end', async () => {
    await drained(a);
    const attendee = (await world.cloud.api('GET', '/attendees?search=X-11')).body.data[0];
    const credential = (await world.cloud.api('GET', `/attendees/${attendee.id}/credentials`)).body.data[0];
    expect((await scan(a.node, venue.exit, 'T-11')).access_granted).toBe(true);
    await new Promise((r) => setTimeout(r, 1000)); // the edge's download and revocation watch are now waiting in their long polls
    const revoked = Date.now();
    expect((await world.cloud.api('DELETE', `/credentials/${credential.id}`)).status).toBe(200);
    await until(
      'the refusal',
      () => scan(a.node, venue.exit, 'T-11'),
      (d) => !d.access_granted,
      15_000,
      25,
    );
    const ms = Date.now() - revoked;
    console.log(
      `sync: revocation on the cloud -> refused at the online edge in ${ms} ms (the edge's long poll is 30 s)`,
    );
    expect(ms).toBeLessThan(15_000);
  }, 60_000);

  it('merges an attendee changed on both sides: the cloud wins per field, the conflict is recorded, both sides end the same', async () => {
    const cloudAttendee = (await world.cloud.api('GET', '/attendees?search=X-12')).body.data[0];
    a.proxy.set('cut');
    await down(a);
    expect(
      (
        await a.node.api('PUT', `/attendees/${cloudAttendee.id}`, {
          first_name: 'EdgeName',
          email: 'edge@example.test',
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await world.cloud.api('PUT', `/attendees/${cloudAttendee.id}`, {
          first_name: 'CloudName',
          last_name: 'CloudLast',
        })
      ).status,
    ).toBe(200);
    a.proxy.set('pass');
    const conflict = await until(
      'the field conflict',
      async () =>
        (await world.cloud.api('GET', '/sync/conflicts?kind=attendee_field')).body.data as Record<string, unknown>[],
      (list) => list.some((c) => c.entity_id === cloudAttendee.id),
    );
    expect(conflict.find((c) => c.entity_id === cloudAttendee.id)).toMatchObject({
      field: 'first_name',
      edge_value: 'EdgeName',
      cloud_value: 'CloudName',
      edge_id: a.id,
    });
    const merged = { first_name: 'CloudName', last_name: 'CloudLast', email: 'edge@example.test' };
    expect((await world.cloud.api('GET', `/attendees/${cloudAttendee.id}`)).body.data).toMatchObject(merged);
    await until(
      'the edge to have the merged attendee',
      async () => (await a.node.api('GET', `/attendees/${cloudAttendee.id}`)).body.data,
      (d) => d.first_name === 'CloudName' && d.email === 'edge@example.test' && d.last_name === 'CloudLast',
    );
  }, 60_000);

  it('takes what an edge made offline when the cloud gave its external id away and deleted its type meanwhile: those fields refused and recorded, the rest applied, the scans behind it uploaded, both sides the same', async () => {
    await world.cloud.api('POST', '/attendee-types', { name: 'Temp', zone_ids: [venue.zone] });
    await until(
      'the new type on the edge',
      () => a.node.api('GET', '/attendee-types'),
      (r) => (r.body.data as { slug: string }[]).some((t) => t.slug === 'temp'),
    );
    const existing = (await world.cloud.api('GET', '/attendees?search=X-13')).body.data[0];
    a.proxy.set('cut');
    await down(a);
    const made = await a.node.api('POST', '/attendees', {
      first_name: 'Walk',
      last_name: 'In',
      attendee_type: 'temp',
      external_id: 'EXT-R1',
    });
    expect(made.status, made.text).toBe(201);
    const madeId = made.body.data.id as number;
    expect(
      (await a.node.api('PUT', `/attendees/${existing.id}`, { external_id: 'EXT-R2', first_name: 'Renamed' })).status,
    ).toBe(200);
    const behind = await scan(a.node, venue.entry, 'T-14'); // an access event queued behind the refused fields
    // Meanwhile on the cloud: both external ids go to new attendees, and the type goes.
    for (const ext of ['EXT-R1', 'EXT-R2'])
      expect(
        (
          await world.cloud.api('POST', '/attendees', {
            first_name: ext,
            last_name: 'Cloud',
            attendee_type: 'guest',
            external_id: ext,
          })
        ).status,
      ).toBe(201);
    const temp = (await world.cloud.api('GET', '/attendee-types')).body.data.find(
      (t: { slug: string }) => t.slug === 'temp',
    );
    expect((await world.cloud.api('DELETE', `/attendee-types/${temp.id}`)).status).toBe(204);

    a.proxy.set('pass');
    await drained(a);
    expect(await eventOn(world.cloud, behind.event_id)).toMatchObject({ uuid: behind.event_id, edge_id: a.id });
    expect((await world.cloud.api('GET', `/attendees/${madeId}`)).body.data).toMatchObject({
      first_name: 'Walk',
      last_name: 'In',
      external_id: null,
      attendee_type: null,
    });
    expect((await world.cloud.api('GET', `/attendees/${existing.id}`)).body.data).toMatchObject({
      first_name: 'Renamed',
      external_id: 'X-13',
    });
    const refused = (await world.cloud.api('GET', '/sync/conflicts?kind=refused_change')).body.data as Record<
      string,
      unknown
    >[];
    expect(refused).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          edge_id: a.id,
          entity: 'attendee',
          entity_id: madeId,
          field: 'external_id',
          edge_value: 'EXT-R1',
          cloud_value: null,
          detail: expect.stringMatching(/holds this external id/),
        }),
        expect.objectContaining({
          edge_id: a.id,
          entity: 'attendee',
          entity_id: madeId,
          field: 'attendee_type_id',
          edge_value: temp.id,
          cloud_value: null,
          detail: expect.stringMatching(/no attendee type/),
        }),
        expect.objectContaining({
          edge_id: a.id,
          entity: 'attendee',
          entity_id: existing.id,
          field: 'external_id',
          edge_value: 'EXT-R2',
          cloud_value: 'X-13',
        }),
      ]),
    );
    expect(refused).toHaveLength(3);
    // The edge hears the cloud's rows back: the refused values do not stay there.
    await until(
      "the edge to have the cloud's attendees",
      async () => [
        (await a.node.api('GET', `/attendees/${madeId}`)).body.data,
        (await a.node.api('GET', `/attendees/${existing.id}`)).body.data,
      ],
      ([walkIn, renamed]) =>
        walkIn?.external_id === null &&
        walkIn?.attendee_type === null &&
        renamed?.external_id === 'X-13' &&
        renamed?.first_name === 'Renamed',
    );
  }, 90_000);
});
