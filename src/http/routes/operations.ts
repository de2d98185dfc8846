import { z } from 'zod';
import type { HttpDeps } from '../deps.js';
import { openApiWebhooks } from '../../outgoing-webhooks/openapi-webhooks.js';
import { metricsGuard } from '../metrics-access.js';
import { messageSchema } from '../resources.js';
import { buildOpenApi } from '../openapi.js';
import { asyncApiContext, asyncApiDocumentSchema, buildAsyncApi } from '../asyncapi.js';
import { webhookHeaderNames } from '../../webhooks/gate.js';
import { defineRoute, type AnyRoute, type ResponseSpec } from '../route.js';

// Liveness, readiness, Prometheus metrics and the OpenAPI and AsyncAPI descriptions. Never rate limited,
// no API credentials: they are for the box's own supervisor, monitoring and client generators.
// /metrics may be kept to the box itself or to a token of its own (metrics.access).

const health = z.object({ status: z.literal('ok') });
const openApiDocument = z.looseObject({
  openapi: z.string(),
  info: z.looseObject({ title: z.string(), version: z.string() }),
  paths: z.record(z.string(), z.unknown()),
});
const ready = z.object({ status: z.enum(['ready', 'starting']), checks: z.record(z.string(), z.boolean()) });

export function operationRoutes(deps: HttpDeps, allRoutes: () => readonly AnyRoute[]): AnyRoute[] {
  let openapi: unknown;
  const mayReadMetrics = metricsGuard(deps.config.metrics);
  const common = { tags: ['Operations'], ability: 'public' as const, rateClass: 'none' as const };
  return [
    defineRoute({
      ...common,
      method: 'GET',
      path: '/health',
      operationId: 'health.show',
      summary: 'Liveness: the process answers',
      responses: { 200: { description: 'Alive', schema: health } },
      handler: () => ({ body: { status: 'ok' } }),
    }),
    defineRoute({
      ...common,
      method: 'GET',
      path: '/ready',
      operationId: 'ready.show',
      summary: 'Readiness: the store is open and every module has started',
      responses: {
        200: { description: 'Ready', schema: ready },
        503: { description: 'Not ready yet (or shutting down)', schema: ready },
      },
      handler: () => {
        const checks = { store: deps.store.isOpen, modules: deps.isReady() };
        const ok = Object.values(checks).every(Boolean);
        return { status: ok ? 200 : 503, body: { status: ok ? 'ready' : 'starting', checks } };
      },
    }),
    defineRoute({
      ...common,
      method: 'GET',
      path: '/metrics',
      operationId: 'metrics.show',
      summary: 'Prometheus metrics (text exposition format)',
      description:
        'metrics.access: `open` (default), `loopback` (clients on the box only) or `token` (`Authorization: Bearer <metrics.token>`).',
      responses: {
        200: { description: 'Metrics in Prometheus text format', text: 'text/plain' },
        // Declared as configured, as the rate limits are (responses.ts): `open` answers neither.
        ...metricsRefusals(deps.config.metrics.access),
      },
      handler: async ({ koa }) => {
        mayReadMetrics(koa);
        return {
          body: await deps.metrics.registry.metrics(),
          headers: { 'Content-Type': deps.metrics.registry.contentType },
        };
      },
    }),
    defineRoute({
      ...common,
      method: 'GET',
      path: '/api/v1/openapi.json',
      operationId: 'openapi.show',
      summary: 'This OpenAPI description',
      responses: { 200: { description: 'OpenAPI 3.1 document', schema: openApiDocument } },
      handler: () => {
        const { headerPrefix, allowUnsigned } = deps.config.incomingWebhooks;
        // Built with the configuration the answers depend on: the rate limits, the webhook header names.
        openapi ??= buildOpenApi(
          allRoutes(),
          {
            rateLimit: (cls) => deps.rateLimits.limitOf(cls),
            webhookHeaders: (kind) => webhookHeaderNames(kind, headerPrefix),
            allowUnsigned,
          },
          openApiWebhooks(deps.config.webhook.headerPrefix),
        );
        return { body: openapi };
      },
    }),
    defineRoute({
      ...common,
      method: 'GET',
      path: '/api/v1/asyncapi.json',
      operationId: 'asyncapi.show',
      summary: 'The AsyncAPI description of the WebSocket channels and MQTT topics',
      description:
        'AsyncAPI 3.0.0; its servers are where the caller reached the box (or http.publicUrl, mqtt.publicHost). docs/realtime.md.',
      responses: { 200: { description: 'AsyncAPI 3.0.0 document', schema: asyncApiDocumentSchema } },
      handler: ({ koa }) => ({ body: buildAsyncApi(asyncApiContext(deps.config, deps.devices.mqttPorts(), koa)) }),
    }),
  ];
}

/** The refusals of /metrics in the configured mode: `open` answers none. */
function metricsRefusals(access: string): Record<number, ResponseSpec> {
  if (access === 'token')
    return {
      401: { description: 'metrics.access is `token` and the bearer token is missing or wrong', schema: messageSchema },
    };
  if (access === 'loopback')
    return {
      403: { description: 'metrics.access is `loopback` and the client is not on the box', schema: messageSchema },
    };
  return {};
}
