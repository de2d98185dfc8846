// Weekday (ISO, 1 = Monday) and minute of the day of an instant in a project's time zone.
// One formatter per zone, made once: Intl formatters are costly to build, cheap to use.

const formatters = new Map<string, Intl.DateTimeFormat>();
const WEEKDAYS: Record<string, number> = { Mon: 1, Tue: 2, Wed: 3, Thu: 4, Fri: 5, Sat: 6, Sun: 7 };

// The last answer per zone, by minute: a burst of scans asks about the same minute over and over.
const lastMinute = new Map<string, { minuteOfEpoch: number; value: { weekday: number; minute: number } }>();

export function localWeekdayAndMinute(at: number, timeZone: string): { weekday: number; minute: number } {
  const minuteOfEpoch = Math.floor(at / 60_000);
  const cached = lastMinute.get(timeZone);
  if (cached?.minuteOfEpoch === minuteOfEpoch) return cached.value;
  const value = computeWeekdayAndMinute(at, timeZone);
  lastMinute.set(timeZone, { minuteOfEpoch, value });
  return value;
}

function computeWeekdayAndMinute(at: number, timeZone: string): { weekday: number; minute: number } {
  let format = formatters.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone,
      weekday: 'short',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    });
    formatters.set(timeZone, format);
  }
  let weekday = 1;
  let hour = 0;
  let minute = 0;
  for (const part of format.formatToParts(at)) {
    if (part.type === 'weekday') weekday = WEEKDAYS[part.value] ?? 1;
    else if (part.type === 'hour') hour = Number(part.value);
    else if (part.type === 'minute') minute = Number(part.value);
  }
  return { weekday, minute: hour * 60 + minute };
}
