import { describe, expect, it } from 'vitest';
import {
  blocklistIndex,
  changedBody,
  cloudOwned,
  type FieldSpec,
  formValues,
  instantOfLocal,
  listAll,
  mayHaveNext,
  splitErrors,
  toBody,
} from '../../console/src/access.js';

// The Access screen's logic without a browser (console/src/access.ts): form values to the bodies
// the venue routes validate, only what changed for a PUT, 422 errors by field, the blocklist by
// what it names, paging, and the edge's read-only venue.

const zone: FieldSpec[] = [
  { key: 'name', label: ['n', 'Name'], kind: 'text' },
  { key: 'capacity', label: ['c', 'Capacity'], kind: 'number' },
  { key: 'requires_ticket', label: ['r', 'Ticket required'], kind: 'checkbox' },
];
const point: FieldSpec[] = [
  { key: 'name', label: ['n', 'Name'], kind: 'text' },
  { key: 'location', label: ['l', 'Location'], kind: 'text', nullable: true },
  {
    key: 'access_zone_id',
    label: ['z', 'Zone'],
    kind: 'select',
    numeric: true,
    options: [{ value: '', label: 'No zone' }],
  },
  {
    key: 'direction',
    label: ['d', 'Direction'],
    kind: 'select',
    options: ['in', 'out', 'both'].map((d) => ({ value: d, label: d })),
  },
  { key: 'is_active', label: ['a', 'Active'], kind: 'checkbox', initial: true },
];

describe('access screen logic', () => {
  it('starts a new row blank, with the first choice of a select and the initial values given', () => {
    expect(formValues(zone, null)).toEqual({ name: '', capacity: '', requires_ticket: false });
    expect(formValues(point, null)).toEqual({
      name: '',
      location: '',
      access_zone_id: '',
      direction: 'in',
      is_active: true,
    });
  });

  it('reads a row into the form and back into the same body', () => {
    const row = { id: 3, name: 'Press Entrance', location: null, access_zone_id: 4, direction: 'in', is_active: true };
    const values = formValues(point, row);
    expect(values).toEqual({
      name: 'Press Entrance',
      location: '',
      access_zone_id: '4',
      direction: 'in',
      is_active: true,
    });
    expect(toBody(point, values)).toEqual({
      name: 'Press Entrance',
      location: null,
      access_zone_id: 4,
      direction: 'in',
      is_active: true,
    });
  });

  it('sends values as typed so the appliance judges them: a blank name as "", a blank capacity as null, a word as a word', () => {
    expect(toBody(zone, { name: '  ', capacity: '', requires_ticket: false })).toEqual({
      name: '',
      capacity: null,
      requires_ticket: false,
    });
    expect(toBody(zone, { name: ' Gallery ', capacity: ' 25 ', requires_ticket: true })).toEqual({
      name: 'Gallery',
      capacity: 25,
      requires_ticket: true,
    });
    expect(toBody(zone, { name: 'Gallery', capacity: 'lots', requires_ticket: true })).toMatchObject({
      capacity: 'lots',
    });
  });

  it('puts only what changed in an update', () => {
    const row = {
      id: 1,
      name: 'Press Entrance',
      location: 'Media centre',
      access_zone_id: 4,
      direction: 'in',
      is_active: true,
    };
    expect(changedBody(point, row, { ...formValues(point, row), name: 'Press Gate' })).toEqual({ name: 'Press Gate' });
    expect(changedBody(point, row, { ...formValues(point, row), location: '', access_zone_id: '' })).toEqual({
      location: null,
      access_zone_id: null,
    });
    expect(changedBody(point, row, formValues(point, row))).toEqual({});
  });

  it('puts each 422 error under its field and the rest in the form’s message', () => {
    expect(splitErrors(zone, { name: ['Too small.'], slug: ['Taken.', 'Bad.'] })).toEqual({
      byField: { name: 'Too small.' },
      other: ['Taken.', 'Bad.'],
    });
    expect(splitErrors(['reason'], { reason: ['Required.', 'Short.'] })).toEqual({
      byField: { reason: 'Required. Short.' },
      other: [],
    });
  });

  it('indexes the blocklist entries in force by attendee and by credential', () => {
    const now = Date.parse('2026-11-26T10:00:00Z');
    const { attendees, credentials } = blocklistIndex(
      [
        { id: 1, attendee_id: 13, credential_id: null, reason: 'rig', until: null },
        { id: 2, attendee_id: null, credential_id: 7, reason: 'fence', until: '2026-11-27T00:00:00Z' },
        { id: 3, attendee_id: null, credential_id: 8, reason: 'over', until: '2026-11-26T09:59:59Z' },
      ],
      now,
    );
    expect([...attendees.keys()]).toEqual([13]);
    expect([...credentials.keys()]).toEqual([7]);
    expect(credentials.get(7)!.id).toBe(2);
  });

  it('reads every page of a list until a short one, and says when it stopped at its cap', async () => {
    const rows = Array.from({ length: 250 }, (_, i) => i);
    const asked: number[] = [];
    const page = async (n: number, per: number) => (asked.push(n), rows.slice((n - 1) * per, n * per));
    expect(await listAll(page)).toEqual({ items: rows, complete: true });
    expect(asked).toEqual([1, 2, 3]);
    expect(await listAll(page, 2)).toEqual({ items: rows.slice(0, 200), complete: false });
    expect(mayHaveNext(rows.slice(0, 10), 10)).toBe(true);
    expect(mayHaveNext(rows.slice(0, 3), 10)).toBe(false);
  });

  it('knows the cloud owns the venue on an edge only', () => {
    expect(cloudOwned({ role: 'edge' })).toBe(true);
    expect(cloudOwned({ role: 'standalone' })).toBe(false);
    expect(cloudOwned({ role: 'cloud' })).toBe(false);
    expect(cloudOwned(null)).toBe(false);
  });

  it('turns a local date-time into an instant, a blank one into null', () => {
    expect(instantOfLocal('')).toBeNull();
    expect(instantOfLocal('2026-11-26T18:30')).toBe(new Date('2026-11-26T18:30').toISOString());
    expect(instantOfLocal('not a date')).toBe('not a date');
  });
});
