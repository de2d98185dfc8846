import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requester } from '../helpers/appliance.js';
import { type Receiver, startReceiver } from '../helpers/receiver.js';
import { converged, type Edge, P, scan, seedCloud, SyncWorld, until } from '../helpers/sync-world.js';

// A zone's anti-passback and a denial's reason_detail across cloud sync (docs/sync.md;
// docs/decisions.md: "Re-entry and every scan's event"), a cloud and an edge as processes. The
// edge replicates its zones from the cloud, anti_passback with them, so a zone the cloud turns
// it on for refuses a re-entry at the edge; what the edge decided goes up with its
// reason_detail, and the cloud keeps it: in its event log, and in the access.denied it sends.

describe('anti-passback and reason_detail across sync', () => {
  const world = new SyncWorld();
  let edge: Edge;
  let receiver: Receiver;
  let venue: { zone: number; entry: number; exit: number };
  let closed: number;

  const zoneOnEdge = async () =>
    (await edge.node.api('GET', `/access-zones/${venue.zone}`)).body.data as { anti_passback?: boolean } | undefined;

  beforeAll(async () => {
    await world.startCloud({ GATEHOUSE_WEBHOOK_ALLOW_INSECURE: '1' });
    receiver = await startReceiver();
    venue = await seedCloud(world.cloud, 3);
    closed = (
      await world.cloud.api('POST', '/access-points', {
        name: 'Side door',
        access_zone_id: venue.zone,
        is_active: false,
      })
    ).body.data.id as number;
    const projectId = (await world.cloud.api('GET', P)).body.data.id as number;
    expect(
      (
        await world.cloud.api('POST', '/api/v1/webhook/subscribe', {
          url: receiver.url,
          events: ['access.denied'],
          project_id: projectId,
        })
      ).status,
    ).toBe(201);
    edge = await world.addEdge('gate');
  }, 120_000);
  afterAll(async () => {
    await receiver?.close();
    await world.destroy();
  }, 60_000);

  it("replicates a zone's anti_passback to the edge, which decides re-entries by it", async () => {
    await until('the zone on the edge', zoneOnEdge, (z) => z !== undefined);
    expect((await zoneOnEdge())!.anti_passback).toBe(false);
    expect(await scan(edge.node, venue.entry, 'T-1')).toMatchObject({ access_granted: true });
    expect(await scan(edge.node, venue.entry, 'T-1')).toMatchObject({ access_granted: true }); // off: in again
    expect((await world.cloud.api('PUT', `/access-zones/${venue.zone}`, { anti_passback: true })).status).toBe(200);
    await until('anti_passback on the edge', zoneOnEdge, (z) => z?.anti_passback === true);
    expect(await scan(edge.node, venue.entry, 'T-1')).toMatchObject({
      access_granted: false,
      reason: 'not_authorized',
      reason_detail: 'already_inside',
    });
    // The edge's copy is read-only, anti_passback as any other field.
    expect((await edge.node.api('PUT', `/access-zones/${venue.zone}`, { anti_passback: false })).status).toBe(409);
  }, 60_000);

  it("uploads each denial's reason_detail and a zoneless event; the cloud stores them and sends them on", async () => {
    const inactive = await scan(edge.node, closed, 'T-2');
    expect(inactive).toMatchObject({
      access_granted: false,
      reason: 'not_authorized',
      reason_detail: 'access_point_inactive',
    });
    await converged(edge.node, world.cloud);
    const onCloud = (await world.cloud.events()).filter((e) => e.edge_id !== null);
    expect(
      onCloud.filter((e) => e.granted === false).map((e) => [e.reason, e.reason_detail, e.access_zone_id]),
    ).toEqual(
      expect.arrayContaining([
        ['not_authorized', 'already_inside', venue.zone],
        ['not_authorized', 'access_point_inactive', null],
      ]),
    );
    expect(onCloud.filter((e) => e.granted === true).every((e) => e.reason_detail === null)).toBe(true);
    // No zone is nothing to flag: not a deleted or unknown reference, not for review.
    expect(onCloud.find((e) => e.uuid === inactive.event_id)).toMatchObject({
      access_zone_id: null,
      review: null,
      deleted_reference: null,
      duplicate_of: null,
    });
    const hooks = await receiver.waitFor(2, 'access.denied', 20_000);
    expect(hooks.map((h) => h.body.data.reason_detail).sort()).toEqual(['access_point_inactive', 'already_inside']);
    expect(hooks.find((h) => h.body.data.uuid === inactive.event_id)!.body.data).toMatchObject({
      edge_id: edge.id,
      access_point_id: closed,
      reason: 'not_authorized',
    });
    // The zoneless denial moved no one on the cloud either: T-1 is the only one inside.
    expect((await world.cloud.api('GET', `/access-zones/${venue.zone}`)).body.data.current_count).toBe(1);
  }, 90_000);

  it('refuses an upload whose reason or reason_detail is not one the engine gives (422), storing nothing', async () => {
    const request = requester(world.cloud.url);
    const item = (over: Record<string, unknown>) => ({
      kind: 'access',
      uuid: randomUUID(),
      access_point_id: venue.entry,
      access_zone_id: venue.zone,
      reader_id: null,
      credential_id: null,
      credential_value: 'FORGED',
      attendee_id: null,
      granted: false,
      reason: 'not_authorized',
      movement: null,
      scanned_at: new Date().toISOString(),
      decided_at: new Date().toISOString(),
      source: 'api',
      ...over,
    });
    const before = (await world.cloud.events()).length;
    for (const over of [
      { reason_detail: 'because' },
      { reason_detail: 7 },
      { reason: 'anti_passback' },
      { reason: 'x'.repeat(50) },
    ]) {
      const res = await request('POST', `${P}/sync/upload`, {
        token: edge.syncToken,
        headers: { 'Gatehouse-Sync-Protocol': '1' },
        body: { clock: { offset_ms: 0, synchronised: true }, backlog: 0, items: [item(over)] },
      });
      expect(res.status, `${JSON.stringify(over)}: ${res.text}`).toBe(422);
    }
    expect((await world.cloud.events()).length).toBe(before);
  });
});
