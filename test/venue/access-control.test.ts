import BetterSqlite3 from 'better-sqlite3';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, createUser, startAppliance, type TestAppliance } from '../helpers/appliance.js';

const A = '/api/v1/projects/default/default';
const B = '/api/v1/projects/default/other';

describe('access zones, access points and readers', () => {
  let gh: TestAppliance;
  let admin: string;
  const events: { name: string; payload: any }[] = [];
  let api: ReturnType<typeof client>;

  beforeAll(async () => {
    gh = await startAppliance();
    admin = await gh.token();
    api = client(gh, admin);
    await api.post('/api/v1/projects', { name: 'Other', slug: 'other' });
    const bus = gh.app.services.bus;
    for (const name of [
      'access_zone.created',
      'access_zone.updated',
      'access_zone.deleted',
      'access_point.created',
      'access_point.updated',
      'access_point.deleted',
      'reader.created',
      'reader.updated',
      'reader.deleted',
    ] as const) {
      bus.on(events, name, (payload) => events.push({ name, payload }));
    }
  });
  afterAll(() => gh.destroy());

  it('creates, lists, shows, updates and deletes an access zone, with its capacity view', async () => {
    const created = await api.post(`${A}/access-zones`, { name: 'Main Hall', capacity: 2, requires_ticket: true });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({
      name: 'Main Hall',
      slug: 'main-hall',
      capacity: 2,
      current_count: 0,
      available: 2,
      requires_ticket: true,
    });
    const id = created.body.data.id;
    expect((await api.get(`${A}/access-zones`)).body.data.map((z: { id: number }) => z.id)).toContain(id);
    const capacity = await api.get(`${A}/access-zones/${id}/capacity`);
    expect(capacity.body.data).toEqual({ id, name: 'Main Hall', capacity: 2, current_count: 0, available: 2 });
    const unlimited = await api.put(`${A}/access-zones/${id}`, { capacity: null });
    expect(unlimited.body.data).toMatchObject({ capacity: null, available: null, name: 'Main Hall' });
    expect((await api.del(`${A}/access-zones/${id}`)).status).toBe(204);
    expect((await api.get(`${A}/access-zones/${id}`)).status).toBe(404);
  });

  it('refuses a negative capacity, a taken slug and unknown fields with 422 field errors', async () => {
    await api.post(`${A}/access-zones`, { name: 'VIP', slug: 'vip' });
    const negative = await api.post(`${A}/access-zones`, { name: 'Bad', capacity: -1 });
    expect(negative.status).toBe(422);
    expect(Object.keys(negative.body.errors)).toEqual(['capacity']);
    const dup = await api.post(`${A}/access-zones`, { name: 'Other VIP', slug: 'vip' });
    expect(dup.status).toBe(422);
    expect(dup.body.errors.slug).toEqual(['The slug has already been taken.']);
    const unknown = await api.post(`${A}/access-zones`, { name: 'X', colour: 'red' });
    expect(unknown.body.errors.colour).toEqual(['The colour field is not allowed.']);
    // The same slug in another project is fine.
    expect((await api.post(`${B}/access-zones`, { name: 'VIP', slug: 'vip' })).status).toBe(201);
  });

  it('creates an access point from name and location alone, as the spec shows, and embeds its readers', async () => {
    const res = await api.post(`${A}/access-points`, { name: 'North Gate', location: 'Car park side' });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({
      name: 'North Gate',
      slug: 'north-gate',
      location: 'Car park side',
      access_zone_id: null,
      direction: 'in',
      is_active: true,
      readers: [],
    });
    const zone = (await api.post(`${A}/access-zones`, { name: 'Arena' })).body.data;
    const updated = await api.put(`${A}/access-points/${res.body.data.id}`, {
      access_zone_id: zone.id,
      direction: 'both',
      is_active: false,
    });
    expect(updated.body.data).toMatchObject({
      access_zone_id: zone.id,
      direction: 'both',
      is_active: false,
      name: 'North Gate',
    });
    const reader = await api.post(`${A}/readers`, {
      identifier: 'NG-01',
      type: 'qr',
      access_point_id: res.body.data.id,
    });
    expect(reader.status).toBe(201);
    const shown = await api.get(`${A}/access-points/${res.body.data.id}`);
    expect(shown.body.data.readers).toEqual([
      expect.objectContaining({ id: reader.body.data.id, identifier: 'NG-01', type: 'qr' }),
    ]);
  });

  it('refuses a zone from another project, a bad direction, and deleting a zone still in use (409), changing nothing', async () => {
    const foreignZone = (await api.post(`${B}/access-zones`, { name: 'Foreign' })).body.data;
    const cross = await api.post(`${A}/access-points`, { name: 'Sneaky', access_zone_id: foreignZone.id });
    expect(cross.status).toBe(422);
    expect(cross.body.errors.access_zone_id).toEqual(['The selected access zone id is invalid.']);
    const direction = await api.post(`${A}/access-points`, { name: 'Odd', direction: 'sideways' });
    expect(direction.status).toBe(422);
    expect((await api.get(`${A}/access-points`)).body.data.map((p: { name: string }) => p.name)).not.toContain(
      'Sneaky',
    );

    const zone = (await api.post(`${A}/access-zones`, { name: 'Used' })).body.data;
    await api.post(`${A}/access-points`, { name: 'Into used', access_zone_id: zone.id });
    const conflict = await api.del(`${A}/access-zones/${zone.id}`);
    expect(conflict.status).toBe(409);
    expect(conflict.body.message).toMatch(/used by 1 access point/);
    expect((await api.get(`${A}/access-zones/${zone.id}`)).status).toBe(200);
  });

  it('keeps reader identifiers unique per project and reader types to barcode, qr, rfid, nfc', async () => {
    expect((await api.post(`${A}/readers`, { identifier: 'R-1', type: 'rfid' })).status).toBe(201);
    const dup = await api.post(`${A}/readers`, { identifier: 'R-1', type: 'nfc' });
    expect(dup.status).toBe(422);
    expect(dup.body.errors.identifier).toEqual(['The identifier has already been taken.']);
    expect((await api.post(`${A}/readers`, { identifier: 'R-2', type: 'laser' })).status).toBe(422);
    expect((await api.post(`${A}/readers`, { identifier: 'has space' })).status).toBe(422);
    expect((await api.post(`${B}/readers`, { identifier: 'R-1' })).status).toBe(201);
    const foreignPoint = (await api.post(`${B}/access-points`, { name: 'B gate' })).body.data;
    const cross = await api.post(`${A}/readers`, { identifier: 'R-3', access_point_id: foreignPoint.id });
    expect(cross.status).toBe(422);
    expect(cross.body.errors.access_point_id).toHaveLength(1);
  });

  it('detaches the readers of a deleted access point', async () => {
    const point = (await api.post(`${A}/access-points`, { name: 'Temporary' })).body.data;
    const reader = (await api.post(`${A}/readers`, { identifier: 'TMP-1', access_point_id: point.id })).body.data;
    expect((await api.del(`${A}/access-points/${point.id}`)).status).toBe(204);
    const after = (await api.get(`${A}/readers/${reader.id}`)).body.data;
    expect(after.access_point_id).toBeNull();
    expect(after.version).toBeGreaterThan(reader.version);
  });

  it("never shows or changes another project's objects by id: 404", async () => {
    const zoneB = (await api.post(`${B}/access-zones`, { name: 'B only' })).body.data;
    const pointB = (await api.post(`${B}/access-points`, { name: 'B door' })).body.data;
    for (const path of [
      `${A}/access-zones/${zoneB.id}`,
      `${A}/access-zones/${zoneB.id}/capacity`,
      `${A}/access-points/${pointB.id}`,
    ]) {
      const res = await api.get(path);
      expect(res.status, path).toBe(404);
      expect(res.text).not.toContain('B only');
    }
    expect((await api.put(`${A}/access-zones/${zoneB.id}`, { name: 'hijacked' })).status).toBe(404);
    expect((await api.del(`${A}/access-points/${pointB.id}`)).status).toBe(404);
    expect((await api.get(`${B}/access-zones/${zoneB.id}`)).body.data.name).toBe('B only');

    // A user who may reach only project A gets 404 for all of project B.
    const user = await createUser(gh, admin, 'a-only@example.test', ['access:read', 'access:write']);
    await gh.request('POST', `/api/v1/users/${user.id}/projects`, {
      token: admin,
      body: { team_slug: 'default', project_slug: 'default' },
    });
    expect((await gh.request('GET', `${A}/access-zones`, { token: user.token })).status).toBe(200);
    expect((await gh.request('GET', `${B}/access-zones/${zoneB.id}`, { token: user.token })).status).toBe(404);
    expect((await gh.request('POST', `${B}/access-zones`, { token: user.token, body: { name: 'x' } })).status).toBe(
      404,
    );
  });

  it('stamps every write with a higher change version and leaves a tombstone for each deletion', async () => {
    const zone = (await api.post(`${A}/access-zones`, { name: 'Versioned' })).body.data;
    const renamed = (await api.put(`${A}/access-zones/${zone.id}`, { name: 'Versioned 2' })).body.data;
    expect(renamed.version).toBeGreaterThan(zone.version);
    await api.del(`${A}/access-zones/${zone.id}`);
    const db = new BetterSqlite3(join(gh.dataDir, 'gatehouse.db'), { readonly: true });
    const tomb = db.prepare("SELECT * FROM tombstones WHERE entity = 'access_zone' AND entity_id = ?").get(zone.id) as {
      version: number;
      project_id: number;
    };
    db.close();
    expect(tomb.version).toBeGreaterThan(renamed.version);
    expect(tomb.project_id).toBe(1);
  });

  it('announces each change on the domain event bus after it commits, and nothing for a refused write', async () => {
    events.length = 0;
    const zone = (await api.post(`${A}/access-zones`, { name: 'Evented' })).body.data;
    await api.put(`${A}/access-zones/${zone.id}`, { capacity: 10 });
    await api.post(`${A}/access-zones`, { name: 'Refused', capacity: -5 });
    const point = (await api.post(`${A}/access-points`, { name: 'Evented door', access_zone_id: zone.id })).body.data;
    await api.put(`${A}/access-points/${point.id}`, { name: 'Evented door 2' });
    await api.del(`${A}/access-points/${point.id}`);
    expect(events.map((e) => e.name)).toEqual([
      'access_zone.created',
      'access_zone.updated',
      'access_point.created',
      'access_point.updated',
      'access_point.deleted',
    ]);
    expect(events[1]!.payload).toMatchObject({ projectId: 1, resource: { id: zone.id, capacity: 10 } });
    expect(events[3]!.payload.resource).toMatchObject({ id: point.id, name: 'Evented door 2', readers: [] });
    expect(events[4]!.payload).toMatchObject({ projectId: 1, id: point.id });
  });
});
