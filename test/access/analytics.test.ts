import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, ManualClock, startAppliance, type TestAppliance } from '../helpers/appliance.js';

// Analytics against expectations worked out by hand from eight scans (docs/engine.md).
// Project time zone Europe/Berlin (UTC+1 in November).

const P = '/api/v1/projects/default/berlin';

describe('analytics metrics', () => {
  let gh: TestAppliance;
  let api: ReturnType<typeof client>;
  let hall: number;
  let lounge: number;
  const doors: Record<string, number> = {};
  const metrics = (body: unknown) => api.post(`${P}/analytics/metrics`, body);

  beforeAll(async () => {
    gh = await startAppliance({}, { clock: new ManualClock(Date.parse('2026-11-23T12:00:00Z')) });
    api = client(gh, await gh.token());
    expect(
      (await api.post('/api/v1/projects', { name: 'Berlin', slug: 'berlin', timezone: 'Europe/Berlin' })).status,
    ).toBe(201);
    hall = (await api.post(`${P}/access-zones`, { name: 'Hall', anti_passback: true })).body.data.id; // the 08:40 re-entry is a denial
    lounge = (await api.post(`${P}/access-zones`, { name: 'Lounge' })).body.data.id;
    for (const [name, zone, direction] of [
      ['H-in', hall, 'in'],
      ['H-out', hall, 'out'],
      ['L-in', lounge, 'in'],
    ] as const) {
      doors[name] = (await api.post(`${P}/access-points`, { name, access_zone_id: zone, direction })).body.data.id;
    }
    await api.post(
      `${P}/attendees/import`,
      ['A', 'B', 'C'].map((n) => ({ first_name: n, last_name: 'T', credential_value: n })),
    );
    const scans: [string, string, string, boolean][] = [
      ['08:05', 'H-in', 'A', true], // Hall 1
      ['08:20', 'H-in', 'B', true], // Hall 2
      ['08:40', 'H-in', 'A', false], // the Hall's anti-passback: not_authorized
      ['09:10', 'H-out', 'A', true], // Hall 1
      ['09:15', 'L-in', 'C', true], // Lounge 1
      ['09:30', 'L-in', 'B', true], // B moves: Hall 0, Lounge 2
      ['09:50', 'H-in', 'X', false], // invalid_credential
      ['10:05', 'H-out', 'C', true], // C was never in the Hall: an exit pass that changes no count
    ];
    for (const [time, door, credential, granted] of scans) {
      const res = await api.post(`${P}/access-points/${doors[door]}/scan`, {
        credential_value: credential,
        timestamp: `2026-11-23T${time}:00Z`,
      });
      expect(res.body.access_granted, `${time} ${door} ${credential}`).toBe(granted);
    }
  });
  afterAll(() => gh.destroy());

  it('zone_occupancy by hour: entries, exits (incl. moves to another zone) and occupancy in local buckets', async () => {
    const res = await metrics({
      metric: 'zone_occupancy',
      zone_id: hall,
      interval: 'hour',
      start_date: '2026-11-23T09:00:00+01:00',
      end_date: '2026-11-23T12:00:00+01:00',
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      metric: 'zone_occupancy',
      zone_id: hall,
      interval: 'hour',
      timezone: 'Europe/Berlin',
      start_date: '2026-11-23T09:00:00+01:00',
      end_date: '2026-11-23T12:00:00+01:00',
      series: [
        { bucket: '2026-11-23T09:00:00+01:00', entries: 2, exits: 0, occupancy: 2 },
        { bucket: '2026-11-23T10:00:00+01:00', entries: 0, exits: 2, occupancy: 0 },
        { bucket: '2026-11-23T11:00:00+01:00', entries: 0, exits: 1, occupancy: 0 },
      ],
    });
    const loungeSeries = (
      await metrics({
        metric: 'zone_occupancy',
        zone_id: lounge,
        start_date: '2026-11-23T10:00:00+01:00',
        end_date: '2026-11-23T11:00:00+01:00',
      })
    ).body.data.series;
    expect(loungeSeries).toEqual([{ bucket: '2026-11-23T10:00:00+01:00', entries: 2, exits: 0, occupancy: 2 }]);
  });

  it('starts the occupancy from everything before the range, and rounds the range out to whole buckets', async () => {
    const res = await metrics({
      metric: 'zone_occupancy',
      zone_id: hall,
      interval: 'hour',
      start_date: '2026-11-23T09:12:00Z',
      end_date: '2026-11-23T09:40:00Z',
    });
    expect(res.body.data.start_date).toBe('2026-11-23T10:00:00+01:00');
    expect(res.body.data.series).toEqual([{ bucket: '2026-11-23T10:00:00+01:00', entries: 0, exits: 2, occupancy: 0 }]);
    const quarter = await metrics({
      metric: 'zone_occupancy',
      zone_id: hall,
      interval: '15min',
      start_date: '2026-11-23T08:00:00Z',
      end_date: '2026-11-23T08:30:00Z',
    });
    expect(quarter.body.data.series).toEqual([
      { bucket: '2026-11-23T09:00:00+01:00', entries: 1, exits: 0, occupancy: 1 },
      { bucket: '2026-11-23T09:15:00+01:00', entries: 1, exits: 0, occupancy: 2 },
    ]);
  });

  it('reads plain dates as whole local days', async () => {
    const res = await metrics({
      metric: 'zone_occupancy',
      zone_id: hall,
      interval: 'day',
      start_date: '2026-11-23',
      end_date: '2026-11-23',
    });
    expect(res.body.data).toMatchObject({
      start_date: '2026-11-23T00:00:00+01:00',
      end_date: '2026-11-24T00:00:00+01:00',
      series: [{ bucket: '2026-11-23T00:00:00+01:00', entries: 2, exits: 3, occupancy: 0 }],
    });
  });

  it('access_summary: granted, denied, by reason, by zone, by access point, unique attendees', async () => {
    const res = await metrics({ metric: 'access_summary', start_date: '2026-11-23', end_date: '2026-11-23' });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      metric: 'access_summary',
      start_date: '2026-11-22T23:00:00.000Z',
      end_date: '2026-11-23T23:00:00.000Z',
      granted: 6,
      denied: 2,
      denied_by_reason: {
        invalid_credential: 1,
        not_authorized: 1,
        expired: 0,
        capacity_exceeded: 0,
        time_restricted: 0,
        blocklisted: 0,
      },
      by_zone: [
        { access_zone_id: hall, name: 'Hall', granted: 4, denied: 2 },
        { access_zone_id: lounge, name: 'Lounge', granted: 2, denied: 0 },
      ],
      by_access_point: [
        { access_point_id: doors['H-in'], name: 'H-in', granted: 2, denied: 2 },
        { access_point_id: doors['H-out'], name: 'H-out', granted: 2, denied: 0 },
        { access_point_id: doors['L-in'], name: 'L-in', granted: 2, denied: 0 },
      ],
      unique_attendees: 3,
    });
    const part = (
      await metrics({ metric: 'access_summary', start_date: '2026-11-23T09:00:00Z', end_date: '2026-11-23T09:20:00Z' })
    ).body.data;
    expect(part).toMatchObject({ granted: 2, denied: 0, unique_attendees: 2 });
    // Another project sees none of it.
    const other = await api.post('/api/v1/projects/default/default/analytics/metrics', {
      metric: 'access_summary',
      start_date: '2026-11-23',
      end_date: '2026-11-23',
    });
    expect(other.body.data).toMatchObject({ granted: 0, denied: 0, by_zone: [], unique_attendees: 0 });
  });

  it('refuses bad requests clearly', async () => {
    const backwards = await metrics({
      metric: 'access_summary',
      start_date: '2026-11-23T10:00:00Z',
      end_date: '2026-11-23T09:00:00Z',
    });
    expect(backwards.status).toBe(422);
    expect(backwards.body.errors).toEqual({ end_date: ['The end_date must be after the start_date.'] });
    const unknownMetric = await metrics({ metric: 'revenue', start_date: '2026-11-23', end_date: '2026-11-24' });
    expect(unknownMetric.status).toBe(422);
    expect(Object.keys(unknownMetric.body.errors)).toEqual(['metric']);
    const noZone = await metrics({
      metric: 'zone_occupancy',
      interval: 'hour',
      start_date: '2026-11-23',
      end_date: '2026-11-24',
    });
    expect(noZone.status).toBe(422);
    expect(noZone.body.errors.zone_id).toEqual(['The zone_id field is required.']);
    const tooMany = await metrics({
      metric: 'zone_occupancy',
      zone_id: hall,
      interval: '15min',
      start_date: '2025-01-01',
      end_date: '2026-11-23',
    });
    expect(tooMany.status).toBe(422);
    expect(tooMany.body.errors.interval[0]).toMatch(/more than 10000 buckets/);
    const badDate = await metrics({ metric: 'access_summary', start_date: 'last week', end_date: '2026-11-23' });
    expect(badDate.status).toBe(422);
    expect(Object.keys(badDate.body.errors)).toEqual(['start_date']);
    const foreignZone = await api.post('/api/v1/projects/default/default/analytics/metrics', {
      metric: 'zone_occupancy',
      zone_id: hall,
      start_date: '2026-11-23',
      end_date: '2026-11-23',
    });
    expect(foreignZone.status).toBe(404);
    expect(foreignZone.body).toEqual({ message: 'Access zone not found.' });
  });

  it('lets a read-only token ask, as a GET would', async () => {
    const reader = client(gh, await gh.token(['access:read']));
    expect(
      (
        await reader.post(`${P}/analytics/metrics`, {
          metric: 'access_summary',
          start_date: '2026-11-23',
          end_date: '2026-11-23',
        })
      ).status,
    ).toBe(200);
    const other = client(gh, await gh.token(['attendees:read']));
    expect(
      (
        await other.post(`${P}/analytics/metrics`, {
          metric: 'access_summary',
          start_date: '2026-11-23',
          end_date: '2026-11-23',
        })
      ).status,
    ).toBe(401);
  });
});
