import { createHmac } from 'node:crypto';

// How an outgoing webhook is signed (spec: Events, Outgoing webhooks; Authentication item 9).
// 'sha256': X-Svc-Signature: sha256=<hex HMAC-SHA256 of the raw body> (the GitHub scheme:
// @octokit/webhooks-methods verifies it), with X-Svc-Event, X-Svc-Delivery-ID (the same across
// retries of one delivery) and X-Svc-Timestamp (Unix seconds). 'standard': Standard Webhooks
// (webhook-id, webhook-timestamp, webhook-signature: v1,<base64 HMAC of id.timestamp.body>,
// verified by the standardwebhooks and svix libraries; the secret is whsec_<base64>).
// During a rotation's grace period both secrets sign: Standard Webhooks lists both signatures
// in its header (its libraries accept any); the sha256 scheme adds X-Svc-Signature-Previous.

export type SignatureScheme = 'sha256' | 'standard';

export interface SignedRequest {
  /** The delivery id (the same on every retry). */
  deliveryId: string;
  event: string;
  /** Unix seconds of this attempt. */
  timestamp: number;
  body: string;
}

/** The secrets that sign: the current one, and the previous one during its grace period. */
export interface SigningSecrets {
  current: string;
  previous: string | null;
}

const standardKey = (secret: string): Buffer =>
  Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');

export function signatureHeaders(
  scheme: SignatureScheme,
  prefix: string,
  secrets: SigningSecrets,
  request: SignedRequest,
): Record<string, string> {
  if (scheme === 'standard') {
    const signed = `${request.deliveryId}.${request.timestamp}.${request.body}`;
    const sign = (secret: string) => `v1,${createHmac('sha256', standardKey(secret)).update(signed).digest('base64')}`;
    return {
      'webhook-id': request.deliveryId,
      'webhook-timestamp': String(request.timestamp),
      'webhook-signature': [secrets.current, ...(secrets.previous ? [secrets.previous] : [])].map(sign).join(' '),
      [`X-${prefix}-Event`]: request.event,
    };
  }
  const sign = (secret: string) => `sha256=${createHmac('sha256', secret).update(request.body).digest('hex')}`;
  return {
    [`X-${prefix}-Signature`]: sign(secrets.current),
    ...(secrets.previous ? { [`X-${prefix}-Signature-Previous`]: sign(secrets.previous) } : {}),
    [`X-${prefix}-Event`]: request.event,
    [`X-${prefix}-Delivery-ID`]: request.deliveryId,
    [`X-${prefix}-Timestamp`]: String(request.timestamp),
  };
}
