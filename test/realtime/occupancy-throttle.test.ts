import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OCCUPANCY_INTERVAL_MS } from '../../src/realtime/broadcaster.js';
import { client, startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { rawClient, subscribeAs, wsUrl, type RawClient } from '../helpers/pusher.js';

// ZoneOccupancyChanged at most once per interval per zone (docs/realtime.md): a rush of grants
// gives a dashboard a few events, not one per person, and the last one it gets has the final
// count. A lone grant still gets its event.

const A = '/api/v1/projects/default/default';
const CHANNEL = 'private-console.project.default.default.occupancy';
const PEOPLE = 120;

describe('zones on the occupancy channel: counts folded per zone, zones created, changed and deleted', () => {
  let gh: TestAppliance;
  let api: ReturnType<typeof client>;
  let gate: number;
  let zone: number;
  let socket: RawClient;

  beforeAll(async () => {
    gh = await startAppliance();
    const admin = await gh.token();
    api = client(gh, admin);
    zone = (await api.post(`${A}/access-zones`, { name: 'Arena', capacity: 1000 })).body.data.id;
    gate = (await api.post(`${A}/access-points`, { name: 'North gate', access_zone_id: zone })).body.data.id;
    const rows = Array.from({ length: PEOPLE + 1 }, (_, i) => ({
      first_name: 'Guest',
      last_name: `N${i}`,
      credential_value: `T-${i}`,
    }));
    expect((await api.post(`${A}/attendees/import`, rows)).status).toBe(200);
    socket = await rawClient(wsUrl(gh));
    await subscribeAs(gh, socket, { token: admin }, CHANNEL);
  });
  afterAll(async () => {
    socket?.ws.close();
    await gh?.destroy();
  });

  const counts = () =>
    socket.frames
      .filter((f) => f.event === 'ZoneOccupancyChanged' && f.data.access_zone_id === zone)
      .map((f) => f.data.current_count as number);
  const scan = async (i: number) =>
    expect(
      (await api.post(`${A}/access-points/${gate}/scan`, { credential_value: `T-${i}`, scan_type: 'qr' })).body
        .access_granted,
    ).toBe(true);

  it('folds a rush of grants into a few events, the last with the final count', async () => {
    const started = performance.now();
    await Promise.all(Array.from({ length: PEOPLE }, (_, i) => scan(i)));
    const rushMs = performance.now() - started;
    // The trailing event of the last interval comes at most one interval after the last grant.
    for (let waited = 0; counts().at(-1) !== PEOPLE && waited < 5000; waited += 50)
      await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 3 * OCCUPANCY_INTERVAL_MS)); // nothing else is on its way
    const seen = counts();
    expect(seen.at(-1)).toBe(PEOPLE);
    // One at the start of each interval the rush spanned, one at its end: never one per grant.
    expect(seen.length).toBeLessThanOrEqual(2 + Math.ceil((rushMs + OCCUPANCY_INTERVAL_MS) / OCCUPANCY_INTERVAL_MS));
    expect(seen.length).toBeLessThan(PEOPLE);
    expect(seen).toEqual([...seen].sort((a, b) => a - b)); // in order: a later event never shows an older count
  });

  it('still tells a lone grant, with the count it made', async () => {
    await new Promise((r) => setTimeout(r, 2 * OCCUPANCY_INTERVAL_MS));
    socket.frames.length = 0; // the rush's events, read above
    await scan(PEOPLE);
    const frame = await socket.next('ZoneOccupancyChanged', 5000);
    expect(frame.data).toEqual({
      access_zone_id: zone,
      current_count: PEOPLE + 1,
      capacity: 1000,
      available: 1000 - PEOPLE - 1,
      timestamp: expect.any(String),
    });
    await new Promise((r) => setTimeout(r, 3 * OCCUPANCY_INTERVAL_MS));
    expect(counts()).toEqual([]); // one grant, one event
  });

  it('announces a zone created, changed or deleted on the same channel, with its count now', async () => {
    socket.frames.length = 0;
    const made = (await api.post(`${A}/access-zones`, { name: 'Terrace', capacity: 40 })).body.data;
    expect((await socket.next('AccessZoneUpdated', 5000)).data).toEqual({ ...made, current_count: 0, available: 40 });
    const renamed = (await api.put(`${A}/access-zones/${zone}`, { name: 'Main arena', capacity: 2000 })).body.data;
    // The arena's count is the occupancy tracker's (the people admitted above), not a stale column.
    expect((await socket.next('AccessZoneUpdated', 5000)).data).toEqual({
      ...renamed,
      current_count: PEOPLE + 1,
      available: 2000 - PEOPLE - 1,
    });
    expect((await api.del(`${A}/access-zones/${made.id}`)).status).toBe(204);
    expect((await socket.next('AccessZoneDeleted', 5000)).data).toEqual({ id: made.id });
  });
});
