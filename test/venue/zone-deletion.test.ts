import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startAppliance, type TestAppliance } from '../helpers/appliance.js';

// Deleting an access zone an attendee type still grants (docs/venue.md: access zones;
// docs/decisions.md): 422 naming the types, nothing changed, nothing announced. The operator
// learns which ticket types would lose access and takes the zone out of them first.

const A = '/api/v1/projects/default/default';

describe('deleting an access zone', () => {
  let gh: TestAppliance;
  let api: ReturnType<typeof client>;
  const announced: string[] = [];

  beforeAll(async () => {
    gh = await startAppliance();
    api = client(gh, await gh.token());
    for (const name of ['access_zone.deleted', 'attendee_type.updated'] as const)
      gh.app.services.bus.on(announced, name, () => announced.push(name));
  });
  afterAll(() => gh.destroy());

  const zone = async (name: string) => (await api.post(`${A}/access-zones`, { name })).body.data.id as number;
  const type = async (name: string, slug: string, zoneIds: number[]) =>
    (await api.post(`${A}/attendee-types`, { name, slug, zone_ids: zoneIds })).body.data;

  it('refuses with 422 while attendee types grant it, naming each type, and changes nothing', async () => {
    const lounge = await zone('Lounge');
    const hall = await zone('Hall');
    const vip = await type('VIP', 'vip', [hall, lounge]);
    const crew = await type('Crew', 'crew', [lounge]);
    await type('Guest', 'guest', [hall]);
    announced.length = 0;
    const res = await api.del(`${A}/access-zones/${lounge}`);
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      message:
        'The access zone is still granted by the attendee types VIP (vip), Crew (crew): take it out of their zone_ids first.',
      errors: {
        attendee_types: [
          `The attendee type VIP (vip, id ${vip.id}) grants this zone.`,
          `The attendee type Crew (crew, id ${crew.id}) grants this zone.`,
        ],
      },
    });
    expect((await api.get(`${A}/access-zones/${lounge}`)).status).toBe(200);
    for (const t of [vip, crew]) {
      const after = (await api.get(`${A}/attendee-types/${t.id}`)).body.data;
      expect(after.version).toBe(t.version);
      expect(after.zone_ids).toContain(lounge);
    }
    expect(announced).toEqual([]);
  });

  it('deletes it once no type grants it any more', async () => {
    const annex = await zone('Annex');
    const staff = await type('Staff', 'staff', [annex]);
    expect((await api.del(`${A}/access-zones/${annex}`)).status).toBe(422);
    expect((await api.put(`${A}/attendee-types/${staff.id}`, { zone_ids: [] })).status).toBe(200);
    announced.length = 0;
    expect((await api.del(`${A}/access-zones/${annex}`)).status).toBe(204);
    expect((await api.get(`${A}/access-zones/${annex}`)).status).toBe(404);
    expect(announced).toEqual(['access_zone.deleted']);
  });

  it('answers 409 first for access points leading into it, as before, and 404 for a zone that does not exist', async () => {
    const stage = await zone('Stage');
    await type('Band', 'band', [stage]);
    await api.post(`${A}/access-points`, { name: 'Stage door', access_zone_id: stage });
    const used = await api.del(`${A}/access-zones/${stage}`);
    expect(used.status).toBe(409);
    expect(used.body.message).toMatch(/used by 1 access point/);
    expect((await api.del(`${A}/access-zones/999999`)).status).toBe(404);
  });
});
