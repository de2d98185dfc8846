import { z } from 'zod';
import {
  createSourceBody,
  DEFAULT_GRACE_MINUTES,
  rotateBody,
  sourceSchema,
  updateSourceBody,
} from '../../webhooks/sources.js';
import { logEntrySchema, logQuery } from '../../webhooks/request-log.js';
import { collectionSchema, pageQuery, paginate, window } from '../pagination.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { messageSchema, single } from '../resources.js';
import type { HttpDeps } from '../deps.js';
import { PROJECT_PATH, projectParams, withId } from './crud.js';

// Project settings -> Integrations -> Webhooks (spec: Authentication item 10;
// docs/webhooks-incoming.md): the sources that may post incoming webhooks, and the log of what was posted. Full
// (`*`) tokens manage sources, since a secret lets its holder act as a gateway or partner; the
// log, which holds the first KB of refused bodies, is read with `*` or `read`.

export function webhookSourceRoutes({ webhookSources: sources, webhookLog: log, config }: HttpDeps): AnyRoute[] {
  const base = `${PROJECT_PATH}/integrations/webhooks`;
  const item = `${base}/{sourceId}`;
  const params = withId('sourceId');
  const common = { tags: ['Webhook sources'], rateClass: 'standard' as const, project: true };
  const missing = { description: 'No such webhook source in this project', schema: messageSchema };
  const withSecret = z.object({
    data: sourceSchema,
    secret: z.string().describe('shown once: the HMAC-SHA256 key the sender signs the raw body with'),
  });
  const { headerPrefix } = config.incomingWebhooks;
  const signing = `Senders sign the raw body: \`X-${headerPrefix}-Signature: sha256=<hex HMAC-SHA256(secret, body)>\` (registration partner: \`X-Partner-Signature\`), optionally \`X-${headerPrefix}-Timestamp\` (Unix seconds).`;
  const logEntries = collectionSchema(logEntrySchema);
  return [
    defineRoute({
      ...common,
      method: 'GET',
      path: base,
      operationId: 'webhook-sources.index',
      summary: 'List the webhook sources of the project',
      ability: '*',
      params: projectParams,
      query: pageQuery,
      responses: {
        200: { description: 'A page of sources (never their secrets)', schema: collectionSchema(sourceSchema) },
      },
      handler: ({ project, query, koa }) => {
        const { items, total } = sources.list(project!.id, window(query).offset, window(query).limit);
        return {
          body: paginate(
            koa,
            query,
            items.map((r) => sources.resource(r)),
            total,
          ),
        };
      },
    }),
    defineRoute({
      ...common,
      method: 'GET',
      path: item,
      operationId: 'webhook-sources.show',
      summary: 'Show a webhook source',
      ability: '*',
      params,
      responses: { 200: { description: 'The source', schema: single(sourceSchema) }, 404: missing },
      handler: ({ project, params: p }) => ({ body: { data: sources.resource(sources.get(project!.id, p.sourceId)) } }),
    }),
    defineRoute({
      ...common,
      method: 'POST',
      path: base,
      operationId: 'webhook-sources.store',
      summary: 'Add a webhook source; answers its secret once',
      description: signing,
      ability: '*',
      params: projectParams,
      body: createSourceBody,
      responses: { 201: { description: 'The source and its secret', schema: withSecret } },
      handler: ({ project, body }) => {
        const { row, secret } = sources.create(project!.id, body);
        return { status: 201, body: { data: sources.resource(row), secret } };
      },
    }),
    defineRoute({
      ...common,
      method: 'PUT',
      path: item,
      operationId: 'webhook-sources.update',
      summary: 'Update a webhook source (name, allowlist, enabled, rate limit)',
      ability: '*',
      params,
      body: updateSourceBody,
      responses: { 200: { description: 'The source', schema: single(sourceSchema) }, 404: missing },
      handler: ({ project, params: p, body }) => ({
        body: { data: sources.resource(sources.update(project!.id, p.sourceId, body)) },
      }),
    }),
    defineRoute({
      ...common,
      method: 'POST',
      path: `${item}/rotate-secret`,
      operationId: 'webhook-sources.rotate-secret',
      summary: 'A new secret; the previous one still verifies during the grace period',
      description: `grace_minutes defaults to ${DEFAULT_GRACE_MINUTES}; 0 ends the old secret at once.`,
      ability: '*',
      params,
      body: rotateBody,
      responses: { 201: { description: 'The source and its new secret', schema: withSecret }, 404: missing },
      handler: ({ project, params: p, body }) => {
        const { row, secret } = sources.rotate(project!.id, p.sourceId, body?.grace_minutes ?? DEFAULT_GRACE_MINUTES);
        return { status: 201, body: { data: sources.resource(row), secret } };
      },
    }),
    defineRoute({
      ...common,
      method: 'DELETE',
      path: item,
      operationId: 'webhook-sources.destroy',
      summary: 'Delete a webhook source: its secret stops verifying at once',
      ability: '*',
      params,
      responses: { 204: { description: 'Deleted' }, 404: missing },
      handler: ({ project, params: p }) => {
        sources.delete(project!.id, p.sourceId);
        return { status: 204 };
      },
    }),
    defineRoute({
      ...common,
      tags: ['Incoming webhook log'],
      method: 'GET',
      path: `${PROJECT_PATH}/incoming-webhooks`,
      operationId: 'incoming-webhooks.index',
      summary: "The project's incoming webhook log, newest first",
      description:
        "Requests matched to one of the project's sources. Requests no source verified are in the administrators' GET /api/v1/incoming-webhooks.",
      ability: '*',
      params: projectParams,
      query: pageQuery.extend(logQuery.shape),
      responses: { 200: { description: 'A page of log entries', schema: logEntries } },
      handler: ({ project, query, koa }) => {
        const { items, total } = log.list(project!.id, query, window(query).offset, window(query).limit);
        return { body: paginate(koa, query, items, total) };
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/api/v1/incoming-webhooks',
      operationId: 'incoming-webhooks.all',
      tags: ['Incoming webhook log'],
      summary: 'Every incoming webhook request, including those no source verified (administrators)',
      ability: '*',
      admin: true,
      rateClass: 'standard',
      query: pageQuery.extend(logQuery.shape),
      responses: { 200: { description: 'A page of log entries', schema: logEntries } },
      handler: ({ query, koa }) => {
        const { items, total } = log.list(null, query, window(query).offset, window(query).limit);
        return { body: paginate(koa, query, items, total) };
      },
    }),
  ];
}
