import type { TestAppliance, TestResponse } from './appliance.js';

// Every incoming webhook the attendee-sync and registration-partner tests send goes through
// webhookPoster, so how they are signed is decided here alone. For now they go unsigned: the
// appliance runs with incomingWebhooks.allowUnsigned (WEBHOOK_TEST_ENV), and the gate admits
// them naming no project. A test that needs a signature passes its header in `headers`.

/** startAppliance() env under which unsigned webhook posts are admitted. */
export const WEBHOOK_TEST_ENV: Record<string, string> = { GATEHOUSE_INCOMING_WEBHOOKS_ALLOW_UNSIGNED: 'true' };

export type WebhookPost = ((body: unknown, headers?: Record<string, string>) => Promise<TestResponse>) & {
  /** Posts these exact bytes (malformed JSON, other content types). */
  rawBody(raw: string | Buffer, headers?: Record<string, string>): Promise<TestResponse>;
};

/** A poster for one webhook path: the body is sent as JSON.stringify(body). */
export function webhookPoster(gh: TestAppliance, path: string): WebhookPost {
  const rawBody = (raw: string | Buffer, headers: Record<string, string> = {}) =>
    gh.request('POST', path, { rawBody: raw, headers: { 'content-type': 'application/json', ...headers } });
  return Object.assign((body: unknown, headers?: Record<string, string>) => rawBody(JSON.stringify(body), headers), { rawBody });
}
