import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cutLink,
  drained,
  type Edge,
  mqttReader,
  type Node,
  scan,
  seedCloud,
  SyncWorld,
  until,
} from '../helpers/sync-world.js';

// Clock offsets that tell the truth (docs/sync.md: clocks): each event carries the offset in
// force when the edge decided it, measured against the monotonic clock, so a step made while
// offline is on the events decided after it, and a corrected clock is not blamed for the old
// error. The cloud orders a holder's movements and checks revocations on its own clock
// (effective_at). Real processes; the edge's clock is stepped by a preload.

const HOURS_3 = 3 * 3600_000;

async function onCloud(cloud: Node, uuid: string): Promise<Record<string, any>> {
  const found = await until(
    `event ${uuid} on the cloud`,
    async () => (await cloud.events()).find((e) => e.uuid === uuid),
    (e) => e !== undefined,
    30_000,
    300,
  );
  return found!;
}

describe('clock offsets on uploaded events (processes)', () => {
  const world = new SyncWorld();
  let edge: Edge;
  let venue: { zone: number; entry: number; exit: number };

  beforeAll(async () => {
    await world.startCloud();
    venue = await seedCloud(world.cloud, 50);
    expect(
      (
        await world.cloud.api('POST', '/readers', {
          identifier: 'GATE-CLOCK',
          type: 'qr',
          access_point_id: venue.entry,
        })
      ).status,
    ).toBe(201);
    edge = await world.addEdge('south');
    await until(
      'the tickets and the reader on the edge',
      async () => [
        (await edge.node.api('GET', '/attendees?search=X-50')).body.data?.length,
        (await edge.node.api('GET', '/readers')).body.data?.length,
      ],
      ([a, r]) => a === 1 && r === 1,
      60_000,
    );
    await until(
      'a measured clock',
      () => edge.node.api('GET', '/sync/status'),
      (r) => r.body.data.clock_synchronised === true,
      30_000,
    );
  }, 120_000);
  afterAll(() => world.destroy());

  const cut = () => cutLink(edge);

  it('stamps each event with the offset in force when it was decided: a step offline, then the clock corrected', async () => {
    await cut();
    const before = await scan(edge.node, venue.entry, 'T-1');
    await edge.node.setClock(-HOURS_3); // NTP steps the clock 3 h back while the link is down
    const reader = await mqttReader(edge.node, 'GATE-CLOCK');
    const stepped = [await scan(edge.node, venue.exit, 'T-1'), await reader.scan('T-2')];
    const status = (await edge.node.api('GET', '/sync/status')).body.data;
    expect(Math.abs(status.clock_offset_ms - HOURS_3)).toBeLessThan(2000);
    expect(status.clock_synchronised).toBe(false);
    edge.proxy.set('pass');
    await drained(edge.node);
    await edge.node.setClock(0); // the clock corrected
    const fixed = [await scan(edge.node, venue.entry, 'T-3'), await reader.scan('T-4')];
    await reader.close();
    await drained(edge.node);

    const first = await onCloud(world.cloud, before.event_id);
    expect(Math.abs(first.clock_offset_ms)).toBeLessThan(2000);
    expect(first.clock_unsynchronised).toBe(false);
    for (const s of stepped) {
      const e = await onCloud(world.cloud, s.event_id);
      expect(Math.abs(e.clock_offset_ms - HOURS_3)).toBeLessThan(2000);
      expect(e.clock_unsynchronised).toBe(true);
      // The raw time stays the edge's; effective_at is on the cloud's clock.
      expect(Date.parse(e.scanned_at)).toBeLessThan(Date.now() - HOURS_3 + 60_000);
      expect(Math.abs(Date.parse(e.effective_at) - Date.parse(first.scanned_at))).toBeLessThan(60_000);
    }
    for (const s of fixed) {
      const e = await onCloud(world.cloud, s.event_id);
      expect(Math.abs(e.clock_offset_ms)).toBeLessThan(2000);
      expect(e.clock_unsynchronised).toBe(false);
    }
  }, 120_000);

  it('flags an admission after a revocation with the edge 3 h behind, and not one before it with the edge 3 h ahead', async () => {
    // 3 h behind: the cloud revokes T-10, then the offline edge (which has not heard) admits it.
    await cut();
    await edge.node.setClock(-HOURS_3);
    const t10 = (await world.cloud.api('GET', '/attendees?search=X-10')).body.data[0];
    const c10 = (await world.cloud.api('GET', `/attendees/${t10.id}/credentials`)).body.data[0];
    expect((await world.cloud.api('DELETE', `/credentials/${c10.id}`)).status).toBeLessThan(300);
    await new Promise((r) => setTimeout(r, 50));
    const after = await scan(edge.node, venue.entry, 'T-10');
    expect(after.access_granted).toBe(true);
    // 3 h ahead: the offline edge admits T-11, then the cloud revokes it.
    await edge.node.setClock(HOURS_3);
    const before = await scan(edge.node, venue.entry, 'T-11');
    expect(before.access_granted).toBe(true);
    await new Promise((r) => setTimeout(r, 50));
    const t11 = (await world.cloud.api('GET', '/attendees?search=X-11')).body.data[0];
    const c11 = (await world.cloud.api('GET', `/attendees/${t11.id}/credentials`)).body.data[0];
    expect((await world.cloud.api('DELETE', `/credentials/${c11.id}`)).status).toBeLessThan(300);
    edge.proxy.set('pass');
    await drained(edge.node);
    expect((await onCloud(world.cloud, after.event_id)).review).toBe('revoked_credential');
    expect((await onCloud(world.cloud, before.event_id)).review).toBeNull();
    await edge.node.setClock(0);
  }, 120_000);

  it("counts a holder where the cloud's clock says they are: an entry at a late edge after an exit elsewhere", async () => {
    // T-20 enters and leaves at the cloud's own doors; then, 3 h behind and offline, the edge lets them in again.
    expect((await scan(world.cloud, venue.entry, 'T-20')).access_granted).toBe(true);
    expect((await scan(world.cloud, venue.exit, 'T-20')).access_granted).toBe(true);
    const count = async () =>
      (await world.cloud.api('GET', `/access-zones/${venue.zone}`)).body.data.current_count as number;
    const inside = await count();
    await cut();
    await edge.node.setClock(-HOURS_3);
    await new Promise((r) => setTimeout(r, 50));
    const entry = await scan(edge.node, venue.entry, 'T-20');
    expect(entry.access_granted).toBe(true);
    edge.proxy.set('pass');
    await drained(edge.node);
    await onCloud(world.cloud, entry.event_id);
    expect(await count()).toBe(inside + 1);
    await edge.node.setClock(0);
  }, 120_000);
});
