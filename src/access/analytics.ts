import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import type { DenialReason } from './engine.js';
import { bucketBoundaries, localIso, type BucketInterval } from './zoned-time.js';
import { readSnapshot } from '../store/transactions.js';
import { DENIAL_REASONS } from '../resources/access-events.js';

// Analytics metrics (spec: Analytics), computed from the access-event log by
// index range counts, never by reading events one by one (docs/engine.md, "Analytics"):
//   zone_occupancy  entries, exits and occupancy per 15min / hour / day bucket of the
//                   project's time zone. entries = granted `in` passes at the zone; exits =
//                   granted `out` passes plus entries elsewhere that moved someone out of it;
//                   occupancy = the zone's count at the end of the bucket, the running sum of
//                   the events that changed it (`counted`, `from_zone_id`) since the log began.
//   access_summary  granted, denied, denials by reason, by zone, by access point and unique
//                   attendees (distinct attendees granted at least once) in a range.

export const MAX_BUCKETS = 10_000;

const isoUtc = (ms: number) => new Date(ms).toISOString();

export interface OccupancyBucket {
  bucket: string;
  entries: number;
  exits: number;
  occupancy: number;
}

export interface OccupancySeries {
  /** Start of the first bucket and end of the last, local time with offset. */
  start: string;
  end: string;
  series: OccupancyBucket[];
}

export function zoneOccupancy(
  db: Database,
  q: { zoneId: number; interval: BucketInterval; start: number; end: number; timeZone: string },
): OccupancySeries | null {
  const bounds = bucketBoundaries(q.start, q.end, q.interval, q.timeZone, MAX_BUCKETS);
  if (!bounds) return null;
  const first = isoUtc(bounds[0]!);
  const base = statement(
    db,
    `SELECT
       (SELECT COUNT(*) FROM access_events WHERE access_zone_id = @zone AND granted = 1 AND movement = 'in' AND scanned_at < @before AND counted = 1)
     - (SELECT COUNT(*) FROM access_events WHERE access_zone_id = @zone AND granted = 1 AND movement = 'out' AND scanned_at < @before AND counted = 1)
     - (SELECT COUNT(*) FROM access_events WHERE from_zone_id = @zone AND scanned_at < @before) AS n`,
  ).get({ zone: q.zoneId, before: first }) as { n: number };
  // One index range count per bucket (a plan SQLite cannot get wrong), not a join over a
  // list of buckets: measured, the join took 33 s for a week of hours over 1M events.
  const passes = statement(
    db,
    `SELECT COALESCE(SUM(movement = 'in'), 0) AS entries, COALESCE(SUM(movement = 'out'), 0) AS out_passes,
            COALESCE(SUM(movement = 'in' AND counted = 1), 0) AS counted_in, COALESCE(SUM(movement = 'out' AND counted = 1), 0) AS counted_out
       FROM access_events INDEXED BY access_events_zone_moves
      WHERE access_zone_id = @zone AND granted = 1 AND movement IN ('in', 'out') AND scanned_at >= @lo AND scanned_at < @hi`,
  );
  const moves = statement(
    db,
    'SELECT COUNT(*) AS n FROM access_events INDEXED BY access_events_from_zone WHERE from_zone_id = @zone AND scanned_at >= @lo AND scanned_at < @hi',
  );
  type Passes = { entries: number; out_passes: number; counted_in: number; counted_out: number };
  const byBucket = new Map<number, Passes>();
  const movedOut = new Map<number, number>();
  readSnapshot(db, () => {
    for (let i = 0; i < bounds.length - 1; i++) {
      const range = { zone: q.zoneId, lo: isoUtc(bounds[i]!), hi: isoUtc(bounds[i + 1]!) };
      byBucket.set(i, passes.get(range) as Passes);
      movedOut.set(i, (moves.get(range) as { n: number }).n);
    }
  }); // one read transaction: every bucket sees the same log
  let occupancy = base.n;
  const series = bounds.slice(0, -1).map((lo, i) => {
    const p = byBucket.get(i);
    const moved = movedOut.get(i) ?? 0;
    occupancy += (p?.counted_in ?? 0) - (p?.counted_out ?? 0) - moved;
    return {
      bucket: localIso(lo, q.timeZone),
      entries: p?.entries ?? 0,
      exits: (p?.out_passes ?? 0) + moved,
      occupancy,
    };
  });
  return { start: localIso(bounds[0]!, q.timeZone), end: localIso(bounds[bounds.length - 1]!, q.timeZone), series };
}

export interface AccessSummary {
  granted: number;
  denied: number;
  denied_by_reason: Record<DenialReason, number>;
  by_zone: { access_zone_id: number | null; name: string | null; granted: number; denied: number }[];
  by_access_point: { access_point_id: number; name: string | null; granted: number; denied: number }[];
  unique_attendees: number;
}

export function accessSummary(db: Database, q: { projectId: number; start: number; end: number }): AccessSummary {
  const params = { project: q.projectId, from: isoUtc(q.start), to: isoUtc(q.end) };
  const groups = statement(
    db,
    `SELECT granted, reason, access_zone_id, access_point_id, COUNT(*) AS n FROM access_events
      WHERE project_id = @project AND scanned_at >= @from AND scanned_at < @to
      GROUP BY granted, reason, access_zone_id, access_point_id`,
  ).all(params) as {
    granted: number;
    reason: DenialReason | null;
    access_zone_id: number | null;
    access_point_id: number;
    n: number;
  }[];
  const { unique } = statement(
    db,
    `SELECT COUNT(DISTINCT attendee_id) AS "unique" FROM access_events
      WHERE project_id = @project AND scanned_at >= @from AND scanned_at < @to AND granted = 1 AND attendee_id IS NOT NULL`,
  ).get(params) as { unique: number };
  const zoneNames = new Map(
    (
      statement(db, 'SELECT id, name FROM access_zones WHERE project_id = ?').all(q.projectId) as {
        id: number;
        name: string;
      }[]
    ).map((z) => [z.id, z.name]),
  );
  const pointNames = new Map(
    (
      statement(db, 'SELECT id, name FROM access_points WHERE project_id = ?').all(q.projectId) as {
        id: number;
        name: string;
      }[]
    ).map((p) => [p.id, p.name]),
  );

  const summary: AccessSummary = {
    granted: 0,
    denied: 0,
    denied_by_reason: Object.fromEntries(DENIAL_REASONS.map((r) => [r, 0])) as Record<DenialReason, number>,
    by_zone: [],
    by_access_point: [],
    unique_attendees: unique,
  };
  const zones = new Map<number | null, AccessSummary['by_zone'][number]>();
  const points = new Map<number, AccessSummary['by_access_point'][number]>();
  for (const g of groups) {
    const key = g.granted === 1 ? 'granted' : 'denied';
    summary[key] += g.n;
    if (g.granted !== 1 && g.reason) summary.denied_by_reason[g.reason] += g.n;
    let zone = zones.get(g.access_zone_id);
    if (!zone)
      zones.set(
        g.access_zone_id,
        (zone = {
          access_zone_id: g.access_zone_id,
          name: g.access_zone_id === null ? null : (zoneNames.get(g.access_zone_id) ?? null),
          granted: 0,
          denied: 0,
        }),
      );
    zone[key] += g.n;
    let point = points.get(g.access_point_id);
    if (!point)
      points.set(
        g.access_point_id,
        (point = {
          access_point_id: g.access_point_id,
          name: pointNames.get(g.access_point_id) ?? null,
          granted: 0,
          denied: 0,
        }),
      );
    point[key] += g.n;
  }
  const byId = <T extends { granted: number; denied: number }>(a: T, b: T, id: (x: T) => number | null) =>
    (id(a) ?? 0) - (id(b) ?? 0);
  summary.by_zone = [...zones.values()].sort((a, b) => byId(a, b, (x) => x.access_zone_id));
  summary.by_access_point = [...points.values()].sort((a, b) => byId(a, b, (x) => x.access_point_id));
  return summary;
}
