import { z } from 'zod';
import {
  MAX_CREDENTIAL_VALUE,
  MAX_REQUEST_ID,
  type ReaderScanRefusalCode,
  type ReaderScans,
  scanErrorRefusal,
} from '../access/reader-scan.js';
import type { ScanService } from '../access/scan-service.js';
import { type ErrorCode, fieldErrorsFromZod, type FieldErrors } from '../errors.js';
import { JsonDepthError, parseJson } from '../json-depth.js';
import { DENIAL_REASONS, REASON_DETAILS } from '../resources/access-events.js';

// A scan published on a reader's scans topic becomes a decision on its decisions topic
// (docs/architecture.md, "The path of one scan"; docs/mqtt.md). Same ScanService as every other transport, so
// a request_id seen before (QoS 1 redelivery, a reader's retry) gets the first decision back
// and writes no second event. Malformed scans are counted, logged and answered with an error
// on the decisions topic when a request_id can be read; they never reach the engine.

/** A scan as a reader (or its gateway) publishes it on the reader's scans topic. */
export const scanSchema = z.object({
  request_id: z.string().min(1).max(MAX_REQUEST_ID),
  credential_value: z.string().min(1).max(MAX_CREDENTIAL_VALUE),
  scan_type: z.string().max(32).optional(),
  timestamp: z
    .union([z.iso.datetime({ offset: true }), z.number().int().nonnegative().describe('Unix seconds')])
    .optional(),
});

/** The decision a reader is sent on its decisions topic
 * (docs/mqtt.md); the engine's own is access/engine.ts's Decision. */
export const decisionSchema = z.object({
  request_id: z.string(),
  access_granted: z.boolean(),
  reason: z.enum(DENIAL_REASONS).optional(),
  /** With every denial: which cause of not_authorized it was, else null (docs/engine.md). */
  reason_detail: z.enum(REASON_DETAILS).nullable().optional(),
  attendee: z.object({ id: z.number().int(), first_name: z.string(), last_name: z.string() }).optional(),
  access_point_id: z.number().int(),
  decided_at: z.string(),
  /** The access event's uuid. */
  event_id: z.string(),
});
export type MqttDecision = z.infer<typeof decisionSchema>;

/** A scan refused before a decision, answered on the decisions topic when a request_id could be read. */
export const scanFailureSchema = z.object({
  request_id: z.string().nullable(),
  error: z.string(),
  message: z.string(),
  errors: z.record(z.string(), z.array(z.string())).optional(),
});
export type ScanFailure = z.infer<typeof scanFailureSchema>;

export type MalformedReason = 'too_large' | 'invalid_json' | 'invalid_payload' | 'unknown_reader' | 'reader_unassigned';

export interface ScanHandlerDeps {
  scans: ScanService;
  /** The reader-scan translation every transport shares (access/reader-scan.ts). */
  readerScans: ReaderScans;
  maxPayloadBytes: number;
}

export type ScanResult =
  | { ok: true; decision: MqttDecision }
  | { ok: false; reason: MalformedReason; failure: ScanFailure };

/** Decides one scan payload from the reader `identifier` of project `projectId`. Never throws for bad input.
 * `deadline`: its ticket in the answer deadlines (0: none). */
export async function handleScan(
  deps: ScanHandlerDeps,
  projectId: number,
  identifier: string,
  payload: Buffer,
  deadline = 0,
): Promise<ScanResult> {
  const fail = (
    reason: MalformedReason,
    requestId: string | null,
    error: ErrorCode,
    message: string,
    errors?: FieldErrors,
  ): ScanResult => ({
    ok: false,
    reason,
    failure: { request_id: requestId, error, message, ...(errors ? { errors } : {}) },
  });
  if (payload.length > deps.maxPayloadBytes)
    return fail(
      'too_large',
      sniffRequestId(payload),
      'payload_too_large',
      `The scan exceeds the limit of ${deps.maxPayloadBytes} bytes.`,
    );
  let json: unknown;
  try {
    json = parseJson(payload.toString('utf8'));
  } catch (err) {
    const why = err instanceof JsonDepthError ? `: ${err.message}.` : '.';
    return fail('invalid_json', sniffRequestId(payload), 'malformed_json', `The scan is not valid JSON${why}`);
  }
  let scan = wellFormed(json);
  if (!scan) {
    // Only a scan the quick check refuses pays for zod, which says what is wrong.
    const requestId =
      typeof (json as { request_id?: unknown })?.request_id === 'string'
        ? (json as { request_id: string }).request_id.slice(0, MAX_REQUEST_ID) || null
        : null;
    const parsed = scanSchema.safeParse(json);
    if (!parsed.success)
      return fail(
        'invalid_payload',
        requestId,
        'validation_failed',
        'The scan fails validation.',
        fieldErrorsFromZod(parsed.error),
      );
    scan = parsed.data;
  }
  const located = deps.readerScans.locate({
    projectId,
    identifier,
    credentialValue: scan.credential_value,
    timestamp: scan.timestamp,
    requestId: scan.request_id,
    source: 'mqtt',
    deadline,
  });
  if (!located.ok) {
    const { code, message, errors } = located.refusal;
    return fail(REFUSED_AS[code], scan.request_id, code, message, errors);
  }
  try {
    const outcome = await deps.scans.scan(located.request);
    const decision: MqttDecision = {
      request_id: scan.request_id,
      access_granted: outcome.granted,
      access_point_id: outcome.accessPointId,
      decided_at: outcome.decidedAt,
      event_id: outcome.uuid,
    };
    if (outcome.reason) {
      decision.reason = outcome.reason;
      decision.reason_detail = outcome.reasonDetail;
    }
    if (outcome.answer.attendee) decision.attendee = outcome.answer.attendee;
    return { ok: true, decision };
  } catch (err) {
    // The reader's access point went away between finding the reader and deciding.
    const { code, message } = scanErrorRefusal(err, identifier);
    return fail(REFUSED_AS[code], scan.request_id, code, message);
  }
}

/** How each refusal of the reader-scan translation is counted in /metrics (gatehouse_mqtt_malformed_total). */
const REFUSED_AS: Record<ReaderScanRefusalCode, MalformedReason> = {
  validation_failed: 'invalid_payload',
  unknown_reader: 'unknown_reader',
  ambiguous_reader: 'unknown_reader',
  reader_unassigned: 'reader_unassigned',
};

const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})$/;

/** The hot path's check of a scan: the same rules as scanSchema
 * for what readers send, without zod's cost; null sends it to zod. */
function wellFormed(json: unknown): z.output<typeof scanSchema> | null {
  if (typeof json !== 'object' || json === null) return null;
  const { request_id, credential_value, scan_type, timestamp } = json as Record<string, unknown>;
  if (typeof request_id !== 'string' || request_id.length < 1 || request_id.length > MAX_REQUEST_ID) return null;
  if (
    typeof credential_value !== 'string' ||
    credential_value.length < 1 ||
    credential_value.length > MAX_CREDENTIAL_VALUE
  )
    return null;
  if (scan_type !== undefined && (typeof scan_type !== 'string' || scan_type.length > 32)) return null;
  if (timestamp !== undefined) {
    if (typeof timestamp === 'number') {
      if (!Number.isInteger(timestamp) || timestamp < 0) return null;
    } else if (typeof timestamp !== 'string' || !ISO_INSTANT.test(timestamp) || Number.isNaN(Date.parse(timestamp)))
      return null;
  }
  return {
    request_id,
    credential_value,
    ...(scan_type === undefined ? {} : { scan_type }),
    ...(timestamp === undefined ? {} : { timestamp }),
  } as z.output<typeof scanSchema>;
}

/** A request_id out of a payload that is not JSON or too large to parse, when one is plainly there. */
function sniffRequestId(payload: Buffer): string | null {
  const head = payload.subarray(0, 512).toString('utf8');
  return /"request_id"\s*:\s*"([^"\\]{1,128})"/.exec(head)?.[1] ?? null;
}
