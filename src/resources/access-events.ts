import { z } from 'zod';

// An access event as the AccessGranted / AccessDenied events announce it (docs/realtime.md) and
// the reasons a scan is denied (docs/engine.md). A leaf (zod only): the engine (src/access/), the
// bus's event types and the realtime schemas take them from here.

export const DENIAL_REASONS = [
  'invalid_credential',
  'not_authorized',
  'expired',
  'capacity_exceeded',
  'time_restricted',
  'blocklisted',
] as const;

/**
 * Which of not_authorized's causes refused a scan (docs/engine.md: reason_detail). The spec's six
 * reasons stay the reasons; these only tell apart what the spec's one meaning of not_authorized
 * ("attendee type lacks access to the zone") no longer covers alone, and why a signed value the
 * box does not hold was an invalid_credential. null for every other denial.
 */
export const REASON_DETAILS = [
  'type_not_permitted',
  'already_inside',
  'access_point_inactive',
  'access_point_without_zone',
  // invalid_credential's causes for a signed value the box does not hold (docs/credentials.md)
  'signature_invalid',
  'unknown_key',
  'key_retired',
  'verification_busy',
] as const;

/** Set on an access event uploaded from an edge, as the cloud announces it (docs/sync.md). */
const uploadedFields = {
  uuid: z.string().optional(),
  edge_id: z.number().int().optional(),
  uploaded_at: z.string().optional(),
  duplicate_of: z.string().nullable().optional(),
  review: z.string().nullable().optional(),
  deleted_reference: z.string().nullable().optional(),
};

/** spec: Real-time events. */
export const accessGrantedSchema = z.object({
  attendee_id: z.number().int(),
  attendee: z.object({ first_name: z.string(), last_name: z.string() }),
  access_point_id: z.number().int(),
  access_zone_id: z.number().int(),
  credential_id: z.number().int(),
  timestamp: z.string(),
  ...uploadedFields,
});
export type AccessGrantedPayload = z.infer<typeof accessGrantedSchema>;

/**
 * spec: Real-time events. `reason`: one of the spec's six (an uploaded event's as its edge recorded it, which the
 * upload holds to the same six).
 */
export const accessDeniedSchema = z.object({
  credential_value: z.string(),
  access_point_id: z.number().int(),
  reason: z.enum(DENIAL_REASONS).describe("one of the spec's six denial reasons"),
  reason_detail: z
    .enum(REASON_DETAILS)
    .nullable()
    .describe(
      "ours, beside the spec's fields: which cause of not_authorized it was (type_not_permitted, already_inside: the zone refuses re-entry, access_point_inactive, access_point_without_zone) or of a signed value's invalid_credential (signature_invalid, unknown_key, key_retired, verification_busy); null for every other denial (docs/engine.md)",
    ),
  timestamp: z.string(),
  ...uploadedFields,
});
export type AccessDeniedPayload = z.infer<typeof accessDeniedSchema>;
