import { z } from 'zod';
import { collectionSchema, pageQuery, paginate, window } from '../pagination.js';
import { type AnyRoute, defineRoute } from '../route.js';
import { messageSchema } from '../resources.js';
import type { HttpDeps } from '../deps.js';
import { crudRoutes, PROJECT_PATH, projectParams } from './crud.js';
import {
  type BridgeDevice,
  bridgeDeviceResource,
  bridgeDeviceSchema,
  createBridgeDeviceBody,
  updateBridgeDeviceBody,
} from '../../resources/bridge-device.js';

// Readers plugged into the box (docs/bridge.md): CRUD of the devices, each answered
// with its live state from the bridge, and the list says whether USB HID works on this box.

const hidSchema = z.object({
  available: z.boolean(),
  reason: z.string().nullable().describe('why USB HID is off here (node-hid cannot load: no hidraw / libusb)'),
});
const listSchema = collectionSchema(bridgeDeviceSchema).extend({
  meta: collectionSchema(bridgeDeviceSchema).shape.meta.extend({ hid: hidSchema }),
});

export function bridgeDeviceRoutes({ bridge }: HttpDeps): AnyRoute[] {
  const view = (d: BridgeDevice) => bridgeDeviceResource(d, bridge.runtime.stateOf(d.id));
  const configManaged = {
    description: 'The device comes from the config file (managed_by "config"): change it there',
    schema: messageSchema,
  };
  const routes = crudRoutes({
    name: 'bridge/devices',
    idParam: 'deviceId',
    tag: 'Bridge devices',
    label: 'bridge device',
    read: 'access:read',
    write: 'access:write',
    schema: bridgeDeviceSchema,
    createBody: createBridgeDeviceBody,
    updateBody: updateBridgeDeviceBody,
    list: (projectId, offset, limit) => bridge.devices.list(projectId, offset, limit),
    get: (projectId, id) => bridge.devices.get(projectId, id),
    create: (projectId, body) => bridge.devices.create(projectId, body),
    update: (projectId, id, body) => bridge.devices.update(projectId, id, body),
    destroy: (projectId, id) => bridge.devices.delete(projectId, id),
    resource: view,
  }).map((r) => ({
    ...r,
    operationId: r.operationId.replace('bridge/devices', 'bridge-devices'),
    ...(r.method === 'PUT' || r.method === 'DELETE' ? { responses: { ...r.responses, 409: configManaged } } : {}),
  }));
  // The index, with whether USB HID works here.
  const index = defineRoute({
    method: 'GET',
    path: `${PROJECT_PATH}/bridge/devices`,
    operationId: 'bridge-devices.index',
    tags: ['Bridge devices'],
    summary:
      'List the devices plugged into the box, with their state (connected, counters); meta.hid says whether USB HID works here',
    ability: 'access:read',
    rateClass: 'standard',
    project: true,
    params: projectParams,
    query: pageQuery,
    responses: { 200: { description: 'A page of bridge devices', schema: listSchema } },
    handler: ({ project, query, koa }) => {
      const { items, total } = bridge.devices.list(project!.id, window(query).offset, window(query).limit);
      const body = paginate(koa, query, items.map(view), total);
      return { body: { ...body, meta: { ...body.meta, hid: bridge.runtime.hidStatus() } } };
    },
  });
  return [index, ...routes.filter((r) => r.operationId !== 'bridge-devices.index')];
}
