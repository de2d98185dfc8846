import { z } from 'zod';
import { conditions } from '../responses.js';
import type { Database } from '../../store/database.js';
import { accessEventFilters, accessEventSchema, queryAccessEvents } from '../../journal/event-query.js';
import { collectionSchema, pageQuery, paginate, window, type PageQuery } from '../pagination.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { csvDocument } from '../csv.js';
import { PROJECT_PATH, projectParams } from './crud.js';

// GET .../access-events: the access-event log, filtered and paginated; ?format=csv exports
// every matching event (search/export rate class, like every list that can be exported).

const CSV_COLUMNS = [
  'uuid',
  'scanned_at',
  'decided_at',
  'access_point_id',
  'access_zone_id',
  'reader_id',
  'credential_id',
  'credential_value',
  'attendee_id',
  'granted',
  'reason',
  'movement',
  'source',
  'reason_detail', // last: added after the others, so their places in an export stay as they were
] as const;

/** `settled`: resolves once every answered scan is in access_events
 * (the journal's ingest lag, journal/event-journal.ts). */
export function accessEventRoutes({ db, settled }: { db: () => Database; settled: () => Promise<void> }): AnyRoute[] {
  return [
    defineRoute({
      method: 'GET',
      path: `${PROJECT_PATH}/access-events`,
      operationId: 'access-events.index',
      tags: ['Access events'],
      summary: 'Access events, newest first, with filters; ?format=csv exports all that match',
      ability: 'access:read',
      rateClass: 'search',
      project: true,
      params: projectParams,
      query: pageQuery.extend(accessEventFilters.shape).extend({ format: z.enum(['json', 'csv']).optional() }),
      responses: {
        200: {
          description: 'A page of access events, or with ?format=csv every matching event as text/csv',
          schema: collectionSchema(accessEventSchema),
          text: 'text/csv',
        },
      },
      conditions: [conditions.eventLogBehind],
      handler: async ({ project, query: q, koa }) => {
        await settled();
        const query = q as PageQuery & Record<string, unknown>;
        if (query.format === 'csv') {
          const { items } = queryAccessEvents(
            db(),
            project!.id,
            accessEventFilters.parse(query),
            0,
            Number.MAX_SAFE_INTEGER,
          );
          return {
            body: csvDocument(
              CSV_COLUMNS,
              items.map((e) => CSV_COLUMNS.map((c) => e[c])),
            ),
            headers: {
              'Content-Type': 'text/csv; charset=utf-8',
              'Content-Disposition': `attachment; filename="access-events-${project!.slug}.csv"`,
            },
          };
        }
        const { items, total } = queryAccessEvents(
          db(),
          project!.id,
          accessEventFilters.parse(query),
          window(query).offset,
          window(query).limit,
        );
        return { body: paginate(koa, query, items, total) };
      },
    }),
  ];
}
