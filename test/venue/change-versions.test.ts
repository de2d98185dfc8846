import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAppliance, type TestAppliance } from '../helpers/appliance.js';

// Every change a sync download must see takes a change version (docs/sync.md: "fix the
// version holes first"): a zone taken out of an attendee type, a reader moved behind a gateway.

const A = '/api/v1/projects/default/default';

describe('change versions', () => {
  let gh: TestAppliance;
  let token: string;
  beforeAll(async () => {
    gh = await startAppliance();
    token = await gh.token();
  });
  afterAll(() => gh.destroy());
  const api = async (method: string, path: string, body?: unknown) =>
    (await gh.request(method, `${A}${path}`, { token, ...(body === undefined ? {} : { body }) })).body;
  const announced: string[] = [];

  it('gives an attendee type a new version, and announces it, when a zone is taken out of it (a zone it grants cannot be deleted: docs/venue.md)', async () => {
    const keep = (await api('POST', '/access-zones', { name: 'Keep' })).data.id;
    const drop = (await api('POST', '/access-zones', { name: 'Drop' })).data.id;
    const type = (await api('POST', '/attendee-types', { name: 'Crew', zone_ids: [keep, drop] })).data;
    gh.app.services.bus.on(announced, 'attendee_type.updated', (e) =>
      announced.push(`type ${e.resource.id} v${e.version}`),
    );
    expect((await gh.request('DELETE', `${A}/access-zones/${drop}`, { token })).status).toBe(422);
    await api('PUT', `/attendee-types/${type.id}`, { zone_ids: [keep] });
    expect((await gh.request('DELETE', `${A}/access-zones/${drop}`, { token })).status).toBe(204);
    const after = (await api('GET', `/attendee-types/${type.id}`)).data;
    expect(after.zone_ids).toEqual([keep]);
    expect(after.version).toBeGreaterThan(type.version);
    expect(announced).toContain(`type ${type.id} v${after.version}`);
  });

  it('gives a reader a new version, and announces it, when a gateway takes it or lets it go', async () => {
    const reader = (await api('POST', '/readers', { identifier: `R-V-${Date.now()}` })).data;
    gh.app.services.bus.on(announced, 'reader.updated', (e) => announced.push(`reader ${e.resource.id} v${e.version}`));
    const gateway = (await api('POST', '/gateways', { identifier: `GW-V-${Date.now()}`, reader_ids: [reader.id] }))
      .data;
    const taken = (await api('GET', `/readers/${reader.id}`)).data;
    expect(taken.version).toBeGreaterThan(reader.version);
    expect(announced).toContain(`reader ${reader.id} v${taken.version}`);
    await api('PUT', `/gateways/${gateway.id}`, { reader_ids: [] });
    const released = (await api('GET', `/readers/${reader.id}`)).data;
    expect(released.version).toBeGreaterThan(taken.version);
    await api('PUT', `/gateways/${gateway.id}`, { name: 'Same readers' }); // no reader_ids: nothing moves
    expect((await api('GET', `/readers/${reader.id}`)).data.version).toBe(released.version);
  });
});
