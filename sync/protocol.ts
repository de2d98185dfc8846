import { z } from 'zod';
import { DENIAL_REASONS, REASON_DETAILS } from '../src/resources/access-events.js';

// The sync protocol's shapes (docs/sync.md), shared by the cloud's routes
// (routes.ts, which put them in the OpenAPI document) and the edge's client
// (link.ts). Every request from an edge names the protocol version it speaks in a header; a
// cloud that does not speak it answers 409 sync_protocol_unsupported and the edge stops
// syncing (it never guesses at a format it does not know). The version and its header are in the
// core (src/http/sync-protocol-version.ts): the request pipeline checks them.

/** The edge's clock when it sent the request (ms since the epoch): the cloud notes the offset. */
export const SENT_AT_HEADER = 'Gatehouse-Sync-Sent-At';

/** The most one upload request carries: items, and bytes of its body (docs/sync.md: limits). An
 * edge sends a larger batch (a bulk import goes up as every row it wrote) as several requests,
 * its feed position with the last. Parsing and validating a body holds the cloud's event loop
 * (only applying it is done in slices), so one request is kept to tens of milliseconds of that. */
export const UPLOAD_MAX_ITEMS = 1000;
export const UPLOAD_MAX_BYTES = 4 * 1024 * 1024;

/** Entities replicated to edges, in the order a decision needs them within one version. */
export const ENTITIES = [
  'access_zone',
  'access_point',
  'reader',
  'attendee_type',
  'attendee',
  'credential',
  'time_restriction',
  'blocklist_entry',
  'credential_key',
] as const;
export type Entity = (typeof ENTITIES)[number];

/**
 * Entity → its table and the columns an edge replicates (besides id, created_at, updated_at);
 * `absent`: what an edge stores for a column a change does not carry (a cloud of a build from
 * before the column sends none: an edge upgraded first must still apply its rows).
 */
export const REPLICATED: Record<
  Entity,
  { table: string; columns: readonly string[]; absent?: Readonly<Record<string, number>> }
> = {
  access_zone: {
    table: 'access_zones',
    columns: ['name', 'slug', 'capacity', 'requires_ticket', 'anti_passback'],
    absent: { anti_passback: 0 },
  },
  access_point: {
    table: 'access_points',
    columns: ['access_zone_id', 'name', 'slug', 'location', 'direction', 'is_active'],
  },
  reader: { table: 'readers', columns: ['access_point_id', 'identifier', 'type'] },
  attendee_type: { table: 'attendee_types', columns: ['name', 'slug'] },
  attendee: {
    table: 'attendees',
    columns: ['attendee_type_id', 'first_name', 'last_name', 'email', 'external_id', 'status', 'extra'],
  },
  credential: {
    table: 'credentials',
    columns: ['attendee_id', 'value', 'kind', 'status', 'valid_from', 'valid_until', 'revoked_at'],
  },
  time_restriction: {
    table: 'time_restrictions',
    columns: ['access_zone_id', 'attendee_type_id', 'days_of_week', 'start_time', 'end_time'],
  },
  blocklist_entry: { table: 'blocklist_entries', columns: ['attendee_id', 'credential_id', 'reason', 'until'] },
  // A project's public keys, for signed values the edge does not hold (docs/credentials.md): never
  // private_key, which an edge does not hold (test/sync/key-replication.test.ts).
  credential_key: { table: 'credential_keys', columns: ['public_key', 'status', 'retired_at'] },
};

/** In every answer of the protocol: which run of the cloud answered, and how far its change versions go. */
export const cloudStateSchema = z
  .object({
    incarnation: z
      .string()
      .describe(
        'made anew at each start of the cloud: an edge seeing a new one checks where it stands (docs/sync.md: a cloud restored from a backup)',
      ),
    high_water: z
      .number()
      .int()
      .describe("the cloud's newest change version: a download cursor beyond it means the cloud went back in time"),
  })
  .describe("the cloud's run and its versions' high-water mark");
export type CloudState = z.infer<typeof cloudStateSchema>;

/** A position in an edge's durable feed (docs/architecture.md: the durable feed). */
export const feedPositionSchema = z.strictObject({
  access_event_id: z.number().int().min(0),
  domain_event_seq: z.number().int().min(0),
});
export type FeedPosition = z.infer<typeof feedPositionSchema>;

const scalar = z.union([z.string(), z.number(), z.null()]);

export const changeSchema = z.object({
  entity: z.enum(ENTITIES),
  op: z.enum(['upsert', 'delete']),
  id: z.number().int(),
  version: z.number().int().describe("the cloud's change version of this row or deletion"),
  data: z
    .record(z.string(), z.union([scalar, z.array(z.number().int())]))
    .optional()
    .describe('upsert: the replicated columns, created_at, updated_at; an attendee type also zone_ids'),
});
export type Change = z.infer<typeof changeSchema>;

export const changePageSchema = z.object({
  changes: z.array(changeSchema),
  cursor: z.string().describe('opaque: send it back as ?cursor= for the next page'),
  has_more: z.boolean().describe('false once this page reached the newest change'),
  cloud: cloudStateSchema,
  server_time: z.string(),
});

/** Cursors are opaque to edges: "v1.<version>" in base64url. */
export function encodeCursor(version: number): string {
  return Buffer.from(`v1.${version}`).toString('base64url');
}

export function decodeCursor(cursor: string | undefined): number | null {
  if (cursor === undefined || cursor === '') return 0;
  const text = Buffer.from(cursor, 'base64url').toString();
  const match = /^v1\.(\d{1,15})$/.exec(text);
  return match ? Number(match[1]) : null;
}

const iso = z.iso.datetime({ offset: true });

export const uploadedAccessEventSchema = z.strictObject({
  kind: z.literal('access'),
  uuid: z.uuid(),
  access_point_id: z.number().int(),
  access_zone_id: z.number().int().nullable(),
  reader_id: z.number().int().nullable(),
  credential_id: z.number().int().nullable(),
  credential_value: z.string().min(1).max(4096),
  attendee_id: z.number().int().nullable(),
  granted: z.boolean(),
  // The engine's own values only (engine.ts): the cloud announces them as its AccessDenied and access.denied do.
  reason: z.enum(DENIAL_REASONS).nullable(),
  reason_detail: z
    .enum(REASON_DETAILS)
    .nullable()
    .optional()
    .describe(
      'which cause of not_authorized refused it (docs/engine.md); absent: null (an edge sends it only when set, as an edge from before it never does)',
    ),
  movement: z.enum(['in', 'out']).nullable(),
  scanned_at: iso.describe("the edge's raw scan time (its clock offset is never applied to it)"),
  decided_at: iso,
  source: z.enum(['mqtt', 'webhook', 'bridge', 'api']),
  clock_offset_ms: z
    .number()
    .int()
    .min(-(10 ** 12))
    .max(10 ** 12)
    .nullable()
    .optional()
    .describe(
      "cloud time minus the edge's clock in force when it decided this event (null: never measured); absent: the batch's clock",
    ),
  clock_synchronised: z
    .boolean()
    .optional()
    .describe("that offset was measured in the edge's current run and within its tolerance; absent: the batch's clock"),
  offline_verified: z
    .boolean()
    .optional()
    .describe(
      "decided from a signed credential value's verified claims, the credential not held by the edge (docs/credentials.md); absent: false",
    ),
});
export type UploadedAccessEvent = z.infer<typeof uploadedAccessEventSchema>;

export const UPLOADED_CHANGES = [
  'attendee.created',
  'attendee.updated',
  'attendee.deleted',
  'credential.created',
  'credential.revoked',
  'gateway.online',
  'gateway.offline',
  'reader.offline',
] as const;

export const uploadedChangeSchema = z.strictObject({
  kind: z.literal('change'),
  uuid: z.uuid(),
  event: z.enum(UPLOADED_CHANGES),
  data: z.record(z.string(), z.unknown()),
  created_at: iso,
});
export type UploadedChange = z.infer<typeof uploadedChangeSchema>;

export const uploadBodySchema = z.strictObject({
  clock: z.strictObject({
    offset_ms: z
      .number()
      .int()
      .nullable()
      .describe(
        "cloud time minus the edge's clock now; null when never measured (each access event carries the offset in force when it was decided)",
      ),
    synchronised: z.boolean().describe('false when never measured or off by more than the edge tolerates'),
  }),
  backlog: z.number().int().min(0).describe('items still waiting on the edge after this batch'),
  feed: z
    .strictObject({ from: feedPositionSchema, to: feedPositionSchema })
    .optional()
    .describe(
      "the edge's feed positions: `from` past the last batch the cloud acknowledged, `to` past this one. The cloud keeps `to` when it holds everything up to `from`, and answers what it keeps in hello: a cloud restored from a backup answers less than the edge had acknowledged",
    ),
  items: z.array(z.discriminatedUnion('kind', [uploadedAccessEventSchema, uploadedChangeSchema])).max(UPLOAD_MAX_ITEMS),
});
export type UploadBody = z.infer<typeof uploadBodySchema>;

export const uploadResultSchema = z.object({
  accepted: z.number().int().describe('items stored now'),
  duplicates: z.number().int().describe('items stored before (a batch sent again): nothing done'),
  refused: z
    .number()
    .int()
    .describe(
      'of the accepted, changes the cloud could not apply as sent: each kept as a refused_change or id_conflict conflict, never sent again',
    ),
  cloud: cloudStateSchema,
  server_time: z.string(),
});

export const helloSchema = z.object({
  protocol: z.number().int(),
  supported_protocols: z.array(z.number().int()),
  edge: z.object({ id: z.number().int(), name: z.string() }),
  project: z.object({
    id: z.number().int(),
    team_slug: z.string(),
    slug: z.string(),
    name: z.string(),
    timezone: z.string(),
  }),
  highest_ids: z
    .object({ attendee: z.number().int().nullable(), credential: z.number().int().nullable() })
    .describe(
      "the highest id of each the cloud holds or has held in this edge's block (null: none); the edge numbers what it creates above them, so a box wiped and enrolled again reuses none",
    ),
  uploaded: z
    .object(feedPositionSchema.shape)
    .nullable()
    .describe(
      "the edge's feed position just past the last batch this cloud stored (null: none): an edge that had a later batch acknowledged sends again from here",
    ),
  cloud: cloudStateSchema,
  server_time: z.string(),
});
export type Hello = z.infer<typeof helloSchema>;
