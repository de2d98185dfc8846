import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

// Standard Webhooks signatures (standardwebhooks.com; Svix's scheme), offered beside the contract's
// body-only `X-Svc-Signature` (docs/webhooks-incoming.md): the signature covers
// the delivery's id and timestamp as well as the body, so a captured request cannot be sent
// again with a fresh timestamp, and the id tells a retry (same id) from a new delivery of the
// same bytes (another id: a card scanned twice).
//
//   webhook-id:        the delivery's id, the same on every retry of it
//   webhook-timestamp: integer Unix seconds, checked against incomingWebhooks.timestampToleranceSeconds
//   webhook-signature: space-separated `v1,<base64 HMAC-SHA256(key, "{id}.{timestamp}.{body}")>`
//                      (several while a sender rotates its secret); other versions are ignored
//
// The key is the source's secret without its `whsec_` prefix, base64-decoded, as the
// standardwebhooks libraries read it (secrets made before these were base64url: Node's decoder
// takes both alphabets). Verified over the exact bytes received, lengths checked before
// timingSafeEqual (docs/webhooks-incoming.md).

export const STANDARD_HEADERS = {
  id: 'webhook-id',
  timestamp: 'webhook-timestamp',
  signature: 'webhook-signature',
} as const;

export interface StandardDelivery {
  id: string;
  /** As sent: it is part of what was signed. */
  timestamp: string;
  signatures: Buffer[];
}

export type StandardParse =
  | { ok: true; delivery: StandardDelivery }
  | { ok: false; code: 'invalid_signature' | 'stale_timestamp'; detail: string };

/** Printable ASCII without dots or spaces, so "{id}.{timestamp}." cannot be read two ways. */
const ID = /^[\x21-\x2d\x2f-\x7e]{1,256}$/;

export function parseStandard(header: (name: string) => string): StandardParse {
  const id = header(STANDARD_HEADERS.id);
  if (!ID.test(id))
    return {
      ok: false,
      code: 'invalid_signature',
      detail:
        'A Standard Webhooks request carries webhook-id (1-256 printable characters, no dot or space), webhook-timestamp and webhook-signature.',
    };
  const timestamp = header(STANDARD_HEADERS.timestamp).trim();
  if (!/^\d{1,12}$/.test(timestamp))
    return {
      ok: false,
      code: 'stale_timestamp',
      detail: 'The webhook-timestamp header must be an integer of Unix seconds.',
    };
  const signatures: Buffer[] = [];
  for (const entry of header(STANDARD_HEADERS.signature).trim().split(/\s+/).slice(0, 16)) {
    const m = /^v1,([A-Za-z0-9+/]{43}=?)$/.exec(entry);
    if (m) signatures.push(Buffer.from(m[1]!, 'base64'));
  }
  if (!signatures.length)
    return {
      ok: false,
      code: 'invalid_signature',
      detail: 'The webhook-signature header carries no v1,<base64 HMAC-SHA256> signature.',
    };
  return { ok: true, delivery: { id, timestamp, signatures } };
}

/** The HMAC key a Standard Webhooks sender derives from the source's secret. */
export const standardKey = (secret: string): Buffer => Buffer.from(secret.replace(/^whsec_/, ''), 'base64');

/** Constant-time per signature: does one of them sign this delivery under `secret`? */
export function verifiesStandard(secret: string, delivery: StandardDelivery, body: Buffer): boolean {
  const expected = createHmac('sha256', standardKey(secret))
    .update(`${delivery.id}.${delivery.timestamp}.`)
    .update(body)
    .digest();
  let match = false;
  for (const given of delivery.signatures)
    if (given.length === expected.length && timingSafeEqual(given, expected)) match = true;
  return match;
}

/** What identifies a delivery for replays: its id, kept apart from body digests. */
export const standardDigest = (id: string): Buffer => createHash('sha256').update(`webhook-id\n${id}`).digest();
