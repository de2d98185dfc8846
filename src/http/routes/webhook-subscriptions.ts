import { z } from 'zod';
import { notFound, validationError } from '../../errors.js';
import { deliverySchema } from '../../outgoing-webhooks/deliveries.js';
import { eventsField, type SubscriptionRow, subscriptionSchema } from '../../outgoing-webhooks/subscriptions.js';
import type { HttpDeps } from '../deps.js';
import { collectionSchema, pageQuery, paginate, window } from '../pagination.js';
import { type AnyRoute, defineRoute, type Principal } from '../route.js';
import { messageSchema, single, validationErrorSchema } from '../resources.js';

// Outgoing webhook subscriptions (spec: Endpoints, Outgoing webhook subscriptions;
// docs/webhooks-outgoing.md), where the platform's contract puts them: outside a project path, the project named in the
// body. An account sees and manages the subscriptions of the projects it can reach; another project's
// subscription is 404, as a project it cannot reach is. Managing them takes a full (`*`) token:
// a subscription sends the venue's events out, signed with a secret shown once. It stands on its
// owner's access to the project (who made it, or last re-enabled it: docs/webhooks-outgoing.md).

const subscribeBody = z.strictObject({
  url: z.string().min(1).max(2048).describe('https URL of the receiver (plain http with webhook.allowInsecure)'),
  events: eventsField.describe('catalogue event names, or ["*"] for all (docs/webhooks-outgoing.md)'),
  project_id: z.number().int().positive(),
  signature_scheme: z
    .enum(['sha256', 'standard'])
    .default('sha256')
    .describe('sha256: X-Svc-Signature (the spec); standard: Standard Webhooks headers'),
});
const updateBody = z.strictObject({
  url: z.string().min(1).max(2048).optional(),
  events: eventsField.optional(),
  active: z
    .boolean()
    .optional()
    .describe('false disables; true re-enables, resuming where it stopped, and makes the caller its owner'),
});
const idParams = z.object({ subscriptionId: z.coerce.number().int().positive() });
const withSecret = z.object({
  data: subscriptionSchema,
  secret: z.string().describe('shown once: the signing secret'),
});

export function webhookSubscriptionRoutes({ outgoing, projects }: HttpDeps): AnyRoute[] {
  const { subscriptions, deliveries, dispatcher } = outgoing;
  const base = '/api/v1/webhook-subscriptions';
  const item = `${base}/{subscriptionId}`;
  const common = { tags: ['Outgoing webhooks'], rateClass: 'standard' as const };
  const missing = { description: 'No such subscription in a project this account can reach', schema: messageSchema };
  const reachOf = (principal: Principal | null) => ({ userId: principal!.user.id, isAdmin: principal!.user.is_admin });
  /** The subscription, when its project is one the account can reach. */
  const reachable = (principal: Principal | null, id: number): SubscriptionRow => {
    const row = subscriptions.get(id);
    if (!row || !projects.reachable(row.project_id, reachOf(principal))) throw notFound('Webhook subscription');
    return row;
  };
  return [
    defineRoute({
      ...common,
      method: 'POST',
      path: '/api/v1/webhook/subscribe',
      operationId: 'webhook-subscriptions.store',
      summary: 'Subscribe a URL to events of a project; answers the signing secret once',
      ability: '*',
      body: subscribeBody,
      responses: {
        201: { description: 'The subscription and its secret', schema: withSecret },
        422: {
          description: 'Invalid url, unknown event, or a project this account cannot reach',
          schema: validationErrorSchema,
        },
      },
      handler: ({ body, principal }) => {
        if (!projects.reachable(body.project_id, reachOf(principal)))
          throw validationError({ project_id: ['The project does not exist or this account cannot reach it.'] });
        const { row, secret } = subscriptions.create({
          projectId: body.project_id,
          userId: principal!.user.id,
          url: body.url,
          events: body.events,
          scheme: body.signature_scheme,
        });
        return { status: 201, body: { data: subscriptions.resource(row), secret } };
      },
    }),
    defineRoute({
      ...common,
      method: 'GET',
      path: base,
      operationId: 'webhook-subscriptions.index',
      summary: "List the subscriptions of the account's reachable projects",
      ability: '*',
      query: pageQuery.extend({ project_id: z.coerce.number().int().positive().optional() }),
      responses: {
        200: {
          description: 'A page of subscriptions (never their secrets)',
          schema: collectionSchema(subscriptionSchema),
        },
      },
      handler: ({ query, principal, koa }) => {
        const ids = projects
          .reachableIds(reachOf(principal))
          .filter((id) => query.project_id === undefined || id === query.project_id);
        const { items, total } = subscriptions.list(ids, window(query).offset, window(query).limit);
        return {
          body: paginate(
            koa,
            query,
            items.map((r) => subscriptions.resource(r)),
            total,
          ),
        };
      },
    }),
    defineRoute({
      ...common,
      method: 'GET',
      path: item,
      operationId: 'webhook-subscriptions.show',
      summary: 'Show a subscription',
      ability: '*',
      params: idParams,
      responses: { 200: { description: 'The subscription', schema: single(subscriptionSchema) }, 404: missing },
      handler: ({ params, principal }) => ({
        body: { data: subscriptions.resource(reachable(principal, params.subscriptionId)) },
      }),
    }),
    defineRoute({
      ...common,
      method: 'PUT',
      path: item,
      operationId: 'webhook-subscriptions.update',
      summary: 'Change the url or events; disable, or re-enable where it stopped (the caller becomes its owner)',
      ability: '*',
      params: idParams,
      body: updateBody,
      responses: {
        200: { description: 'The subscription', schema: single(subscriptionSchema) },
        404: missing,
        422: { description: 'Invalid', schema: validationErrorSchema },
      },
      handler: ({ params, body, principal }) => {
        reachable(principal, params.subscriptionId);
        return {
          body: { data: subscriptions.resource(subscriptions.update(params.subscriptionId, body, principal!.user.id)) },
        };
      },
    }),
    defineRoute({
      ...common,
      method: 'DELETE',
      path: item,
      operationId: 'webhook-subscriptions.destroy',
      summary: 'Delete a subscription: nothing more is sent to it; its delivery log goes with it',
      ability: '*',
      params: idParams,
      responses: { 204: { description: 'Deleted' }, 404: missing },
      handler: ({ params, principal }) => {
        reachable(principal, params.subscriptionId);
        subscriptions.delete(params.subscriptionId);
        return { status: 204 };
      },
    }),
    defineRoute({
      ...common,
      method: 'POST',
      path: `${item}/rotate-secret`,
      operationId: 'webhook-subscriptions.rotate-secret',
      summary: 'A new signing secret, answered once; the old one also signs for webhook.secretGraceHours',
      ability: '*',
      params: idParams,
      responses: { 200: { description: 'The subscription and its new secret', schema: withSecret }, 404: missing },
      handler: ({ params, principal }) => {
        reachable(principal, params.subscriptionId);
        const { row, secret } = subscriptions.rotateSecret(params.subscriptionId);
        return { body: { data: subscriptions.resource(row), secret } };
      },
    }),
    defineRoute({
      ...common,
      method: 'POST',
      path: `${item}/test`,
      operationId: 'webhook-subscriptions.test',
      summary: 'Send a webhook.test event to the subscription now; answers its delivery',
      description:
        'One attempt, outside the queue; the delivery shows in the log. A disabled subscription is sent to as well.',
      ability: '*',
      params: idParams,
      responses: {
        200: { description: 'The delivery after its attempt', schema: single(deliverySchema) },
        404: missing,
      },
      handler: async ({ params, principal }) => {
        const row = reachable(principal, params.subscriptionId);
        const test = deliveries.createTest(row.id, row.project_id);
        return { body: { data: deliveries.resource(await dispatcher.attemptNow(test.id)) } };
      },
    }),
  ];
}
