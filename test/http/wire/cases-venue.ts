import { c, unique, type Venue } from './fixtures.js';
import { A, type Case, type World } from './world.js';

// The venue's own answers: each resource's list, record, creation, change and deletion (with
// an id that names nothing, and a record still in use where deleting can be refused), the
// scan, the access-event log and its CSV, analytics, import and export, credentials, forms.

function crud(w: World, name: string, id: number, make: () => unknown, change: unknown, inUse?: number): Case[] {
  const base = `${A}/${name}`;
  return [
    c(`${name}.index`, 200, 'a page', () => w.api('GET', base)),
    c(`${name}.show`, 200, 'a record', () => w.api('GET', `${base}/${id}`)),
    c(`${name}.show`, 404, 'an id that names nothing', () => w.api('GET', `${base}/999999`)),
    c(`${name}.store`, 201, 'a valid record', () => w.api('POST', base, make())),
    c(`${name}.update`, 200, 'a valid change', () => w.api('PUT', `${base}/${id}`, change)),
    c(`${name}.update`, 404, 'an id that names nothing', () => w.api('PUT', `${base}/999999`, change)),
    c(`${name}.destroy`, 204, 'a record made for it', async () =>
      w.api('DELETE', `${base}/${await w.create(base, make())}`),
    ),
    c(`${name}.destroy`, 404, 'an id that names nothing', () => w.api('DELETE', `${base}/999999`)),
    ...(inUse === undefined
      ? []
      : [c(`${name}.destroy`, 409, 'a record still in use', () => w.api('DELETE', `${base}/${inUse}`))]),
  ];
}

export function venueCases(w: World, v: Venue): Case[] {
  const summary = { metric: 'access_summary', start_date: '2026-01-01', end_date: '2030-01-01' };
  return [
    ...crud(w, 'access-zones', v.zone, () => ({ name: `Zone ${unique()}` }), { capacity: 500 }, v.zone),
    c('access-zones.destroy', 422, 'a zone an attendee type still grants', async () => {
      const zone = await w.create(`${A}/access-zones`, { name: `Granted ${unique()}` });
      await w.create(`${A}/attendee-types`, { name: `Grantor ${unique()}`, zone_ids: [zone] });
      return w.api('DELETE', `${A}/access-zones/${zone}`);
    }),
    c('access-zones.capacity', 200, 'a zone', () => w.api('GET', `${A}/access-zones/${v.zone}/capacity`)),
    c('access-zones.capacity', 404, 'an id that names nothing', () =>
      w.api('GET', `${A}/access-zones/999999/capacity`),
    ),
    ...crud(w, 'access-points', v.door, () => ({ name: `Door ${unique()}`, access_zone_id: v.zone }), {
      location: 'North',
    }),
    ...crud(w, 'readers', v.reader, () => ({ identifier: `R-${unique()}` }), { type: 'barcode' }),
    ...crud(
      w,
      'time-restrictions',
      v.restriction,
      () => ({ access_zone_id: v.zone, days_of_week: [1], start_time: '09:00', end_time: '10:00' }),
      { days_of_week: [1, 2, 3, 4, 5, 6, 7] },
    ),
    ...crud(
      w,
      'blocklist',
      v.blockEntry,
      () => ({ credential_id: v.credential, reason: `Lost card ${unique()}`, until: '2020-01-01T00:00:00Z' }),
      { reason: 'Ejected twice' },
    ),
    ...crud(w, 'attendees', v.attendee, () => ({ first_name: `Guest ${unique()}` }), { email: 'ada@example.test' }),
    ...crud(w, 'attendee-types', v.type, () => ({ name: `Type ${unique()}` }), { name: 'Guest of honour' }, v.type),
    ...crud(
      w,
      'forms',
      v.form,
      () => ({ name: `Form ${unique()}`, fields: [{ name: 'q', label: 'Q', type: 'text' }] }),
      { is_active: true },
    ),

    c('access-points.scan', 200, 'a credential at a door', () =>
      w.api('POST', `${A}/access-points/${v.door}/scan`, { credential_value: 'CRED-1' }),
    ),
    c('access-points.scan', 404, 'a door that does not exist', () =>
      w.api('POST', `${A}/access-points/999999/scan`, { credential_value: 'CRED-1' }),
    ),
    c('access-points.scan', 200, 'an inactive door (decided: a denial naming the cause)', () =>
      w.api('POST', `${A}/access-points/${v.closedDoor}/scan`, { credential_value: 'CRED-1' }),
    ),
    c('access-events.index', 200, 'a page of events', () => w.api('GET', `${A}/access-events`)),
    c('access-events.index', 200, 'the CSV export', () => w.api('GET', `${A}/access-events?format=csv`)),
    c('analytics.metrics', 200, 'an access summary', () => w.api('POST', `${A}/analytics/metrics`, summary)),
    c('analytics.metrics', 404, 'the occupancy of a zone that does not exist', () =>
      w.api('POST', `${A}/analytics/metrics`, {
        metric: 'zone_occupancy',
        zone_id: 999999,
        start_date: '2026-01-01',
        end_date: '2026-01-02',
      }),
    ),

    c('attendees.import', 200, 'JSON rows', () =>
      w.api('POST', `${A}/attendees/import`, [{ first_name: 'Imported', credential_value: `IMP-${unique()}` }]),
    ),
    c('attendees.import', 200, 'a CSV file', () =>
      w.send({
        method: 'POST',
        path: `${A}/attendees/import`,
        token: w.admin,
        raw: `first_name,external_id\r\nCsv,CSV-${unique()}\r\n`,
        type: 'text/csv',
      }),
    ),
    c('attendees.import', 422, 'only bad rows', () =>
      w.api('POST', `${A}/attendees/import`, [{ last_name: 'No first name' }]),
    ),
    c('attendees.export', 200, 'the CSV export', () => w.api('GET', `${A}/attendees/export`)),
    c('attendees.credentials.index', 200, "an attendee's credentials", () =>
      w.api('GET', `${A}/attendees/${v.attendee}/credentials`),
    ),
    c('attendees.credentials.index', 404, 'an attendee that does not exist', () =>
      w.api('GET', `${A}/attendees/999999/credentials`),
    ),
    c('attendees.credentials.store', 201, 'a new value', () =>
      w.api('POST', `${A}/attendees/${v.attendee}/credentials`, { value: `CRED-${unique()}` }),
    ),
    c('attendees.credentials.store', 404, 'an attendee that does not exist', () =>
      w.api('POST', `${A}/attendees/999999/credentials`, { value: `CRED-${unique()}` }),
    ),
    c('credentials.destroy', 200, 'a credential made for it', async () =>
      w.api(
        'DELETE',
        `${A}/credentials/${await w.create(`${A}/attendees/${v.attendee}/credentials`, { value: `CRED-${unique()}` })}`,
      ),
    ),
    c('credentials.destroy', 404, 'an id that names nothing', () => w.api('DELETE', `${A}/credentials/999999`)),
    c('credential-keys.index', 200, "the project's keys", () => w.api('GET', `${A}/credential-keys`)),
    c('credential-keys.store', 201, 'a rotation', () => w.api('POST', `${A}/credential-keys`)),
    c('credential-keys.retire', 200, 'a key a rotation made verifying', async () => {
      const previous = await w.create(`${A}/credential-keys`, undefined);
      await w.create(`${A}/credential-keys`, undefined);
      return w.api('POST', `${A}/credential-keys/${previous}/retire`);
    }),
    c('credential-keys.retire', 409, 'the signing key', async () =>
      w.api('POST', `${A}/credential-keys/${await w.create(`${A}/credential-keys`, undefined)}/retire`),
    ),
    c('credential-keys.retire', 404, 'an id that names nothing', () =>
      w.api('POST', `${A}/credential-keys/999999/retire`),
    ),
    c('forms.submissions.store', 201, 'an answer', () =>
      w.api('POST', `${A}/forms/${v.form}/submissions`, { data: { q: 'yes' } }),
    ),
    c('forms.submissions.store', 404, 'a form that does not exist', () =>
      w.api('POST', `${A}/forms/999999/submissions`, { data: { q: 'yes' } }),
    ),
    c('forms.submissions.index', 200, "a form's answers", () => w.api('GET', `${A}/forms/${v.form}/submissions`)),
    c('forms.submissions.index', 404, 'a form that does not exist', () =>
      w.api('GET', `${A}/forms/999999/submissions`),
    ),
  ];
}
