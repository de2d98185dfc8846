import { z } from 'zod';
import type { AnyRoute } from './route.js';
import { messageSchema, rateLimitedSchema, webhookError } from './resources.js';

// GET /api/v1/openapi.json: generated from the very zod schemas the routes validate with
// (STYLE: one schema per contract). OpenAPI 3.1, whose schema dialect is JSON Schema 2020-12,
// which is what zod emits. Each operation also carries x-ability and x-rate-class.

type JsonSchema = Record<string, unknown>;

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as JsonSchema;
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

function requestBody(route: AnyRoute) {
  if (!route.body) return undefined;
  const schema = jsonSchema(route.body, 'input');
  const content: Record<string, { schema: JsonSchema }> = { 'application/json': { schema } };
  if (route.bodyKind === 'form') content['application/x-www-form-urlencoded'] = { schema };
  if (route.bodyKind === 'json-or-csv') content['text/csv'] = { schema: { type: 'string', description: 'CSV with a header row' } };
  return { required: !route.body.safeParse(undefined).success, content };
}

const storeBusy = { rest: messageSchema.extend({ retry_after: z.number().int() }), webhook: webhookError.extend({ retry_after: z.number().int() }) };

function responses(route: AnyRoute) {
  const out: Record<string, unknown> = {};
  const add = (status: number, description: string, schema?: z.ZodType) => {
    if (out[status]) return;
    const contentType = route.path === '/metrics' ? 'text/plain' : route.path.endsWith('/export') ? 'text/csv' : 'application/json';
    out[status] = { description, ...(schema ? { content: { [contentType]: { schema: jsonSchema(schema, 'output') } } } : {}) };
  };
  for (const [status, r] of Object.entries(route.responses)) add(Number(status), r.description, r.schema);
  if (route.ability !== 'public') {
    add(401, 'Unauthenticated: missing, malformed, revoked or expired token', messageSchema);
    add(403, 'The token lacks the ability (Invalid ability provided.), or the account is not allowed', messageSchema);
  }
  if (route.project) add(404, 'No such project, or the account cannot reach it', messageSchema);
  if (route.body) {
    add(400, 'Malformed JSON', messageSchema);
    add(413, 'Body over the size limit', messageSchema);
    add(415, 'Unsupported content type', messageSchema);
    add(422, 'Validation failed', z.object({ message: z.string(), errors: z.record(z.string(), z.array(z.string())) }));
  }
  if (route.rateClass !== 'none') add(429, `Rate limited (${route.rateClass} class)`, rateLimitedSchema);
  // Any write may find SQLite's write lock held past store.busyTimeoutMs (errors.ts store_busy).
  if (route.method !== 'GET' && !route.readOnly) {
    add(503, 'store_busy: the store stayed busy with other writes past store.busyTimeoutMs; nothing was written. Retry after Retry-After seconds', storeBusy[route.envelope ?? 'rest']);
  }
  return out;
}

export function buildOpenApi(routes: readonly AnyRoute[]) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const operation = {
      operationId: route.operationId,
      tags: route.tags,
      summary: route.summary,
      ...(route.description ? { description: route.description } : {}),
      parameters: [...parameters(route.params, 'path'), ...parameters(route.query, 'query')],
      ...(route.body ? { requestBody: requestBody(route) } : {}),
      responses: responses(route),
      security: route.ability === 'public' ? [] : [{ bearerAuth: [] }, { cookieSession: [] }],
      'x-ability': route.ability,
      'x-rate-class': route.rateClass,
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
      description: 'The event platform REST contract as served by a Gatehouse appliance. See docs/rest.md.',
    },
    servers: [{ url: '/' }],
    tags,
    paths,
    components: {
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', description: 'Personal access token <id>|<secret>' },
        cookieSession: { type: 'apiKey', in: 'cookie', name: 'gatehouse_session', description: 'After GET /sanctum/csrf-cookie; send X-XSRF-TOKEN on state-changing requests' },
      },
    },
  };
}
