// The live feed's rows (docs/console.md): the access-event log's latest page, then the socket's
// AccessGranted / AccessDenied events, newest first, in a bounded window (the manifest's
// `feedWindow`, 200), so a long shift or a burst of scans cannot grow the page without end.
// Events arriving together are added in one batch, on an animation frame, at most every
// UPDATE_EVERY_MS.

/** GET .../access-events: one event (src/journal/event-query.ts). */
export interface AccessEvent {
  id: number;
  access_point_id: number;
  credential_id: number | null;
  credential_value: string;
  attendee_id: number | null;
  granted: boolean;
  reason: string | null;
  /** Which cause of not_authorized it was (already_inside, access_point_inactive, ...), else null. */
  reason_detail: string | null;
  scanned_at: string;
}
/** Socket payloads (src/realtime/event-schemas.ts). */
export interface AccessGranted {
  attendee_id: number;
  attendee: { first_name: string; last_name: string };
  access_point_id: number;
  access_zone_id: number;
  credential_id: number;
  timestamp: string;
}
export interface AccessDenied {
  credential_value: string;
  access_point_id: number;
  reason: string;
  /** Absent from an appliance older than the field: taken as null. */
  reason_detail?: string | null;
  timestamp: string;
}

/** GET .../access-zones: a zone with its live count (ZoneOccupancyChanged moves it). */
export interface Zone {
  id: number;
  name: string;
  current_count: number;
  capacity: number | null;
}

export interface FeedRow {
  /** The same scan from the log and from the socket has one key. */
  key: string;
  granted: boolean;
  reason: string | null;
  /** Said instead of the reason when set: "Already inside" says more than "Not allowed in this zone". */
  reasonDetail: string | null;
  attendeeId: number | null;
  /** Known from a grant's event; for the log's rows looked up by attendeeId. */
  attendeeName: string | null;
  credential: string;
  accessPointId: number;
  at: string;
}

const rowKey = (granted: boolean, accessPointId: number, credential: string | number | null, at: string) =>
  `${granted ? 'g' : 'd'}|${accessPointId}|${credential}|${Date.parse(at)}`;

export function fromLog(e: AccessEvent): FeedRow {
  return {
    key: rowKey(e.granted, e.access_point_id, e.granted ? e.credential_id : e.credential_value, e.scanned_at),
    granted: e.granted,
    reason: e.reason,
    reasonDetail: e.reason_detail ?? null,
    attendeeId: e.attendee_id,
    attendeeName: null,
    credential: e.credential_value,
    accessPointId: e.access_point_id,
    at: e.scanned_at,
  };
}

export function fromGranted(e: AccessGranted): FeedRow {
  return {
    key: rowKey(true, e.access_point_id, e.credential_id, e.timestamp),
    granted: true,
    reason: null,
    reasonDetail: null,
    attendeeId: e.attendee_id,
    attendeeName: `${e.attendee.first_name} ${e.attendee.last_name}`.trim(),
    credential: '',
    accessPointId: e.access_point_id,
    at: e.timestamp,
  };
}

export function fromDenied(e: AccessDenied): FeedRow {
  return {
    key: rowKey(false, e.access_point_id, e.credential_value, e.timestamp),
    granted: false,
    reason: e.reason,
    reasonDetail: e.reason_detail ?? null,
    attendeeId: null,
    attendeeName: null,
    credential: e.credential_value,
    accessPointId: e.access_point_id,
    at: e.timestamp,
  };
}

/** `incoming` (oldest first) on top of `rows` (newest first), without repeats, at most `limit` rows. */
export function addRows(rows: readonly FeedRow[], incoming: readonly FeedRow[], limit: number): FeedRow[] {
  const seen = new Set(rows.map((r) => r.key));
  const fresh: FeedRow[] = [];
  for (const row of incoming) {
    if (seen.has(row.key)) continue;
    seen.add(row.key);
    fresh.push(row);
  }
  return [...fresh.reverse(), ...rows].slice(0, Math.max(1, limit));
}

/**
 * Runs each scheduled job on an animation frame at least `ms` after the previous one ran. A page that
 * changes on every frame pays a render, a style pass, a layout and a paint each time: at 1,000 events a
 * second that was ~20 ms of the main thread's CPU a frame and Chromium drew 11-16 frames/s on a shared
 * 2-core box; updated at most ten times a second, 24-32 (bench:console). Ten updates a second is more
 * than anyone reads, and the frames between them stay cheap.
 */
export function framesEvery(ms: number, now: () => number = () => performance.now()) {
  let last = Number.NEGATIVE_INFINITY;
  return (run: () => void) => {
    const go = () =>
      requestAnimationFrame(() => {
        last = now();
        run();
      });
    const wait = last + ms - now();
    if (wait > 0) setTimeout(go, wait);
    else go();
  };
}

/** How often the live doors update at most (the feed's rows, the zones' counts). */
export const UPDATE_EVERY_MS = 100;

/** Collects rows and hands them over in one batch per scheduled run: once per frame by default (a burst of events is one update of the page). */
export function batcher(
  flush: (rows: FeedRow[]) => void,
  limit: number,
  schedule: (run: () => void) => void = (run) => requestAnimationFrame(run),
) {
  let pending: FeedRow[] = [];
  let scheduled = false;
  return (row: FeedRow) => {
    pending.push(row);
    // A hidden tab runs no frames: keep only what the window could show.
    if (pending.length > limit) pending.splice(0, pending.length - limit);
    if (scheduled) return;
    scheduled = true;
    schedule(() => {
      scheduled = false;
      const batch = pending;
      pending = [];
      flush(batch);
    });
  };
}

/** ZoneOccupancyChanged: a zone's count as a grant moved it. */
export interface ZoneMove {
  access_zone_id: number;
  current_count: number;
  capacity: number | null;
}

/**
 * Collects zone moves and hands over the latest of each zone once per scheduled run (a frame by
 * default; the live doors' updates with the rows): every counted grant moves a zone, so a busy venue
 * sends hundreds a second, and applying each at once rendered the page for each. Bounded by the number
 * of zones while no frame runs.
 */
export function zoneMover(
  flush: (latest: Map<number, ZoneMove>) => void,
  schedule: (run: () => void) => void = (run) => requestAnimationFrame(run),
) {
  let pending = new Map<number, ZoneMove>();
  let scheduled = false;
  return (move: ZoneMove) => {
    pending.set(move.access_zone_id, move);
    if (scheduled) return;
    scheduled = true;
    schedule(() => {
      scheduled = false;
      const latest = pending;
      pending = new Map();
      flush(latest);
    });
  };
}

/** `zones` with the latest counts applied. */
export function moveZones(zones: readonly Zone[], moves: ReadonlyMap<number, ZoneMove>): Zone[] {
  return zones.map((z) => {
    const move = moves.get(z.id);
    return move ? { ...z, current_count: move.current_count, capacity: move.capacity } : z;
  });
}

/**
 * A zone created or changed (AccessZoneUpdated, the resource with its count now): a new one takes
 * its place by id, as REST lists them; a known one takes the event's name, capacity and count.
 */
export function upsertZone(zones: readonly Zone[], zone: Zone): Zone[] {
  const next: Zone = { id: zone.id, name: zone.name, current_count: zone.current_count, capacity: zone.capacity };
  const at = zones.findIndex((z) => z.id >= zone.id);
  if (at === -1) return [...zones, next];
  return zones[at]!.id === zone.id
    ? zones.map((z, i) => (i === at ? next : z))
    : [...zones.slice(0, at), next, ...zones.slice(at)];
}

/** A zone deleted (AccessZoneDeleted {id}). */
export function removeZone(zones: readonly Zone[], id: number): Zone[] {
  return zones.some((z) => z.id === id) ? zones.filter((z) => z.id !== id) : (zones as Zone[]);
}

/** A gate with many denials lately (docs/console.md: "a spike of denials at one gate stands out"). */
export interface DenialSpike {
  accessPointId: number;
  count: number;
}

/** Gates with at least `threshold` denials in the `seconds` before `now`, most first. */
export function denialSpikes(rows: readonly FeedRow[], now: number, seconds: number, threshold: number): DenialSpike[] {
  const since = now - seconds * 1000;
  const counts = new Map<number, number>();
  for (const row of rows) {
    if (row.granted || Date.parse(row.at) < since) continue;
    counts.set(row.accessPointId, (counts.get(row.accessPointId) ?? 0) + 1);
  }
  return [...counts]
    .filter(([, count]) => count >= Math.max(1, threshold))
    .map(([accessPointId, count]) => ({ accessPointId, count }))
    .sort((a, b) => b.count - a.count || a.accessPointId - b.accessPointId);
}

/**
 * A feed row's time in the venue's time zone: the time alone when the scan was today there, the
 * date with it otherwise (a box that was off overnight shows yesterday's log on top). `timeZone`
 * undefined: the browser's. One instance per time zone; its `format` runs for every new row.
 */
export function eventTimes(
  timeZone: string | undefined,
  locale?: string,
): { format(at: string, now?: number): string; zoneName: string } {
  const make = (options: Intl.DateTimeFormatOptions) => {
    try {
      return new Intl.DateTimeFormat(locale, { ...options, timeZone });
    } catch {
      return new Intl.DateTimeFormat(locale, options); // a zone the browser does not know
    }
  };
  const timeOnly = make({ hour: '2-digit', minute: '2-digit', second: '2-digit' });
  const withDate = make({ day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit', second: '2-digit' });
  const day = make({ year: 'numeric', month: '2-digit', day: '2-digit' });
  return {
    format(at: string, now = Date.now()) {
      const when = new Date(at);
      return day.format(when) === day.format(new Date(now)) ? timeOnly.format(when) : withDate.format(when);
    },
    zoneName: timeOnly.resolvedOptions().timeZone,
  };
}
