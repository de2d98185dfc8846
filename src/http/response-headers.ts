// The response headers the OpenAPI document declares (responses.ts puts each on the statuses
// that carry it). A leaf, so route declarations (route.ts) can name them without importing the
// responses, which read the declarations.

/** The response headers the document declares (a header is declared where responsesOf() puts it). */
export const responseHeaders = {
  'X-Content-Type-Options': {
    description: '`nosniff`, on every answer (issue 23 item 12)',
    schema: { type: 'string', enum: ['nosniff'] },
  },
  'X-Frame-Options': {
    description: '`DENY`, on every answer: no page of the box is framed (issue 23 item 12)',
    schema: { type: 'string', enum: ['DENY'] },
  },
  'X-Request-Id': {
    description: 'the X-Request-Id sent, or one made for the request; it names the request in the log',
    schema: { type: 'string' },
  },
  'Retry-After': { description: 'seconds to wait before trying again', schema: { type: 'integer', minimum: 1 } },
  'X-RateLimit-Limit': { description: 'requests allowed per window', schema: { type: 'integer', minimum: 1 } },
  'X-RateLimit-Remaining': { description: 'requests left in the window', schema: { type: 'integer', minimum: 0 } },
  'X-RateLimit-Reset': { description: 'when the window ends, in Unix seconds', schema: { type: 'integer' } },
} as const satisfies Record<string, { description: string; schema: object }>;

/** The replay header of incoming webhooks, named by incomingWebhooks.headerPrefix (X-Svc-Replayed). */
export const replayedHeader = {
  description:
    '`true` when this is the kept answer of an identical signed body accepted before (a retry): it was not applied again',
  schema: { type: 'string', enum: ['true'] },
} as const;

export type ResponseHeader = keyof typeof responseHeaders;

/** The description and schema of a response header: one of responseHeaders, or the webhook replay header. */
export const headerSpec = (name: string): { description: string; schema: object } =>
  name in responseHeaders ? responseHeaders[name as ResponseHeader] : replayedHeader;
