// The Analytics screen's logic without a page (docs/console.md "Analytics"):
// the requests of POST .../analytics/metrics (src/http/routes/analytics.ts), bucket labels from
// the buckets' own local times, the rows of the tables and the charts' data. The charts and the
// tables are drawn from the same rows, so the numbers a screen reader hears are the ones drawn.
import type { ChartData } from 'chart.js';

export type Interval = '15min' | 'hour';

export interface OccupancyBucket {
  bucket: string;
  entries: number;
  exits: number;
  occupancy: number;
}
export interface ZoneOccupancy {
  metric: 'zone_occupancy';
  zone_id: number;
  interval: Interval | 'day';
  timezone: string;
  start_date: string;
  end_date: string;
  series: OccupancyBucket[];
}
export interface Counts {
  granted: number;
  denied: number;
}
export interface AccessSummary extends Counts {
  metric: 'access_summary';
  start_date: string;
  end_date: string;
  denied_by_reason: Record<string, number>;
  by_zone: (Counts & { access_zone_id: number | null; name: string | null })[];
  by_access_point: (Counts & { access_point_id: number; name: string | null })[];
  unique_attendees: number;
}

export interface Range {
  /** Dates (YYYY-MM-DD) in the project's time zone; the end date's whole day is included. */
  from: string;
  to: string;
}

/** Today's date in a time zone, as a date input holds it. */
export function todayIn(timeZone: string | undefined, now = new Date()): string {
  try {
    return new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(
      now,
    );
  } catch {
    return new Intl.DateTimeFormat('en-CA', { year: 'numeric', month: '2-digit', day: '2-digit' }).format(now);
  }
}

export const occupancyRequest = (zoneId: number, interval: Interval, range: Range) => ({
  metric: 'zone_occupancy',
  zone_id: zoneId,
  interval,
  start_date: range.from,
  end_date: range.to,
});
export const summaryRequest = (range: Range) => ({
  metric: 'access_summary',
  start_date: range.from,
  end_date: range.to,
});

/**
 * A bucket's label: its local clock time ("09:15"), with the date ("11-26 09:15") when the range
 * spans days. The bucket is local time with its offset (`2026-11-26T09:15:00+01:00`), so the text
 * is read, not converted: no date library, no browser time zone involved.
 */
export function bucketLabel(bucket: string, withDate: boolean): string {
  const time = bucket.slice(11, 16);
  return withDate ? `${bucket.slice(5, 10)} ${time}` : time;
}

export const spansDays = (series: readonly OccupancyBucket[]) =>
  series.length > 0 && series[0]!.bucket.slice(0, 10) !== series[series.length - 1]!.bucket.slice(0, 10);

export interface OccupancyRow extends OccupancyBucket {
  label: string;
}
export function occupancyRows(data: ZoneOccupancy): OccupancyRow[] {
  const withDate = spansDays(data.series);
  return data.series.map((b) => ({ ...b, label: bucketLabel(b.bucket, withDate) }));
}

/** The busiest bucket and the range's totals: what the chart's text alternative says. */
export function occupancyFacts(rows: readonly OccupancyRow[]) {
  let peak: OccupancyRow | null = null;
  let entries = 0;
  let exits = 0;
  for (const r of rows) {
    entries += r.entries;
    exits += r.exits;
    if (!peak || r.occupancy > peak.occupancy) peak = r;
  }
  return { peak, entries, exits };
}

export interface ChartColours {
  occupancy: string;
  entries: string;
  exits: string;
  granted: string;
  denied: string;
}
export const COLOURS: ChartColours = {
  occupancy: '#1d4ed8',
  entries: '#15803d',
  exits: '#b45309',
  granted: '#15803d',
  denied: '#b91c1c',
};

export interface SeriesNames {
  occupancy: string;
  entries: string;
  exits: string;
}
/** Entries and exits as bars, the count inside as a line over them. */
export function occupancyChart(
  rows: readonly OccupancyRow[],
  names: SeriesNames,
  colours = COLOURS,
): ChartData<'bar' | 'line'> {
  return {
    labels: rows.map((r) => r.label),
    datasets: [
      {
        type: 'line',
        label: names.occupancy,
        data: rows.map((r) => r.occupancy),
        borderColor: colours.occupancy,
        backgroundColor: colours.occupancy,
        pointRadius: 0,
        borderWidth: 2,
        order: 0,
      },
      {
        type: 'bar',
        label: names.entries,
        data: rows.map((r) => r.entries),
        backgroundColor: colours.entries,
        order: 1,
      },
      { type: 'bar', label: names.exits, data: rows.map((r) => r.exits), backgroundColor: colours.exits, order: 1 },
    ],
  };
}

export interface SummaryRow extends Counts {
  key: string;
  name: string;
}
/** Per access point (or zone) rows, named: a point or zone deleted since is named by its id. */
export function summaryRows(
  summary: AccessSummary,
  by: 'access_point' | 'zone',
  unnamed: (id: number | null) => string,
): SummaryRow[] {
  if (by === 'zone')
    return summary.by_zone.map((z) => ({
      key: `z${z.access_zone_id}`,
      name: z.name ?? unnamed(z.access_zone_id),
      granted: z.granted,
      denied: z.denied,
    }));
  return summary.by_access_point.map((p) => ({
    key: `p${p.access_point_id}`,
    name: p.name ?? unnamed(p.access_point_id),
    granted: p.granted,
    denied: p.denied,
  }));
}

/** Denials by reason, the reasons that happened first (then the catalogue's order). */
export function reasonRows(summary: AccessSummary): { reason: string; count: number }[] {
  return Object.entries(summary.denied_by_reason)
    .map(([reason, count]) => ({ reason, count }))
    .sort((a, b) => Number(b.count > 0) - Number(a.count > 0));
}

/** Granted and denied per row, stacked. */
export function summaryChart(
  rows: readonly SummaryRow[],
  names: { granted: string; denied: string },
  colours = COLOURS,
): ChartData<'bar'> {
  return {
    labels: rows.map((r) => r.name),
    datasets: [
      { label: names.granted, data: rows.map((r) => r.granted), backgroundColor: colours.granted },
      { label: names.denied, data: rows.map((r) => r.denied), backgroundColor: colours.denied },
    ],
  };
}
