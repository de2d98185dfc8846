import { z } from 'zod';

// What sync flagged for review, as REST (GET .../sync/conflicts), the sync.conflict webhook and
// the SyncConflict event show it (docs/sync.md: conflicts; the kinds are told in sync/conflicts.ts,
// which records them). In the core so the realtime schemas and the bus need not reach into the
// sync wing. A leaf (zod only).

export const CONFLICT_KINDS = [
  'duplicate_entry',
  'revoked_credential',
  'blocklisted',
  'attendee_field',
  'credential_value',
  'refused_change',
  'id_conflict',
  'deleted_row',
  'deleted_reference',
  'unknown_reference',
] as const;
export type ConflictKind = (typeof CONFLICT_KINDS)[number];

export const conflictSchema = z.object({
  id: z.number().int(),
  kind: z.enum(CONFLICT_KINDS),
  edge_id: z.number().int().nullable(),
  event_id: z.string().nullable().describe('the flagged access event (uuid)'),
  duplicate_of: z.string().nullable().describe('duplicate_entry: the earlier entry it repeats (uuid)'),
  entity: z.string().nullable(),
  entity_id: z.number().int().nullable(),
  field: z.string().nullable(),
  edge_value: z
    .unknown()
    .describe(
      "attendee_field, refused_change: the edge's value (not applied); a change refused whole, id_conflict, deleted_row: the change as sent ({event, data}); deleted_reference: the event's {reader_id, access_point_id, access_zone_id}; unknown_reference: the event's {reader_id, access_point_id, access_zone_id, attendee_id, credential_id}",
    ),
  cloud_value: z
    .unknown()
    .describe(
      "attendee_field, refused_change: the cloud's value (kept); id_conflict: the row the cloud holds under that id (null: none in this project); deleted_row: {deleted_at} when the cloud deleted, its row as the edge's deletion found it otherwise; deleted_reference: [{entity, id, deleted_at}] of what is gone (deleted_at null: never known here); unknown_reference: [{entity, id}] of what the edge's project never held",
    ),
  detail: z
    .string()
    .nullable()
    .describe(
      'refused_change, id_conflict, deleted_row, deleted_reference, unknown_reference: what happened, in words',
    ),
  created_at: z.string(),
  reviewed_at: z.string().nullable(),
  cleared_at: z
    .string()
    .nullable()
    .describe(
      'a flag a later arrival explained (a double entry whose missing exit arrived, or that now repeats a late entry landed just before it): kept for the record',
    ),
});
export type SyncConflictResource = z.infer<typeof conflictSchema>;
