import { z } from 'zod';
import { createGatewayBody, updateGatewayBody } from '../../devices/gateways.js';
import { gatewayStatusTopic, projectPrefix } from '../../mqtt/topics.js';
import { collectionSchema, pageQuery, paginate, window } from '../pagination.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { messageSchema, single } from '../resources.js';
import type { HttpDeps } from '../deps.js';
import { PROJECT_PATH, projectParams, withId } from './crud.js';
import { gatewaySchema } from '../../resources/devices.js';

// Gateways on the broker (docs/mqtt.md): created by staff, who get the gateway's MQTT token
// once (and again on rotation, which closes the old token's connections).

export function gatewayRoutes({ devices, config }: HttpDeps): AnyRoute[] {
  const { gateways } = devices;
  const base = `${PROJECT_PATH}/gateways`;
  const item = `${base}/{gatewayId}`;
  const params = withId('gatewayId');
  const common = { tags: ['Gateways'], rateClass: 'standard' as const, project: true };
  const missing = { description: 'No such gateway in this project', schema: messageSchema };
  const view = (row: Parameters<typeof gateways.resource>[0], prefix: string) => ({
    ...gateways.resource(row),
    status_topic: gatewayStatusTopic(prefix, row.identifier),
  });
  const viewSchema = gatewaySchema.extend({ status_topic: z.string() });
  const issuedSchema = z.object({
    data: viewSchema,
    token: z.string().describe('the MQTT password (username: the identifier); shown once'),
  });
  const issue = (projectId: number, gatewayId: number) =>
    devices.tokens.issue('gateway', gatewayId, projectId, null).plainText;
  return [
    defineRoute({
      ...common,
      method: 'GET',
      path: base,
      operationId: 'gateways.index',
      summary: 'List gateways with their state (online/offline, last_seen, last report)',
      ability: 'access:read',
      params: projectParams,
      query: pageQuery,
      responses: { 200: { description: 'A page of gateways', schema: collectionSchema(viewSchema) } },
      handler: ({ project, query, koa }) => {
        const { items, total } = gateways.list(project!.id, window(query).offset, window(query).limit);
        const prefix = projectPrefix(project!.team_slug, project!.slug);
        return {
          body: paginate(
            koa,
            query,
            items.map((g) => view(g, prefix)),
            total,
          ),
        };
      },
    }),
    defineRoute({
      ...common,
      method: 'GET',
      path: item,
      operationId: 'gateways.show',
      summary: 'Show a gateway',
      ability: 'access:read',
      params,
      responses: { 200: { description: 'The gateway', schema: single(viewSchema) }, 404: missing },
      handler: ({ project, params: p }) => ({
        body: { data: view(gateways.get(project!.id, p.gatewayId), projectPrefix(project!.team_slug, project!.slug)) },
      }),
    }),
    defineRoute({
      ...common,
      method: 'POST',
      path: base,
      operationId: 'gateways.store',
      summary: 'Create a gateway with the readers it fronts; answers its MQTT token once',
      ability: 'access:write',
      params: projectParams,
      body: createGatewayBody,
      responses: { 201: { description: 'The gateway and its token', schema: issuedSchema } },
      handler: ({ project, body }) => {
        const row = gateways.create(project!.id, body);
        return {
          status: 201,
          body: {
            data: view(row, projectPrefix(project!.team_slug, project!.slug)),
            token: issue(project!.id, row.id),
          },
        };
      },
    }),
    defineRoute({
      ...common,
      method: 'PUT',
      path: item,
      operationId: 'gateways.update',
      summary: 'Update a gateway (name, identifier, the readers it fronts)',
      description: 'Its connections are closed so they reconnect under the new identifier and readers.',
      ability: 'access:write',
      params,
      body: updateGatewayBody,
      responses: { 200: { description: 'The gateway', schema: single(viewSchema) }, 404: missing },
      handler: ({ project, params: p, body }) => {
        const row = gateways.update(project!.id, p.gatewayId, body); // its connections closed too
        return { body: { data: view(row, projectPrefix(project!.team_slug, project!.slug)) } };
      },
    }),
    defineRoute({
      ...common,
      method: 'DELETE',
      path: item,
      operationId: 'gateways.destroy',
      summary: 'Delete a gateway: its token stops working and its connections are closed',
      ability: 'access:write',
      params,
      responses: { 204: { description: 'Deleted' }, 404: missing },
      handler: ({ project, params: p }) => {
        gateways.delete(project!.id, p.gatewayId);
        devices.tokens.revoke('gateway', p.gatewayId);
        return { status: 204 };
      },
    }),
    defineRoute({
      ...common,
      method: 'POST',
      path: `${item}/token`,
      operationId: 'gateways.rotate-token',
      summary: 'Issue a new MQTT token for the gateway; the old one stops working and its connections are closed',
      ability: 'access:write',
      params,
      responses: { 201: { description: 'The gateway and its new token', schema: issuedSchema }, 404: missing },
      handler: ({ project, params: p }) => {
        const row = gateways.get(project!.id, p.gatewayId);
        const token = issue(project!.id, row.id); // the old token's connections closed too
        return { status: 201, body: { data: view(row, projectPrefix(project!.team_slug, project!.slug)), token } };
      },
    }),
  ].map((r) => ({
    ...r,
    description:
      r.description ??
      `MQTT: username = the gateway identifier, password = its token (${config.mqtt.port} TCP, /mqtt WebSocket).`,
  }));
}
