import { z } from 'zod';

// The venue's resources as REST shows them, webhooks and the bus carry them and sync moves them
// (docs/rest.md, docs/venue.md): one zod schema each, the types inferred from it. A leaf: it
// imports zod only, so the modules that write these resources (src/venue/), the bus's event types
// (src/events/types.ts) and the transports all take them from here without a cycle. The write
// bodies (create, update) stay beside the writes that check them.

export const READER_TYPES = ['barcode', 'qr', 'rfid', 'nfc'] as const;

export const DIRECTIONS = ['in', 'out', 'both'] as const;

export const ATTENDEE_STATUSES = ['active', 'cancelled'] as const;

export const CREDENTIAL_KINDS = ['barcode', 'qr', 'rfid', 'nfc'] as const;

export const zoneSchema = z.object({
  id: z.number().int(),
  name: z.string(),
  slug: z.string(),
  capacity: z.number().int().nullable().describe('maximum occupancy; null = unlimited'),
  current_count: z.number().int(),
  available: z.number().int().nullable().describe('capacity minus current_count; null when unlimited'),
  requires_ticket: z.boolean(),
  anti_passback: z
    .boolean()
    .describe(
      'a second entry of a holder already inside is denied (not_authorized, reason_detail already_inside); false: let in again, counted once',
    ),
  version: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
});

export type ZoneResource = z.infer<typeof zoneSchema>;

export const readerSchema = z.object({
  id: z.number().int(),
  identifier: z.string(),
  type: z.enum(READER_TYPES),
  access_point_id: z.number().int().nullable(),
  version: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
});

export type ReaderResource = z.infer<typeof readerSchema>;

export const accessPointSchema = z.object({
  id: z.number().int(),
  name: z.string(),
  slug: z.string(),
  location: z.string().nullable(),
  access_zone_id: z.number().int().nullable(),
  direction: z.enum(DIRECTIONS),
  is_active: z.boolean(),
  readers: z.array(readerSchema),
  version: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
});

export type AccessPointResource = z.infer<typeof accessPointSchema>;

export const attendeeTypeSchema = z.object({
  id: z.number().int(),
  name: z.string(),
  slug: z.string(),
  zone_ids: z.array(z.number().int()).describe('the access zones attendees of this type may enter'),
  version: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type AttendeeTypeResource = z.infer<typeof attendeeTypeSchema>;

export const attendeeSchema = z.object({
  id: z.number().int(),
  first_name: z.string(),
  last_name: z.string(),
  email: z.string().nullable(),
  attendee_type: z.string().nullable(),
  attendee_type_id: z.number().int().nullable(),
  external_id: z.string().nullable(),
  status: z.enum(ATTENDEE_STATUSES),
  extra: z.record(z.string(), z.unknown()),
  version: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
});

export type AttendeeResource = z.infer<typeof attendeeSchema>;

export const credentialSchema = z.object({
  id: z.number().int(),
  attendee_id: z.number().int(),
  value: z.string(),
  kind: z.enum(CREDENTIAL_KINDS),
  status: z.enum(['active', 'revoked']),
  valid_from: z.string().nullable(),
  valid_until: z.string().nullable(),
  revoked_at: z.string().nullable(),
  version: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type CredentialResource = z.infer<typeof credentialSchema>;

export const timeRestrictionSchema = z.object({
  id: z.number().int(),
  access_zone_id: z.number().int(),
  attendee_type_id: z.number().int().nullable(),
  days_of_week: z.array(z.number().int()),
  start_time: z.string(),
  end_time: z.string(),
  version: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type TimeRestrictionResource = z.infer<typeof timeRestrictionSchema>;

export const blocklistSchema = z.object({
  id: z.number().int(),
  attendee_id: z.number().int().nullable(),
  credential_id: z.number().int().nullable(),
  reason: z.string(),
  until: z.string().nullable(),
  version: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type BlocklistResource = z.infer<typeof blocklistSchema>;

/** A project's credential key, its public part only (docs/credentials.md): the private key is in no resource. */
export const credentialKeySchema = z.object({
  id: z.number().int(),
  public_key: z.string().describe('The Ed25519 public key: 32 raw bytes in base64url'),
  status: z.enum(['signing', 'verifying', 'retired']),
  created_at: z.string(),
  retired_at: z.string().nullable(),
});
export type CredentialKeyResource = z.infer<typeof credentialKeySchema>;
