import { randomUUID } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requester } from '../helpers/appliance.js';
import { type Edge, P, scan, seedCloud, SyncWorld, until } from '../helpers/sync-world.js';

// Shared ids between a cloud and an edge as processes (docs/sync.md: ids): an edge never
// gives an id twice, not after a delete and not after it was wiped and enrolled again; the
// cloud never lets an uploaded create overwrite a row it holds; every row an upload writes
// reaches the cloud's own decisions at once.

const BLOCK = 2 ** 32;

describe('shared ids (processes)', () => {
  const world = new SyncWorld();
  let edge: Edge;
  let venue: { zone: number; entry: number; exit: number };

  const onCloud = (path: string, ok: (r: { status: number; body: any }) => boolean, what = path) =>
    until(`${what} on the cloud`, () => world.cloud.api('GET', path), ok);
  const linked = () =>
    until(
      'the edge linked',
      () => edge.node.api('GET', '/sync/status'),
      (r) => r.body.data?.edge_id === edge.id && r.body.data.online === true,
      60_000,
    );
  /** A walk-in at the edge with a ticket of its own; answers both ids. */
  const walkIn = async (name: string, ticket: string) => {
    const made = await edge.node.api('POST', '/attendees', {
      first_name: name,
      last_name: 'Walk-in',
      email: `${name.toLowerCase()}@example.test`,
      attendee_type: 'guest',
    });
    expect(made.status).toBe(201);
    const credential = await edge.node.api('POST', `/attendees/${made.body.data.id}/credentials`, { value: ticket });
    expect(credential.status).toBe(201);
    return { attendee: made.body.data.id as number, credential: credential.body.data.id as number };
  };
  const uploaded = (w: { attendee: number; credential: number }) =>
    onCloud(
      `/attendees/${w.attendee}/credentials`,
      (r) => r.status === 200 && r.body.data.some((c: { id: number }) => c.id === w.credential),
      `walk-in ${w.attendee}`,
    );
  const gone = (attendee: number) => onCloud(`/attendees/${attendee}`, (r) => r.status === 404);

  beforeAll(async () => {
    await world.startCloud();
    venue = await seedCloud(world.cloud, 3);
    edge = await world.addEdge('gate');
    await until(
      'the tickets on the edge',
      () => edge.node.api('GET', '/attendees?search=X-3'),
      (r) => r.body.data?.length === 1,
      60_000,
    );
  }, 120_000);
  afterAll(() => world.destroy());

  it('gives a walk-in made after another was deleted an id of its own, and the cloud holds both apart', async () => {
    const first = await walkIn('Ada', 'WALK-ADA');
    await uploaded(first);
    expect((await edge.node.api('DELETE', `/attendees/${first.attendee}`)).status).toBe(204);
    await gone(first.attendee);
    const second = await walkIn('Bob', 'WALK-BOB');
    expect(second.attendee).not.toBe(first.attendee);
    expect(second.credential).not.toBe(first.credential);
    expect(second.attendee).toBeGreaterThan(first.attendee);
    expect(second.credential).toBeGreaterThan(first.credential);
    await uploaded(second);
    expect((await world.cloud.api('GET', `/attendees/${second.attendee}`)).body.data).toMatchObject({
      first_name: 'Bob',
      email: 'bob@example.test',
    });
    expect((await world.cloud.api('GET', `/attendees/${first.attendee}`)).status).toBe(404);
    expect((await world.cloud.api('GET', '/sync/conflicts')).body.meta.total).toBe(0);
  }, 60_000);

  it('lets the cloud scan a walk-in ticket uploaded from the edge at once, and refuse it once the edge revoked it', async () => {
    const walk = await walkIn('Cleo', 'WALK-CLEO');
    await uploaded(walk);
    expect(await scan(world.cloud, venue.entry, 'WALK-CLEO')).toMatchObject({ access_granted: true });
    expect((await edge.node.api('DELETE', `/credentials/${walk.credential}`)).status).toBe(200);
    await onCloud(
      `/attendees/${walk.attendee}/credentials`,
      (r) => r.body.data?.[0]?.status === 'revoked',
      'the revocation',
    );
    expect(await scan(world.cloud, venue.exit, 'WALK-CLEO')).toMatchObject({
      access_granted: false,
      reason: 'invalid_credential',
    });
  }, 60_000);

  it('records an uploaded create under an id the cloud holds or held as an id conflict, applies none of them, and goes on with the batch', async () => {
    const issued = await world.cloud.api('POST', '/sync/edges', { name: 'crafted' });
    const token = issued.body.data.token as string;
    const base = (issued.body.data.id as number) * BLOCK;
    const protocol = (method: string, path: string, body?: unknown) =>
      requester(world.cloud.url)(method, path, { token, headers: { 'gatehouse-sync-protocol': '1' }, body });
    const upload = (...items: unknown[]) =>
      protocol('POST', `${P}/sync/upload`, { clock: { offset_ms: 0, synchronised: true }, backlog: 0, items });
    const guest = (await world.cloud.api('GET', '/attendees?search=X-1')).body.data[0];
    const ticket = (await world.cloud.api('GET', `/attendees/${guest.id}/credentials`)).body.data[0];
    const change = (event: string, data: Record<string, unknown>) => ({
      kind: 'change',
      uuid: randomUUID(),
      event,
      data,
      created_at: new Date().toISOString(),
    });
    const person = (id: number, first_name: string) => ({
      id,
      first_name,
      last_name: 'Crafted',
      email: null,
      attendee_type_id: null,
      external_id: null,
      status: 'active',
      extra: {},
    });
    const clash = change('attendee.created', person(guest.id, 'Mallory'));
    const clashingTicket = change('credential.created', {
      id: ticket.id,
      attendee_id: guest.id,
      value: 'MALLORY-1',
      kind: 'barcode',
      status: 'active',
    });
    const strayTicket = change('credential.created', {
      id: base + 1,
      attendee_id: guest.id,
      value: 'MALLORY-2',
      kind: 'barcode',
      status: 'active',
    }); // its holder's create clashed
    const fresh = change('attendee.created', person(base + 1, 'Fresh'));
    const first = await upload(clash, clashingTicket, strayTicket, fresh);
    expect(first.status).toBe(200);
    expect(first.body.data).toMatchObject({ accepted: 4, duplicates: 0, refused: 3 });
    expect((await world.cloud.api('GET', `/attendees/${guest.id}`)).body.data).toMatchObject({
      first_name: guest.first_name,
      last_name: guest.last_name,
      email: guest.email,
    });
    expect((await world.cloud.api('GET', `/attendees/${guest.id}/credentials`)).body.data).toEqual([
      expect.objectContaining({ id: ticket.id, value: ticket.value }),
    ]);
    expect((await world.cloud.api('GET', `/attendees/${base + 1}`)).body.data).toMatchObject({ first_name: 'Fresh' });
    // Deleted on the cloud, then created again under the same id: held before, so not applied either.
    expect((await world.cloud.api('DELETE', `/attendees/${base + 1}`)).status).toBe(204);
    const again = change('attendee.created', person(base + 1, 'Again'));
    expect((await upload(again)).body.data).toMatchObject({ accepted: 1, refused: 1 });
    expect((await world.cloud.api('GET', `/attendees/${base + 1}`)).status).toBe(404);
    const conflicts = (await world.cloud.api('GET', '/sync/conflicts?kind=id_conflict')).body.data;
    const sent = (c: { event: string; data: unknown }) => ({ event: c.event, data: c.data });
    expect(conflicts).toEqual([
      expect.objectContaining({
        entity: 'attendee',
        entity_id: guest.id,
        edge_value: sent(clash),
        cloud_value: expect.objectContaining({ first_name: guest.first_name }),
        detail: expect.stringMatching(/already holds/),
      }),
      expect.objectContaining({
        entity: 'credential',
        entity_id: ticket.id,
        edge_value: sent(clashingTicket),
        cloud_value: expect.objectContaining({ value: ticket.value }),
        detail: expect.stringMatching(/already holds/),
      }),
      expect.objectContaining({
        entity: 'credential',
        entity_id: base + 1,
        edge_value: sent(strayTicket),
        cloud_value: null,
        detail: expect.stringMatching(/holder's create/),
      }),
      expect.objectContaining({
        entity: 'attendee',
        entity_id: base + 1,
        edge_value: sent(again),
        cloud_value: null,
        detail: expect.stringMatching(/deleted/),
      }),
    ]);
    // At enrolment the cloud answers the highest ids of the block, the deleted and refused ones included.
    expect((await protocol('GET', '/api/v1/sync/hello')).body.data.highest_ids).toEqual({
      attendee: base + 1,
      credential: base + 1,
    });
  }, 60_000);

  it('gives the first walk-in of an edge wiped and enrolled again with the same token an id above every one the cloud holds from its first life', async () => {
    const kept = await walkIn('Dora', 'WALK-DORA');
    const dropped = await walkIn('Eli', 'WALK-ELI'); // the highest id of its first life, deleted: only the cloud remembers it
    await uploaded(dropped);
    expect((await edge.node.api('DELETE', `/attendees/${dropped.attendee}`)).status).toBe(204);
    await gone(dropped.attendee);
    await edge.node.stop();
    rmSync(edge.node.dataDir, { recursive: true, force: true });
    mkdirSync(edge.node.dataDir);
    await edge.node.start();
    await linked();
    const reborn = await walkIn('Finn', 'WALK-FINN');
    expect(reborn.attendee).toBeGreaterThan(dropped.attendee);
    expect(reborn.credential).toBeGreaterThan(dropped.credential);
    await uploaded(reborn);
    expect((await world.cloud.api('GET', `/attendees/${kept.attendee}`)).body.data).toMatchObject({
      first_name: 'Dora',
      email: 'dora@example.test',
    });
    expect((await world.cloud.api('GET', `/attendees/${reborn.attendee}`)).body.data).toMatchObject({
      first_name: 'Finn',
      email: 'finn@example.test',
    });
    expect(await scan(world.cloud, venue.entry, 'WALK-FINN')).toMatchObject({ access_granted: true });
    expect(await scan(world.cloud, venue.entry, 'WALK-DORA')).toMatchObject({ access_granted: true });
  }, 120_000);
});
