import { describe, expect, it } from 'vitest';
import {
  type AccessSummary,
  bucketLabel,
  occupancyChart,
  occupancyFacts,
  occupancyRequest,
  occupancyRows,
  reasonRows,
  summaryChart,
  summaryRequest,
  summaryRows,
  todayIn,
  type ZoneOccupancy,
} from '../../console/src/analytics.js';

// The Analytics screen's logic without a browser (console/src/analytics.ts): the metrics requests,
// bucket labels read from the buckets' local times, the tables' rows and the charts' data from the
// same rows.

const occupancy = (buckets: [string, number, number, number][]): ZoneOccupancy => ({
  metric: 'zone_occupancy',
  zone_id: 1,
  interval: 'hour',
  timezone: 'Europe/Berlin',
  start_date: buckets[0]![0],
  end_date: buckets.at(-1)![0],
  series: buckets.map(([bucket, entries, exits, occupancy]) => ({ bucket, entries, exits, occupancy })),
});

const summary: AccessSummary = {
  metric: 'access_summary',
  start_date: '2026-11-25T23:00:00.000Z',
  end_date: '2026-11-26T23:00:00.000Z',
  granted: 5,
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
    { access_zone_id: null, name: null, granted: 0, denied: 1 },
    { access_zone_id: 1, name: 'Arena', granted: 4, denied: 0 },
  ],
  by_access_point: [
    { access_point_id: 1, name: 'Main Gate In', granted: 3, denied: 1 },
    { access_point_id: 9, name: null, granted: 2, denied: 1 },
  ],
  unique_attendees: 4,
};

describe('analytics screen logic', () => {
  it('asks for a zone’s occupancy and the summary over the same dates', () => {
    const range = { from: '2026-11-26', to: '2026-11-27' };
    expect(occupancyRequest(3, '15min', range)).toEqual({
      metric: 'zone_occupancy',
      zone_id: 3,
      interval: '15min',
      start_date: '2026-11-26',
      end_date: '2026-11-27',
    });
    expect(summaryRequest(range)).toEqual({
      metric: 'access_summary',
      start_date: '2026-11-26',
      end_date: '2026-11-27',
    });
  });

  it('knows today in the project’s time zone, not the browser’s', () => {
    const lateUtc = new Date('2026-11-26T23:30:00Z');
    expect(todayIn('UTC', lateUtc)).toBe('2026-11-26');
    expect(todayIn('Europe/Berlin', lateUtc)).toBe('2026-11-27');
    expect(todayIn('America/New_York', lateUtc)).toBe('2026-11-26');
    expect(todayIn('Not/AZone', lateUtc)).toMatch(/^\d{4}-\d{2}-\d{2}$/);
  });

  it('labels buckets with their own local clock time, and the date when the range spans days', () => {
    expect(bucketLabel('2026-11-26T09:15:00+01:00', false)).toBe('09:15');
    expect(bucketLabel('2026-11-26T09:15:00+01:00', true)).toBe('11-26 09:15');
    const oneDay = occupancyRows(
      occupancy([
        ['2026-11-26T09:00:00+01:00', 1, 0, 1],
        ['2026-11-26T10:00:00+01:00', 0, 0, 1],
      ]),
    );
    expect(oneDay.map((r) => r.label)).toEqual(['09:00', '10:00']);
    const twoDays = occupancyRows(
      occupancy([
        ['2026-11-26T23:00:00+01:00', 1, 0, 1],
        ['2026-11-27T00:00:00+01:00', 0, 1, 0],
      ]),
    );
    expect(twoDays.map((r) => r.label)).toEqual(['11-26 23:00', '11-27 00:00']);
  });

  it('finds the busiest bucket and the totals the chart’s text alternative says', () => {
    const rows = occupancyRows(
      occupancy([
        ['2026-11-26T09:00:00+01:00', 3, 0, 3],
        ['2026-11-26T10:00:00+01:00', 2, 1, 4],
        ['2026-11-26T11:00:00+01:00', 0, 4, 0],
      ]),
    );
    const facts = occupancyFacts(rows);
    expect(facts).toMatchObject({ entries: 5, exits: 5 });
    expect(facts.peak).toMatchObject({ label: '10:00', occupancy: 4 });
    expect(occupancyFacts([]).peak).toBeNull();
  });

  it('draws the occupancy chart from the table’s rows: the count inside as a line over entry and exit bars', () => {
    const rows = occupancyRows(
      occupancy([
        ['2026-11-26T09:00:00+01:00', 3, 0, 3],
        ['2026-11-26T10:00:00+01:00', 2, 1, 4],
      ]),
    );
    const data = occupancyChart(rows, { occupancy: 'Inside', entries: 'Entries', exits: 'Exits' });
    expect(data.labels).toEqual(['09:00', '10:00']);
    expect(data.datasets.map((d) => [d.type, d.label, d.data])).toEqual([
      ['line', 'Inside', [3, 4]],
      ['bar', 'Entries', [3, 2]],
      ['bar', 'Exits', [0, 1]],
    ]);
  });

  it('names the summary’s rows, a deleted access point or the no-zone row by what is known', () => {
    const unnamed = (id: number | null) => (id === null ? 'No zone' : `#${id}`);
    expect(summaryRows(summary, 'access_point', unnamed).map((r) => [r.name, r.granted, r.denied])).toEqual([
      ['Main Gate In', 3, 1],
      ['#9', 2, 1],
    ]);
    expect(summaryRows(summary, 'zone', unnamed).map((r) => r.name)).toEqual(['No zone', 'Arena']);
    const chart = summaryChart(summaryRows(summary, 'access_point', unnamed), { granted: 'Granted', denied: 'Denied' });
    expect(chart.datasets.map((d) => d.data)).toEqual([
      [3, 2],
      [1, 1],
    ]);
  });

  it('lists the denial reasons that happened first', () => {
    expect(
      reasonRows(summary)
        .slice(0, 2)
        .map((r) => r.reason)
        .sort(),
    ).toEqual(['invalid_credential', 'not_authorized']);
    expect(reasonRows(summary)).toHaveLength(6);
  });
});
