import { sign } from '@octokit/webhooks-methods';
import type { TestAppliance, TestResponse } from './appliance.js';

// Incoming webhooks signed by an independent implementation (@octokit/webhooks-methods' sign()
// produces the same `sha256=<hex HMAC-SHA256>` format), never by our own code.

export type SourceKind =
  | 'access-event'
  | 'gateway-status'
  | 'registration-partner'
  | 'attendee-sync'
  | 'upload-finalized';

export const ENDPOINTS: Record<SourceKind, string> = {
  'access-event': '/webhook/v1/access-event',
  'gateway-status': '/webhook/v1/mqtt-gateway-status',
  'registration-partner': '/webhook/v1/registration-partner',
  'attendee-sync': '/webhook/v1/attendee-sync',
  'upload-finalized': '/webhook/v1/large-upload-finalized',
};

/** Creates a webhook source over REST and answers its id and secret. */
export async function createSource(
  gh: TestAppliance,
  token: string,
  kind: SourceKind,
  options: { project?: string; name?: string; ip_allowlist?: string[]; rate_limit_per_minute?: number } = {},
): Promise<{ id: number; secret: string }> {
  const { project = '/api/v1/projects/default/default', name = `${kind} source`, ...rest } = options;
  const res = await gh.request('POST', `${project}/integrations/webhooks`, { token, body: { kind, name, ...rest } });
  if (res.status !== 201) throw new Error(`source creation failed: ${res.status} ${res.text}`);
  return { id: res.body.data.id, secret: res.body.secret };
}

export interface SignedPostOptions {
  /** Extra or overriding headers. */
  headers?: Record<string, string>;
  /** X-Svc-Timestamp in Unix seconds; default none. */
  timestamp?: number | null;
  /** Sign this instead of the body sent (to test a body changed after signing). */
  signOver?: string;
  /** The signature header name (the partner's X-Partner-Signature). */
  header?: string;
}

/** Posts `body` (an object is JSON-encoded) signed with `secret`. */
export async function signedPost(
  gh: TestAppliance,
  path: string,
  body: unknown,
  secret: string,
  options: SignedPostOptions = {},
): Promise<TestResponse> {
  const raw = typeof body === 'string' ? body : JSON.stringify(body);
  const header = options.header ?? (path.endsWith('/registration-partner') ? 'X-Partner-Signature' : 'X-Svc-Signature');
  const timestamp = options.timestamp ?? null;
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    [header]: await sign(secret, options.signOver ?? raw),
  };
  if (timestamp !== null) headers['X-Svc-Timestamp'] = String(timestamp);
  return gh.request('POST', path, { rawBody: raw, headers: { ...headers, ...options.headers } });
}

/** A poster for one endpoint: creates a source of its kind once, then signs every post. */
export function signedPoster(
  gh: TestAppliance,
  token: string,
  kind: SourceKind,
  options: Parameters<typeof createSource>[3] = {},
) {
  let source: Promise<{ id: number; secret: string }> | null = null;
  const post = async (body: unknown, extra: SignedPostOptions = {}) => {
    source ??= createSource(gh, token, kind, options);
    return signedPost(gh, ENDPOINTS[kind], body, (await source).secret, extra);
  };
  return Object.assign(post, { source: () => (source ??= createSource(gh, token, kind, options)) });
}
