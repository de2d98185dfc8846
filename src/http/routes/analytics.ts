import { z } from 'zod';
import { accessSummary, MAX_BUCKETS, zoneOccupancy } from '../../access/analytics.js';
import { instantOf } from '../../access/zoned-time.js';
import type { Database } from '../../store/database.js';
import { AppError, validationError } from '../../errors.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { messageSchema, single } from '../resources.js';
import { conditions } from '../responses.js';
import { PROJECT_PATH } from './crud.js';
import { DENIAL_REASONS } from '../../resources/access-events.js';

// POST .../analytics/metrics (spec: Analytics). A read, though a POST: tokens with `read` or
// `access:read` may ask (docs/decisions.md). Dates are instants with an offset, or plain dates
// read in the project's time zone (an end date includes that whole day); the range is widened
// to whole buckets. Response shapes: docs/engine.md and the OpenAPI description.

const dateInput = z
  .union([z.iso.datetime({ offset: true }), z.iso.date()])
  .describe('ISO 8601 instant with offset, or a date (YYYY-MM-DD) in the project time zone');

const metricsBody = z.discriminatedUnion('metric', [
  z.strictObject({
    metric: z.literal('zone_occupancy'),
    zone_id: z.number().int().positive(),
    interval: z.enum(['15min', 'hour', 'day']).default('hour'),
    start_date: dateInput,
    end_date: dateInput,
  }),
  z.strictObject({
    metric: z.literal('access_summary'),
    start_date: dateInput,
    end_date: dateInput,
  }),
]);

const counts = { granted: z.number().int(), denied: z.number().int() };
const zoneOccupancySchema = z.object({
  metric: z.literal('zone_occupancy'),
  zone_id: z.number().int(),
  interval: z.enum(['15min', 'hour', 'day']),
  timezone: z.string(),
  start_date: z.string().describe('start of the first bucket, local time with offset'),
  end_date: z.string().describe('end of the last bucket (exclusive), local time with offset'),
  series: z.array(
    z.object({
      bucket: z.string().describe('start of the bucket, local time with offset'),
      entries: z.number().int().describe("granted entries through the zone's access points"),
      exits: z.number().int().describe('granted exits, plus people who entered another zone from this one'),
      occupancy: z.number().int().describe('people counted inside at the end of the bucket'),
    }),
  ),
});
const accessSummarySchema = z.object({
  metric: z.literal('access_summary'),
  start_date: z.string(),
  end_date: z.string(),
  granted: z.number().int(),
  denied: z.number().int(),
  denied_by_reason: z.object(
    Object.fromEntries(DENIAL_REASONS.map((r) => [r, z.number().int()])) as Record<
      (typeof DENIAL_REASONS)[number],
      z.ZodNumber
    >,
  ),
  by_zone: z.array(z.object({ access_zone_id: z.number().int().nullable(), name: z.string().nullable(), ...counts })),
  by_access_point: z.array(z.object({ access_point_id: z.number().int(), name: z.string().nullable(), ...counts })),
  unique_attendees: z.number().int().describe('distinct attendees granted at least once'),
});

function instant(value: string, timeZone: string, endOfDay: boolean): number {
  if (value.length > 10) return Date.parse(value);
  const [y, m, d] = value.split('-').map(Number) as [number, number, number];
  if (!endOfDay) return instantOf(y, m, d, timeZone);
  const next = new Date(Date.UTC(y, m - 1, d + 1));
  return instantOf(next.getUTCFullYear(), next.getUTCMonth() + 1, next.getUTCDate(), timeZone);
}

/** `settled`: resolves once every answered scan is in access_events
 * (the journal's ingest lag, journal/event-journal.ts). */
export function analyticsRoutes({ db, settled }: { db: () => Database; settled: () => Promise<void> }): AnyRoute[] {
  return [
    defineRoute({
      method: 'POST',
      path: `${PROJECT_PATH}/analytics/metrics`,
      operationId: 'analytics.metrics',
      tags: ['Analytics'],
      summary: 'Zone occupancy over time, or a summary of access decisions',
      description:
        '`zone_occupancy` (zone_id, interval 15min|hour|day, start_date, end_date) answers a series of buckets in the project time zone; ' +
        '`access_summary` (start_date, end_date) answers granted, denied, denials by reason, by zone, by access point and unique attendees. ' +
        `At most ${MAX_BUCKETS} buckets per request.`,
      ability: 'access:read',
      readOnly: true,
      rateClass: 'search',
      project: true,
      body: metricsBody,
      responses: {
        200: { description: 'The metric', schema: single(z.union([zoneOccupancySchema, accessSummarySchema])) },
        404: { description: 'No such zone in this project', schema: messageSchema },
      },
      conditions: [conditions.eventLogBehind],
      handler: async ({ project, body }) => {
        await settled();
        const timeZone = project!.timezone;
        const start = instant(body.start_date, timeZone, false);
        const end = instant(body.end_date, timeZone, true);
        if (!(end > start)) throw validationError({ end_date: ['The end_date must be after the start_date.'] });
        if (body.metric === 'access_summary') {
          const data = {
            metric: body.metric,
            start_date: new Date(start).toISOString(),
            end_date: new Date(end).toISOString(),
            ...accessSummary(db(), { projectId: project!.id, start, end }),
          };
          return { body: { data } };
        }
        const zone = db()
          .prepare('SELECT id FROM access_zones WHERE id = ? AND project_id = ?')
          .get(body.zone_id, project!.id);
        if (!zone) throw new AppError('not_found', { resource: 'Access zone' });
        const occupancy = zoneOccupancy(db(), { zoneId: body.zone_id, interval: body.interval, start, end, timeZone });
        if (!occupancy)
          throw validationError({
            interval: [
              `The range holds more than ${MAX_BUCKETS} buckets of ${body.interval}; choose a longer interval or a shorter range.`,
            ],
          });
        const data = {
          metric: body.metric,
          zone_id: body.zone_id,
          interval: body.interval,
          timezone: timeZone,
          start_date: occupancy.start,
          end_date: occupancy.end,
          series: occupancy.series,
        };
        return { body: { data } };
      },
    }),
  ];
}
