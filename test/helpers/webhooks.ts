import { sign } from '@octokit/webhooks-methods';
import type { TestAppliance, TestResponse } from './appliance.js';
import { createSource, ENDPOINTS, type SourceKind } from './signed-webhooks.js';

// Every incoming webhook the attendee-sync and registration-partner tests send goes through
// webhookPoster, so how they are signed is decided here alone: each post is signed with
// @octokit/webhooks-methods by a source of the endpoint's kind in the default project, made on
// first use with the administrator's token. A test that signs itself passes its own signature
// header; `unsigned` sends none (the appliance must then run with WEBHOOK_TEST_ENV).

/** startAppliance() env under which unsigned webhook posts are also admitted (development mode). */
export const WEBHOOK_TEST_ENV: Record<string, string> = { GATEHOUSE_INCOMING_WEBHOOKS_ALLOW_UNSIGNED: 'true' };

type Post = (body: unknown, headers?: Record<string, string>) => Promise<TestResponse>;

export type WebhookPost = Post & {
  /** Posts these exact bytes, signed (malformed JSON, other content types). */
  rawBody(raw: string | Buffer, headers?: Record<string, string>): Promise<TestResponse>;
  /** Posts without any signature header. */
  unsigned: Post;
};

const kindOf = (path: string) =>
  (Object.entries(ENDPOINTS).find(([, p]) => p === path)?.[0] ?? null) as SourceKind | null;

/** A poster for one webhook path: the body is sent as JSON.stringify(body), signed. */
export function webhookPoster(gh: TestAppliance, path: string): WebhookPost {
  const kind = kindOf(path);
  if (!kind) throw new Error(`no webhook source kind posts to ${path}`);
  const header = kind === 'registration-partner' ? 'X-Partner-Signature' : 'X-Svc-Signature';
  let secret: Promise<string> | null = null;
  const send = (raw: string | Buffer, headers: Record<string, string>) =>
    gh.request('POST', path, { rawBody: raw, headers: { 'content-type': 'application/json', ...headers } });
  const rawBody = async (raw: string | Buffer, headers: Record<string, string> = {}) => {
    if (Object.keys(headers).some((h) => h.toLowerCase() === header.toLowerCase())) return send(raw, headers);
    secret ??= gh.token().then(async (token) => (await createSource(gh, token, kind, { name: `test ${kind}` })).secret);
    return send(raw, { [header]: await sign(await secret, raw.toString()), ...headers });
  };
  const unsigned: Post = (body, headers = {}) => send(JSON.stringify(body), headers);
  return Object.assign((body: unknown, headers?: Record<string, string>) => rawBody(JSON.stringify(body), headers), {
    rawBody,
    unsigned,
  });
}
