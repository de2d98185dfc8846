import type { Venue } from '../../venue/index.js';
import { createAccessPointBody, updateAccessPointBody } from '../../venue/access-points.js';
import { createZoneBody, updateZoneBody, zoneResource, type AccessZoneRow } from '../../venue/access-zones.js';
import type { Occupancy } from '../../access/occupancy.js';
import { createReaderBody, readerResource, updateReaderBody } from '../../venue/readers.js';
import { accessPointViewSchema, readerViews, readerViewSchema } from '../../devices/reader-view.js';
import type { DeviceDeps } from '../deps.js';
import {
  createTimeRestrictionBody,
  timeRestrictionResource,
  updateTimeRestrictionBody,
} from '../../venue/time-restrictions.js';
import { blocklistResource, createBlocklistBody, updateBlocklistBody } from '../../venue/blocklist.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { messageSchema, single, validationErrorSchema } from '../resources.js';
import { crudRoutes, PROJECT_PATH, withId } from './crud.js';
import { blocklistSchema, timeRestrictionSchema, zoneSchema } from '../../resources/venue.js';

// Access control resources (spec: Endpoints, Access points; the routes we add: docs/venue.md).
// Abilities: access:read for GET, access:write for the rest (spec: scope table).

const capacitySchema = zoneSchema.pick({ id: true, name: true, capacity: true, current_count: true, available: true });

// Readers over REST carry their live state (docs/mqtt.md: reader state) with their refused scans,
// and the gateway fronting them (devices/reader-view.ts); AccessPointUpdated carries the same.

export function accessControlRoutes({
  venue,
  occupancy,
  devices,
}: {
  venue: Venue;
  occupancy: Occupancy;
  devices: Pick<DeviceDeps, 'readerStates'>;
}): AnyRoute[] {
  const views = readerViews(venue.readers, devices.readerStates);
  // Zones show the live occupancy the engine keeps.
  const zoneView = (row: AccessZoneRow) => zoneResource(row, occupancy.count(row.id));
  const access = { read: 'access:read' as const, write: 'access:write' as const };
  return [
    ...crudRoutes({
      ...access,
      name: 'access-points',
      idParam: 'accessPointId',
      tag: 'Access points',
      label: 'access point',
      schema: accessPointViewSchema,
      createBody: createAccessPointBody,
      updateBody: updateAccessPointBody,
      list: (p, o, l) => venue.accessPoints.table.list(p, o, l),
      get: (p, id) => venue.accessPoints.get(p, id),
      create: (p, input) => venue.accessPoints.create(p, input),
      update: (p, id, input) => venue.accessPoints.update(p, id, input),
      destroy: (p, id) => venue.accessPoints.delete(p, id),
      resource: (row) => views.accessPoint(venue.accessPoints.resource(row)),
    }),
    ...crudRoutes({
      ...access,
      name: 'access-zones',
      idParam: 'accessZoneId',
      tag: 'Access zones',
      label: 'access zone',
      inUseBy: 'access points or time restrictions',
      deleteRefusals: {
        422: {
          description: 'Attendee types still grant the zone (errors.attendee_types names each: docs/venue.md)',
          schema: validationErrorSchema,
        },
      },
      schema: zoneSchema,
      createBody: createZoneBody,
      updateBody: updateZoneBody,
      list: (p, o, l) => venue.zones.table.list(p, o, l),
      get: (p, id) => venue.zones.get(p, id),
      create: (p, input) => venue.zones.create(p, input),
      update: (p, id, input) => venue.zones.update(p, id, input),
      destroy: (p, id) => venue.zones.delete(p, id),
      resource: zoneView,
    }),
    defineRoute({
      method: 'GET',
      path: `${PROJECT_PATH}/access-zones/{accessZoneId}/capacity`,
      operationId: 'access-zones.capacity',
      tags: ['Access zones'],
      summary: 'Capacity view of a zone: capacity, current_count and available',
      ability: 'access:read',
      rateClass: 'standard',
      project: true,
      params: withId('accessZoneId'),
      responses: {
        200: { description: 'The capacity view', schema: single(capacitySchema) },
        404: { description: 'No such zone', schema: messageSchema },
      },
      handler: ({ project, params }) => {
        const { id, name, capacity, current_count, available } = zoneView(
          venue.zones.get(project!.id, params.accessZoneId),
        );
        return { body: { data: { id, name, capacity, current_count, available } } };
      },
    }),
    ...crudRoutes({
      ...access,
      name: 'readers',
      idParam: 'readerId',
      tag: 'Readers',
      label: 'reader',
      schema: readerViewSchema,
      createBody: createReaderBody,
      updateBody: updateReaderBody,
      list: (p, o, l) => venue.readers.table.list(p, o, l),
      get: (p, id) => venue.readers.get(p, id),
      create: (p, input) => venue.readers.create(p, input),
      update: (p, id, input) => venue.readers.update(p, id, input),
      destroy: (p, id) => venue.readers.delete(p, id),
      resource: (row) => views.reader(readerResource(row)),
    }),
    ...crudRoutes({
      ...access,
      name: 'time-restrictions',
      idParam: 'timeRestrictionId',
      tag: 'Time restrictions',
      label: 'time restriction',
      schema: timeRestrictionSchema,
      createBody: createTimeRestrictionBody,
      updateBody: updateTimeRestrictionBody,
      list: (p, o, l) => venue.timeRestrictions.table.list(p, o, l),
      get: (p, id) => venue.timeRestrictions.get(p, id),
      create: (p, input) => venue.timeRestrictions.create(p, input),
      update: (p, id, input) => venue.timeRestrictions.update(p, id, input),
      destroy: (p, id) => venue.timeRestrictions.delete(p, id),
      resource: timeRestrictionResource,
    }),
    ...crudRoutes({
      ...access,
      name: 'blocklist',
      idParam: 'blocklistEntryId',
      tag: 'Blocklist',
      label: 'blocklist entry',
      schema: blocklistSchema,
      createBody: createBlocklistBody,
      updateBody: updateBlocklistBody,
      list: (p, o, l) => venue.blocklist.table.list(p, o, l),
      get: (p, id) => venue.blocklist.get(p, id),
      create: (p, input) => venue.blocklist.create(p, input),
      update: (p, id, input) => venue.blocklist.update(p, id, input),
      destroy: (p, id) => venue.blocklist.delete(p, id),
      resource: blocklistResource,
    }),
  ];
}
