import { z } from 'zod';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import { DENIAL_REASONS, REASON_DETAILS } from '../resources/access-events.js';

// Reading the access-event log (docs/engine.md): filters by zone, access point, attendee,
// result, reason and time range; newest first.

const instant = z.iso.datetime({ offset: true }).transform((s) => new Date(s).toISOString());

export const accessEventFilters = z.object({
  access_zone_id: z.coerce.number().int().positive().optional(),
  access_point_id: z.coerce.number().int().positive().optional(),
  attendee_id: z.coerce.number().int().positive().optional(),
  result: z.enum(['granted', 'denied']).optional(),
  reason: z.enum(DENIAL_REASONS).optional(),
  from: instant.optional().describe('scanned at or after'),
  to: instant.optional().describe('scanned before'),
});

export type AccessEventFilters = z.output<typeof accessEventFilters>;

export const accessEventSchema = z.object({
  id: z.number().int(),
  uuid: z.string(),
  access_point_id: z.number().int(),
  access_zone_id: z.number().int().nullable(),
  reader_id: z.number().int().nullable(),
  credential_id: z.number().int().nullable(),
  credential_value: z.string(),
  attendee_id: z.number().int().nullable(),
  granted: z.boolean(),
  reason: z.string().nullable(),
  reason_detail: z
    .enum(REASON_DETAILS)
    .nullable()
    .describe(
      'which cause of not_authorized refused it: type_not_permitted, already_inside, access_point_inactive, access_point_without_zone (the last two: no access_zone_id); null otherwise',
    ),
  movement: z.string().nullable(),
  scanned_at: z.string(),
  decided_at: z.string(),
  source: z.string(),
  // Cloud sync (docs/sync.md): set on a cloud for events uploaded from an edge, null otherwise.
  edge_id: z.number().int().nullable().describe('the edge that decided it (cloud), null when decided here'),
  uploaded_at: z.string().nullable().describe('when it reached the cloud'),
  clock_offset_ms: z
    .number()
    .int()
    .nullable()
    .describe(
      "an edge's event (on the edge and on its cloud): cloud time minus the edge's clock in force when it decided (never applied to scanned_at); null elsewhere",
    ),
  clock_unsynchronised: z
    .boolean()
    .nullable()
    .describe("true when the edge's clock was not known to be within tolerance when it decided"),
  offline_verified: z
    .boolean()
    .describe(
      "ours: decided from a signed credential value's verified claims by a box that did not hold the credential (docs/credentials.md); false otherwise",
    ),
  effective_at: z
    .string()
    .describe(
      "scanned_at on the cloud's clock: corrected by clock_offset_ms where the edge's clock was off (clock_unsynchronised), else scanned_at itself; what orders a holder's movements across edges",
    ),
  duplicate_of: z.string().nullable().describe('a duplicate entry: the uuid of the entry at another edge it repeats'),
  review: z
    .string()
    .nullable()
    .describe(
      "flagged for review: revoked_credential or blocklisted at the scan time; unknown_reference: it names what its edge's project never held (it moved no one)",
    ),
  deleted_reference: z
    .string()
    .nullable()
    .describe(
      'what it names that the cloud no longer has (deleted meanwhile, or never known): reader, access_point, access_zone, comma-separated; such an event moved no one',
    ),
});

export type AccessEventResource = z.infer<typeof accessEventSchema>;

export function queryAccessEvents(
  db: Database,
  projectId: number,
  f: AccessEventFilters,
  offset: number,
  limit: number,
) {
  const where = ['project_id = @projectId'];
  const params: Record<string, string | number> = { projectId, offset, limit };
  const add = (clause: string, key: string, value: string | number | undefined) => {
    if (value === undefined) return;
    where.push(clause);
    params[key] = value;
  };
  add('access_zone_id = @zone', 'zone', f.access_zone_id);
  add('access_point_id = @point', 'point', f.access_point_id);
  add('attendee_id = @attendee', 'attendee', f.attendee_id);
  add('granted = @granted', 'granted', f.result === undefined ? undefined : f.result === 'granted' ? 1 : 0);
  add('reason = @reason', 'reason', f.reason);
  add('scanned_at >= @from', 'from', f.from);
  add('scanned_at < @to', 'to', f.to);
  const sqlWhere = where.join(' AND ');
  const rows = statement(
    db,
    `SELECT * FROM access_events WHERE ${sqlWhere} ORDER BY scanned_at DESC, id DESC LIMIT @limit OFFSET @offset`,
  ).all(params) as Record<string, unknown>[];
  const { n } = statement(db, `SELECT COUNT(*) AS n FROM access_events WHERE ${sqlWhere}`).get(params) as { n: number };
  const items = rows.map(
    ({
      project_id: _p,
      request_key: _k,
      counted: _c,
      from_zone_id: _f,
      granted,
      clock_unsynchronised,
      offline_verified,
      ...rest
    }) =>
      ({
        ...rest,
        granted: granted === 1,
        offline_verified: offline_verified === 1,
        clock_unsynchronised: clock_unsynchronised === null ? null : clock_unsynchronised === 1,
      }) as AccessEventResource,
  );
  return { items, total: n };
}
