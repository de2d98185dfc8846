import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startAppliance, type TestAppliance } from '../helpers/appliance.js';

const A = '/api/v1/projects/default/default';
const B = '/api/v1/projects/default/other';

describe('attendees, attendee types and credentials', () => {
  let gh: TestAppliance;
  let admin: string;
  let zoneId: number;
  let api: ReturnType<typeof client>;

  beforeAll(async () => {
    gh = await startAppliance();
    admin = await gh.token();
    api = client(gh, admin);
    await api.post('/api/v1/projects', { name: 'Other', slug: 'other' });
    zoneId = (await api.post(`${A}/access-zones`, { name: 'Backstage' })).body.data.id;
  });
  afterAll(() => gh.destroy());

  it('keeps attendee types with the zones they may enter', async () => {
    const created = await api.post(`${A}/attendee-types`, { name: 'Crew', zone_ids: [zoneId, zoneId] });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ name: 'Crew', slug: 'crew', zone_ids: [zoneId] });
    const foreignZone = (await api.post(`${B}/access-zones`, { name: 'Elsewhere' })).body.data.id;
    const bad = await api.put(`${A}/attendee-types/${created.body.data.id}`, { zone_ids: [foreignZone, 999999] });
    expect(bad.status).toBe(422);
    expect(bad.body.errors.zone_ids).toHaveLength(2);
    expect((await api.get(`${A}/attendee-types/${created.body.data.id}`)).body.data.zone_ids).toEqual([zoneId]);
    const cleared = await api.put(`${A}/attendee-types/${created.body.data.id}`, { zone_ids: [] });
    expect(cleared.body.data.zone_ids).toEqual([]);
  });

  it('creates, shows, updates and deletes an attendee with extra fields kept as JSON', async () => {
    await api.post(`${A}/attendee-types`, { name: 'VIP', slug: 'vip' });
    const created = await api.post(`${A}/attendees`, {
      first_name: 'Ada',
      last_name: 'Lovelace',
      email: 'Ada@Example.test',
      attendee_type: 'vip',
      external_id: 'ext-1',
      extra: { company: 'Analytical Engines', shirt: 'M' },
    });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({
      first_name: 'Ada',
      last_name: 'Lovelace',
      email: 'ada@example.test',
      attendee_type: 'vip',
      external_id: 'ext-1',
      status: 'active',
      extra: { company: 'Analytical Engines', shirt: 'M' },
    });
    const id = created.body.data.id;
    const updated = await api.put(`${A}/attendees/${id}`, { status: 'cancelled', attendee_type: null });
    expect(updated.body.data).toMatchObject({ status: 'cancelled', attendee_type: null, first_name: 'Ada' });
    expect(updated.body.data.version).toBeGreaterThan(created.body.data.version);
    expect((await api.del(`${A}/attendees/${id}`)).status).toBe(204);
    expect((await api.get(`${A}/attendees/${id}`)).status).toBe(404);
  });

  it('refuses an unknown attendee type, a taken external id and a bad email, changing nothing', async () => {
    await api.post(`${A}/attendees`, { first_name: 'Grace', last_name: 'Hopper', external_id: 'ext-2' });
    const before = (await api.get(`${A}/attendees`)).body.meta.total;
    const type = await api.post(`${A}/attendees`, { first_name: 'X', attendee_type: 'pirate' });
    expect(type.status).toBe(422);
    expect(type.body.errors.attendee_type).toHaveLength(1);
    const dup = await api.post(`${A}/attendees`, { first_name: 'Y', external_id: 'ext-2' });
    expect(dup.body.errors.external_id).toEqual(['The external id has already been taken.']);
    expect((await api.post(`${A}/attendees`, { first_name: 'Z', email: 'not-mail' })).status).toBe(422);
    expect((await api.get(`${A}/attendees`)).body.meta.total).toBe(before);
  });

  it('searches by name, email and external id, and filters by type and status, paginated', async () => {
    await api.post(`${A}/attendee-types`, { name: 'Press', slug: 'press' });
    for (const [first, last, type, status] of [
      ['Alan', 'Turing', 'press', 'active'],
      ['Alana', 'Smith', null, 'active'],
      ['Bob', 'Alanson', 'press', 'cancelled'],
      ['Carol', 'Jones', null, 'active'],
    ] as const) {
      await api.post(`${A}/attendees`, {
        first_name: first,
        last_name: last,
        email: `${first.toLowerCase()}@mail.test`,
        attendee_type: type,
        status,
        external_id: `srch-${first}`,
      });
    }
    const names = async (q: string) =>
      (await api.get(`${A}/attendees?${q}`)).body.data.map((a: { first_name: string }) => a.first_name).sort();
    expect(await names('search=alan')).toEqual(['Alan', 'Alana', 'Bob']);
    expect(await names('search=alan%20turing')).toEqual(['Alan']);
    expect(await names('search=carol%40mail.test')).toEqual(['Carol']);
    expect(await names('search=srch-Bob')).toEqual(['Bob']);
    expect(await names('search=100%25')).toEqual([]);
    expect(await names('attendee_type=press')).toEqual(['Alan', 'Bob']);
    expect(await names('attendee_type=press&status=active')).toEqual(['Alan']);
    const page = await api.get(`${A}/attendees?search=alan&per_page=2&page=2`);
    expect(page.body.meta).toEqual({ current_page: 2, per_page: 2, total: 3 });
    expect(page.body.data).toHaveLength(1);
    expect((await api.get(`${A}/attendees?status=gone`)).status).toBe(422);
  });

  it('counts the attendee list against the search rate class when it searches, else the standard one (test/http/rate-limit.test.ts on the wire)', () => {
    const route = gh.app.routes.find((r) => r.operationId === 'attendees.index')!;
    expect([route.rateClass, route.searchQuery]).toEqual(['standard', ['search']]);
  });

  it('issues, lists and revokes credentials; a value is never reused across attendees', async () => {
    const a = (await api.post(`${A}/attendees`, { first_name: 'Holder', last_name: 'One' })).body.data;
    const b = (await api.post(`${A}/attendees`, { first_name: 'Holder', last_name: 'Two' })).body.data;
    const issued = await api.post(`${A}/attendees/${a.id}/credentials`, {
      value: 'QR-0001',
      kind: 'qr',
      valid_from: '2026-06-01T08:00:00+02:00',
      valid_until: '2026-06-03T23:00:00Z',
    });
    expect(issued.status).toBe(201);
    expect(issued.body.data).toMatchObject({
      attendee_id: a.id,
      value: 'QR-0001',
      kind: 'qr',
      status: 'active',
      valid_from: '2026-06-01T06:00:00.000Z',
      valid_until: '2026-06-03T23:00:00.000Z',
      revoked_at: null,
    });
    const reused = await api.post(`${A}/attendees/${b.id}/credentials`, { value: 'QR-0001' });
    expect(reused.status).toBe(422);
    expect(reused.body.errors.value).toHaveLength(1);
    const backwards = await api.post(`${A}/attendees/${b.id}/credentials`, {
      value: 'QR-0002',
      valid_from: '2026-06-03T00:00:00Z',
      valid_until: '2026-06-01T00:00:00Z',
    });
    expect(backwards.status).toBe(422);
    expect(Object.keys(backwards.body.errors)).toEqual(['valid_until']);
    expect((await api.post(`${A}/attendees/${b.id}/credentials`, { value: 'X', kind: 'smoke-signal' })).status).toBe(
      422,
    );
    expect((await api.post(`${A}/attendees/999999/credentials`, { value: 'QR-0003' })).status).toBe(404);

    const revoked = await api.del(`${A}/credentials/${issued.body.data.id}`);
    expect(revoked.status).toBe(200);
    expect(revoked.body.data.status).toBe('revoked');
    expect(revoked.body.data.revoked_at).not.toBeNull();
    const list = await api.get(`${A}/attendees/${a.id}/credentials`);
    expect(list.body.data).toEqual([expect.objectContaining({ value: 'QR-0001', status: 'revoked' })]);
    // Still the same value: a revoked credential's value stays taken.
    expect((await api.post(`${A}/attendees/${b.id}/credentials`, { value: 'QR-0001' })).status).toBe(422);
  });

  it('refuses to delete an attendee type still held (409) and deletes an attendee with their credentials', async () => {
    const type = (await api.post(`${A}/attendee-types`, { name: 'Held' })).body.data;
    const holder = (await api.post(`${A}/attendees`, { first_name: 'Held', attendee_type: type.slug })).body.data;
    const conflict = await api.del(`${A}/attendee-types/${type.id}`);
    expect(conflict.status).toBe(409);
    await api.post(`${A}/attendees/${holder.id}/credentials`, { value: 'HELD-1' });
    expect((await api.del(`${A}/attendees/${holder.id}`)).status).toBe(204);
    expect((await api.del(`${A}/attendee-types/${type.id}`)).status).toBe(204);
    // The value is free again once its attendee is gone.
    const other = (await api.post(`${A}/attendees`, { first_name: 'New' })).body.data;
    expect((await api.post(`${A}/attendees/${other.id}/credentials`, { value: 'HELD-1' })).status).toBe(201);
  });

  it("keeps projects apart: another project's attendees and credentials are 404 by id", async () => {
    const bAttendee = (await api.post(`${B}/attendees`, { first_name: 'Bee', last_name: 'Only' })).body.data;
    const bCredential = (await api.post(`${B}/attendees/${bAttendee.id}/credentials`, { value: 'B-1' })).body.data;
    expect((await api.get(`${A}/attendees/${bAttendee.id}`)).status).toBe(404);
    expect((await api.get(`${A}/attendees/${bAttendee.id}/credentials`)).status).toBe(404);
    expect((await api.put(`${A}/attendees/${bAttendee.id}`, { first_name: 'Stolen' })).status).toBe(404);
    expect((await api.del(`${A}/credentials/${bCredential.id}`)).status).toBe(404);
    expect((await api.get(`${B}/attendees/${bAttendee.id}/credentials`)).body.data[0].status).toBe('active');
    // The same value may exist in two projects.
    const aAttendee = (await api.post(`${A}/attendees`, { first_name: 'Ay' })).body.data;
    expect((await api.post(`${A}/attendees/${aAttendee.id}/credentials`, { value: 'B-1' })).status).toBe(201);
  });
});
