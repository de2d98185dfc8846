import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Edge, scan, seedCloud, SyncWorld, until } from '../helpers/sync-world.js';

// Shared ids between a cloud and an edge as processes (docs/sync.md: ids): an edge never
// gives an id twice, not after a delete and not after it was wiped and enrolled again; the
// cloud never lets an uploaded create overwrite a row it holds; every row an upload writes
// reaches the cloud's own decisions at once.

describe('shared ids (processes)', () => {
  const world = new SyncWorld();
  let edge: Edge;
  let venue: { zone: number; entry: number; exit: number };

  const onCloud = (path: string, ok: (r: { status: number; body: any }) => boolean, what = path) => until(`${what} on the cloud`, () => world.cloud.api('GET', path), ok);
  /** A walk-in at the edge with a ticket of its own; answers both ids. */
  const walkIn = async (name: string, ticket: string) => {
    const made = await edge.node.api('POST', '/attendees', { first_name: name, last_name: 'Walk-in', email: `${name.toLowerCase()}@example.test`, attendee_type: 'guest' });
    expect(made.status).toBe(201);
    const credential = await edge.node.api('POST', `/attendees/${made.body.data.id}/credentials`, { value: ticket });
    expect(credential.status).toBe(201);
    return { attendee: made.body.data.id as number, credential: credential.body.data.id as number };
  };
  const uploaded = (w: { attendee: number; credential: number }) =>
    onCloud(`/attendees/${w.attendee}/credentials`, (r) => r.status === 200 && r.body.data.some((c: { id: number }) => c.id === w.credential), `walk-in ${w.attendee}`);

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

  it('lets the cloud scan a walk-in ticket uploaded from the edge at once, and refuse it once the edge revoked it', async () => {
    const walk = await walkIn('Cleo', 'WALK-CLEO');
    await uploaded(walk);
    expect(await scan(world.cloud, venue.entry, 'WALK-CLEO')).toMatchObject({ access_granted: true });
    expect((await edge.node.api('DELETE', `/credentials/${walk.credential}`)).status).toBe(200);
    await onCloud(`/attendees/${walk.attendee}/credentials`, (r) => r.body.data?.[0]?.status === 'revoked', 'the revocation');
    expect(await scan(world.cloud, venue.exit, 'WALK-CLEO')).toMatchObject({ access_granted: false, reason: 'invalid_credential' });
  }, 60_000);
});
