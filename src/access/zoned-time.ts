// Wall-clock arithmetic in a project's time zone, for analytics buckets: UTC offsets, local
// midnights and ISO labels with the local offset. One Intl formatter per zone.

const formatters = new Map<string, Intl.DateTimeFormat>();
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    formatters.set(timeZone, f);
  }
  return f;
}

export interface WallTime {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

export function wallTime(at: number, timeZone: string): WallTime {
  const parts: Record<string, number> = {};
  for (const p of formatter(timeZone).formatToParts(at)) if (p.type !== 'literal') parts[p.type] = Number(p.value);
  return {
    year: parts.year!,
    month: parts.month!,
    day: parts.day!,
    hour: parts.hour!,
    minute: parts.minute!,
    second: parts.second!,
  };
}

/** Local time minus UTC at that instant, in ms (whole seconds). */
export function offsetAt(at: number, timeZone: string): number {
  const w = wallTime(at, timeZone);
  return Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second) - Math.floor(at / 1000) * 1000;
}

/** The instant of a local wall-clock time (the earlier one when a DST fold repeats it). */
export function instantOf(year: number, month: number, day: number, timeZone: string, hour = 0): number {
  const guess = Date.UTC(year, month - 1, day, hour);
  const first = guess - offsetAt(guess, timeZone);
  return guess - offsetAt(first, timeZone);
}

/** ISO 8601 with the zone's offset at that instant: 2026-11-23T10:00:00+01:00. */
export function localIso(at: number, timeZone: string): string {
  const offset = offsetAt(at, timeZone);
  const w = new Date(at + offset);
  const sign = offset < 0 ? '-' : '+';
  const abs = Math.abs(offset) / 60_000;
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${w.toISOString().slice(0, 19)}${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
}

export type BucketInterval = '15min' | 'hour' | 'day';

/** Bucket boundaries covering [start, end): the first at or before start, the last at or after end. */
export function bucketBoundaries(
  start: number,
  end: number,
  interval: BucketInterval,
  timeZone: string,
  max: number,
): number[] | null {
  const out: number[] = [];
  if (interval === 'day') {
    const w = wallTime(start, timeZone);
    let date = Date.UTC(w.year, w.month - 1, w.day);
    for (;;) {
      const d = new Date(date);
      const t = instantOf(d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate(), timeZone);
      out.push(t);
      if (t >= end) return out;
      if (out.length > max) return null;
      date += DAY;
    }
  }
  const step = interval === 'hour' ? HOUR : 15 * 60_000;
  const align = (t: number) => t - ((((t + offsetAt(t, timeZone)) % step) + step) % step);
  let t = align(start);
  for (;;) {
    out.push(t);
    if (t >= end) return out;
    if (out.length > max) return null;
    const next = align(t + step); // a DST shift of less than the step realigns to the local grid
    t = next > t ? next : t + step;
  }
}
