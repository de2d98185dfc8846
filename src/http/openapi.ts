import { z } from 'zod';
import { headerSpec } from './response-headers.js';
import { responsesOf, type ResponseContext } from './responses.js';
import type { AnyRoute } from './route.js';

// GET /api/v1/openapi.json: generated from the very zod schemas the routes validate with
// (one schema per contract). OpenAPI 3.1, whose schema dialect is JSON Schema 2020-12,
// which is what zod emits. Each operation also carries x-ability and x-rate-class, and
// x-rate-class-search-when where given query parameters count a request as a search. Every
// status an operation can answer, with its body and headers, comes from responses.ts
// (docs/rest.md); test/http/openapi-wire.test.ts provokes each of them on a running appliance.

type JsonSchema = Record<string, unknown>;

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, {
    io,
    unrepresentable: 'any',
    target: 'draft-2020-12',
  }) as JsonSchema;
  return rest;
}

function parameters(schema: z.ZodType | undefined, where: 'path' | 'query') {
  if (!schema) return [];
  const json = jsonSchema(schema, 'input') as { properties?: Record<string, JsonSchema>; required?: string[] };
  return Object.entries(json.properties ?? {}).map(([name, s]) => ({
    name,
    in: where,
    required: where === 'path' || (json.required ?? []).includes(name),
    schema: s,
    ...(typeof s.description === 'string' ? { description: s.description } : {}),
  }));
}

/** Request headers the route reads: a signed webhook's signature and timestamp, the session login's CSRF token. */
function headerParameters(route: AnyRoute, context: ResponseContext) {
  const out = [];
  if (route.webhook) {
    const { signature, timestamp } = context.webhookHeaders(route.webhook);
    out.push(
      {
        name: signature,
        in: 'header',
        required: !context.allowUnsigned,
        description: 'sha256=<lowercase hex HMAC-SHA256 of the raw body with the source secret>',
        schema: { type: 'string', pattern: '^sha256=[0-9a-f]{64}$' },
      },
      {
        name: timestamp,
        in: 'header',
        required: false,
        description: 'Unix seconds; when sent, it must be within incomingWebhooks.timestampToleranceSeconds',
        schema: { type: 'string', pattern: '^[0-9]+$' },
      },
    );
  }
  if (route.csrf)
    out.push({
      name: 'X-XSRF-TOKEN',
      in: 'header',
      required: true,
      description: 'the XSRF-TOKEN cookie set by GET /sanctum/csrf-cookie',
      schema: { type: 'string' },
    });
  return out;
}

function requestBody(route: AnyRoute) {
  if (!route.body) return undefined;
  const schema = jsonSchema(route.body, 'input');
  const content: Record<string, { schema: JsonSchema }> = { 'application/json': { schema } };
  if (route.bodyKind === 'form') content['application/x-www-form-urlencoded'] = { schema };
  if (route.bodyKind === 'json-or-csv')
    content['text/csv'] = { schema: { type: 'string', description: 'CSV with a header row' } };
  return { required: route.bodyRequired ?? !route.body.safeParse(undefined).success, content };
}

function responses(route: AnyRoute, context: ResponseContext) {
  const out: Record<string, unknown> = {};
  for (const [status, answer] of responsesOf(route, context)) {
    const content: Record<string, { schema: JsonSchema }> = {};
    if (answer.schema) content['application/json'] = { schema: jsonSchema(answer.schema, 'output') };
    if (answer.text) content[answer.text] = { schema: { type: 'string' } };
    const headers = Object.fromEntries(
      [...answer.headers].map(([name, required]) => [name, { ...headerSpec(name), required }]),
    );
    out[status] = { description: answer.description, headers, ...(Object.keys(content).length ? { content } : {}) };
  }
  return out;
}

/** The document; `webhooks`: what the box sends to subscribers (OpenAPI 3.1 webhooks). */
export function buildOpenApi(
  routes: readonly AnyRoute[],
  context: ResponseContext,
  webhooks: Record<string, unknown> = {},
) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const operation = {
      operationId: route.operationId,
      tags: route.tags,
      summary: route.summary,
      ...(route.description ? { description: route.description } : {}),
      parameters: [
        ...parameters(route.params, 'path'),
        ...parameters(route.query, 'query'),
        ...headerParameters(route, context),
      ],
      ...(route.body ? { requestBody: requestBody(route) } : {}),
      responses: responses(route, context),
      security:
        route.ability === 'public'
          ? []
          : route.ability === 'sync'
            ? [{ syncToken: [] }]
            : [{ bearerAuth: [] }, { cookieSession: [] }],
      'x-ability': route.ability,
      'x-rate-class': route.rateClass,
      ...(route.searchQuery ? { 'x-rate-class-search-when': route.searchQuery } : {}),
      'x-error-envelope': route.envelope ?? 'rest',
      ...(route.admin ? { 'x-admin-only': true } : {}),
      ...(route.readOnly ? { 'x-read-only': true } : {}),
    };
    (paths[route.path] ??= {})[route.method.toLowerCase()] = operation;
  }
  const tags = [...new Set(routes.flatMap((r) => r.tags))].map((name) => ({ name }));
  return {
    openapi: '3.1.0',
    info: {
      title: 'Gatehouse appliance API',
      version: '1.0.0',
      description:
        'The event platform REST contract as served by a Gatehouse appliance. See docs/rest.md. Errors answer {message} (REST; 422 adds errors, 429 retry_after) or, where x-error-envelope is webhook, {error, message} with 400 for validation (spec: Errors).',
    },
    servers: [{ url: '/' }],
    tags,
    paths,
    webhooks,
    components: {
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', description: 'Personal access token <id>|<secret>' },
        syncToken: {
          type: 'http',
          scheme: 'bearer',
          description:
            "An edge's sync token <edge id>|<secret> (POST .../sync/edges); opens the sync protocol's routes of its project only",
        },
        cookieSession: {
          type: 'apiKey',
          in: 'cookie',
          name: 'gatehouse_session',
          description: 'After GET /sanctum/csrf-cookie; send X-XSRF-TOKEN on state-changing requests',
        },
      },
    },
  };
}
