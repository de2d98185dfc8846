import { z } from 'zod';
import { notFound } from '../../errors.js';
import { CATALOGUE } from '../../feed/catalogue.js';
import { deliverySchema } from '../../outgoing-webhooks/deliveries.js';
import type { HttpDeps } from '../deps.js';
import { collectionSchema, pageQuery, paginate, window } from '../pagination.js';
import { type AnyRoute, defineRoute } from '../route.js';
import { messageSchema, single } from '../resources.js';
import { PROJECT_PATH, projectParams, withId } from './crud.js';

// The outgoing delivery log (spec: Outgoing delivery log entry, Outgoing delivery states;
// docs/webhooks-outgoing.md): newest first, filtered by subscription, event, status and time; a resend is
// a new attempt of the same delivery (the same delivery id), made now, outside the queue.

const iso = z.iso.datetime({ offset: true });
const deliveryQuery = pageQuery.extend({
  subscription_id: z.coerce.number().int().positive().optional(),
  event: z.enum([...CATALOGUE, 'webhook.test'] as [string, ...string[]]).optional(),
  status: z.enum(['pending', 'delivered', 'failed']).optional(),
  since: iso.optional().describe('created at or after (ISO 8601)'),
  until: iso.optional().describe('created before (ISO 8601)'),
});

export function webhookDeliveryRoutes({ outgoing }: HttpDeps): AnyRoute[] {
  const { deliveries, dispatcher } = outgoing;
  const base = `${PROJECT_PATH}/webhook-deliveries`;
  const item = `${base}/{deliveryId}`;
  const params = withId('deliveryId');
  const common = { tags: ['Outgoing webhooks'], rateClass: 'standard' as const, project: true };
  const missing = { description: 'No such delivery in this project', schema: messageSchema };
  const inProject = (projectId: number, id: number) => {
    const row = deliveries.get(id);
    if (!row || row.project_id !== projectId) throw notFound('Delivery');
    return row;
  };
  return [
    defineRoute({
      ...common,
      method: 'GET',
      path: base,
      operationId: 'webhook-deliveries.index',
      summary: 'The outgoing delivery log, newest first',
      ability: '*',
      params: projectParams,
      query: deliveryQuery,
      responses: { 200: { description: 'A page of deliveries', schema: collectionSchema(deliverySchema) } },
      handler: ({ project, query, koa }) => {
        const filter = {
          projectId: project!.id,
          subscriptionId: query.subscription_id,
          event: query.event,
          status: query.status,
          since: query.since,
          until: query.until,
        };
        const { items, total } = deliveries.list(filter, window(query).offset, window(query).limit);
        return {
          body: paginate(
            koa,
            query,
            items.map((r) => deliveries.resource(r)),
            total,
          ),
        };
      },
    }),
    defineRoute({
      ...common,
      method: 'GET',
      path: item,
      operationId: 'webhook-deliveries.show',
      summary: 'Show a delivery with its attempts',
      ability: '*',
      params,
      responses: { 200: { description: 'The delivery', schema: single(deliverySchema) }, 404: missing },
      handler: ({ project, params: p }) => ({
        body: { data: deliveries.resource(inProject(project!.id, p.deliveryId)) },
      }),
    }),
    defineRoute({
      ...common,
      method: 'POST',
      path: `${item}/resend`,
      operationId: 'webhook-deliveries.resend',
      summary: 'Send the delivery again now (the same delivery id); answers it after the attempt',
      description:
        'A failed delivery that is resent and accepted becomes delivered; a pending one that fails keeps its place and schedule.',
      ability: '*',
      params,
      responses: {
        200: { description: 'The delivery after the attempt', schema: single(deliverySchema) },
        404: missing,
      },
      handler: async ({ project, params: p }) => {
        inProject(project!.id, p.deliveryId);
        return { body: { data: deliveries.resource(await dispatcher.attemptNow(p.deliveryId)) } };
      },
    }),
  ];
}
