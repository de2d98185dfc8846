import { createHash, createHmac } from 'node:crypto';
import { safeEqual } from './protocol.js';

// Pusher's HTTP API authentication (https://pusher.com/docs/channels/library_auth_reference/rest-api/#authentication):
// auth_key, auth_timestamp (within 600 s), auth_version 1.0, body_md5 for a body, and
// auth_signature = hex HMAC-SHA256(secret, "METHOD\nPATH\nQUERY"), where QUERY is every other
// parameter, keys lower-cased and sorted, as key=value joined by & (values not URL-encoded).

export interface SignedRequest {
  method: string;
  path: string;
  query: Record<string, string | string[] | undefined>;
  body: Buffer;
}

export const TIMESTAMP_TOLERANCE_SECONDS = 600;

/** null when the request is signed with this key and secret; otherwise why not. */
export function verifyPusherSignature(
  request: SignedRequest,
  key: string,
  secret: string,
  nowMs: number,
): string | null {
  const param = (name: string) => {
    const value = request.query[name];
    return Array.isArray(value) ? value[0] : value;
  };
  const authKey = param('auth_key');
  const signature = param('auth_signature');
  const timestamp = param('auth_timestamp');
  if (!authKey || !signature || !timestamp) return 'auth_key, auth_timestamp and auth_signature are required';
  if (!safeEqual(authKey, key)) return 'Unknown auth_key';
  if (param('auth_version') !== undefined && param('auth_version') !== '1.0') return 'auth_version must be 1.0';
  // An integer, checked before the range: NaN would pass a naive comparison.
  if (!/^\d{1,12}$/.test(timestamp)) return 'auth_timestamp must be Unix seconds';
  if (Math.abs(nowMs / 1000 - Number(timestamp)) > TIMESTAMP_TOLERANCE_SECONDS)
    return `auth_timestamp is more than ${TIMESTAMP_TOLERANCE_SECONDS} s away from the server's time`;
  if (request.body.length > 0) {
    const md5 = createHash('md5').update(request.body).digest('hex');
    const sent = param('body_md5');
    if (!sent || !safeEqual(sent, md5)) return 'body_md5 does not match the body';
  }
  const query = Object.keys(request.query)
    .filter((k) => k !== 'auth_signature')
    .map((k) => [k.toLowerCase(), param(k) ?? ''] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
  const expected = createHmac('sha256', secret).update(`${request.method}\n${request.path}\n${query}`).digest('hex');
  return safeEqual(signature, expected) ? null : 'Invalid signature';
}
