import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startAppliance, type TestAppliance } from '../helpers/appliance.js';

const A = '/api/v1/projects/default/default';
const B = '/api/v1/projects/default/other';

describe('time restrictions, blocklist, forms and submissions', () => {
  let gh: TestAppliance;
  let admin: string;
  let zone: number;
  let type: number;
  let api: ReturnType<typeof client>;

  beforeAll(async () => {
    gh = await startAppliance();
    admin = await gh.token();
    api = client(gh, admin);
    await api.post('/api/v1/projects', { name: 'Other', slug: 'other' });
    zone = (await api.post(`${A}/access-zones`, { name: 'Bar' })).body.data.id;
    type = (await api.post(`${A}/attendee-types`, { name: 'Staff' })).body.data.id;
  });
  afterAll(() => gh.destroy());

  it('keeps time windows per zone and optionally per attendee type', async () => {
    const res = await api.post(`${A}/time-restrictions`, {
      access_zone_id: zone,
      attendee_type_id: type,
      days_of_week: [5, 6],
      start_time: '18:00',
      end_time: '02:00',
    });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({
      access_zone_id: zone,
      attendee_type_id: type,
      days_of_week: [5, 6],
      start_time: '18:00',
      end_time: '02:00',
    });
    const updated = await api.put(`${A}/time-restrictions/${res.body.data.id}`, {
      days_of_week: [7, 1],
      attendee_type_id: null,
    });
    expect(updated.body.data).toMatchObject({ days_of_week: [1, 7], attendee_type_id: null, start_time: '18:00' });
    expect((await api.get(`${A}/time-restrictions`)).body.meta.total).toBe(1);
  });

  it('refuses malformed windows and foreign references with 422 field errors', async () => {
    const cases: [unknown, string][] = [
      [{ access_zone_id: zone, days_of_week: [1], start_time: '25:00', end_time: '26:00' }, 'start_time'],
      [{ access_zone_id: zone, days_of_week: [1], start_time: '9:00', end_time: '10:00' }, 'start_time'],
      [{ access_zone_id: zone, days_of_week: [], start_time: '09:00', end_time: '10:00' }, 'days_of_week'],
      [{ access_zone_id: zone, days_of_week: [0, 8], start_time: '09:00', end_time: '10:00' }, 'days_of_week.0'],
      [{ access_zone_id: zone, days_of_week: [2, 2], start_time: '09:00', end_time: '10:00' }, 'days_of_week'],
      [{ access_zone_id: zone, days_of_week: [1], start_time: '09:00', end_time: '09:00' }, 'end_time'],
    ];
    for (const [body, field] of cases) {
      const res = await api.post(`${A}/time-restrictions`, body);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(Object.keys(res.body.errors), JSON.stringify(body)).toContain(field);
    }
    const foreignZone = (await api.post(`${B}/access-zones`, { name: 'Far' })).body.data.id;
    const cross = await api.post(`${A}/time-restrictions`, {
      access_zone_id: foreignZone,
      days_of_week: [1],
      start_time: '09:00',
      end_time: '10:00',
    });
    expect(cross.body.errors.access_zone_id).toHaveLength(1);
    expect((await api.get(`${A}/time-restrictions`)).body.meta.total).toBe(1);
    // A zone with a restriction cannot be deleted out from under it.
    expect((await api.del(`${A}/access-zones/${zone}`)).status).toBe(409);
  });

  it('blocks an attendee or a single credential, never both at once, and lifts the block on delete', async () => {
    const attendee = (await api.post(`${A}/attendees`, { first_name: 'Trouble', last_name: 'Maker' })).body.data;
    const credential = (await api.post(`${A}/attendees/${attendee.id}/credentials`, { value: 'BAD-1' })).body.data;
    const byAttendee = await api.post(`${A}/blocklist`, {
      attendee_id: attendee.id,
      reason: 'Ejected last year',
      until: '2027-01-01T00:00:00Z',
    });
    expect(byAttendee.status).toBe(201);
    expect(byAttendee.body.data).toMatchObject({
      attendee_id: attendee.id,
      credential_id: null,
      until: '2027-01-01T00:00:00.000Z',
    });
    expect(
      (await api.post(`${A}/blocklist`, { credential_id: credential.id, reason: 'Card reported stolen' })).status,
    ).toBe(201);
    expect(
      (await api.post(`${A}/blocklist`, { attendee_id: attendee.id, credential_id: credential.id, reason: 'x' }))
        .status,
    ).toBe(422);
    expect((await api.post(`${A}/blocklist`, { reason: 'nobody' })).status).toBe(422);
    expect(
      (await api.post(`${A}/blocklist`, { attendee_id: 999999, reason: 'ghost' })).body.errors.attendee_id,
    ).toHaveLength(1);
    const edited = await api.put(`${A}/blocklist/${byAttendee.body.data.id}`, { reason: 'Ejected twice' });
    expect(edited.body.data.reason).toBe('Ejected twice');
    expect((await api.del(`${A}/blocklist/${byAttendee.body.data.id}`)).status).toBe(204);
    // Deleting the attendee removes the remaining entry on their credential with them.
    expect((await api.del(`${A}/attendees/${attendee.id}`)).status).toBe(204);
    expect((await api.get(`${A}/blocklist`)).body.meta.total).toBe(0);
  });

  it('keeps forms with typed fields and checks submissions against them', async () => {
    const form = await api.post(`${A}/forms`, {
      name: 'Volunteer sign-up',
      fields: [
        { name: 'full_name', label: 'Full name', type: 'text', required: true },
        { name: 'email', label: 'Email', type: 'email', required: true },
        { name: 'shifts', label: 'Shifts', type: 'number' },
        { name: 'size', label: 'T-shirt', type: 'select', options: ['S', 'M', 'L'] },
      ],
    });
    expect(form.status).toBe(201);
    expect(form.body.data).toMatchObject({ slug: 'volunteer-sign-up', is_active: true });
    const id = form.body.data.id;
    const ok = await api.post(`${A}/forms/${id}/submissions`, {
      data: { full_name: 'Kim', email: 'kim@example.test', shifts: 2, size: 'M' },
    });
    expect(ok.status).toBe(201);
    expect(ok.body.data).toMatchObject({ form_id: id, attendee_id: null, data: { full_name: 'Kim', shifts: 2 } });
    const bad = await api.post(`${A}/forms/${id}/submissions`, {
      data: { email: 'nope', shifts: 'two', size: 'XXL', pet: 'cat' },
    });
    expect(bad.status).toBe(422);
    expect(Object.keys(bad.body.errors).sort()).toEqual([
      'data.email',
      'data.full_name',
      'data.pet',
      'data.shifts',
      'data.size',
    ]);
    const list = await api.get(`${A}/forms/${id}/submissions`);
    expect(list.body.meta.total).toBe(1);
    await api.put(`${A}/forms/${id}`, { is_active: false });
    expect(
      (await api.post(`${A}/forms/${id}/submissions`, { data: { full_name: 'Late', email: 'late@example.test' } }))
        .status,
    ).toBe(422);
    expect((await api.del(`${A}/forms/${id}`)).status).toBe(204);
    expect((await api.get(`${A}/forms/${id}/submissions`)).status).toBe(404);
  });

  it('refuses malformed form definitions', async () => {
    const cases = [
      { name: 'No fields', fields: [] },
      {
        name: 'Dup',
        fields: [
          { name: 'a', label: 'A', type: 'text' },
          { name: 'a', label: 'A2', type: 'text' },
        ],
      },
      { name: 'Select without options', fields: [{ name: 'a', label: 'A', type: 'select' }] },
      { name: 'Bad name', fields: [{ name: 'Has Space', label: 'A', type: 'text' }] },
      { name: 'Bad type', fields: [{ name: 'a', label: 'A', type: 'signature' }] },
    ];
    for (const body of cases) expect((await api.post(`${A}/forms`, body)).status, body.name).toBe(422);
  });

  it("keeps another project's rules and forms out of reach by id", async () => {
    const formB = (await api.post(`${B}/forms`, { name: 'B form', fields: [{ name: 'x', label: 'X', type: 'text' }] }))
      .body.data;
    expect((await api.get(`${A}/forms/${formB.id}`)).status).toBe(404);
    expect((await api.post(`${A}/forms/${formB.id}/submissions`, { data: { x: 'y' } })).status).toBe(404);
    const zoneB = (await api.post(`${B}/access-zones`, { name: 'B zone' })).body.data.id;
    const ruleB = (
      await api.post(`${B}/time-restrictions`, {
        access_zone_id: zoneB,
        days_of_week: [1],
        start_time: '08:00',
        end_time: '09:00',
      })
    ).body.data;
    expect((await api.del(`${A}/time-restrictions/${ruleB.id}`)).status).toBe(404);
    expect((await api.get(`${B}/time-restrictions/${ruleB.id}`)).status).toBe(200);
  });
});
