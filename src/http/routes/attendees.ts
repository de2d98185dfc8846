import type { Venue } from '../../venue/index.js';
import { attendeeQuery, createAttendeeBody, updateAttendeeBody, type AttendeeRow } from '../../venue/attendees.js';
import { createAttendeeTypeBody, updateAttendeeTypeBody } from '../../venue/attendee-types.js';
import { credentialResource, issueCredentialBody } from '../../venue/credentials.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { messageSchema, single } from '../resources.js';
import { crudRoutes, PROJECT_PATH, withId } from './crud.js';
import { attendeeSchema, attendeeTypeSchema, credentialSchema } from '../../resources/venue.js';

// Attendees, their types and credentials. Abilities follow the contract's scope table by path:
// attendees:* for /attendees/* and /attendee-types/*; revoking a credential by id
// (docs/venue.md: `DELETE .../credentials/{id}`) is access control, access:write.

export function attendeeRoutes({ venue }: { venue: Venue }): AnyRoute[] {
  const people = { read: 'attendees:read' as const, write: 'attendees:write' as const };
  const attendeeParams = withId('attendeeId');
  const loadAttendee = (projectId: number, id: number): AttendeeRow => venue.attendees.get(projectId, id);
  return [
    ...crudRoutes({
      ...people,
      name: 'attendees',
      idParam: 'attendeeId',
      tag: 'Attendees',
      label: 'attendee',
      schema: attendeeSchema,
      createBody: createAttendeeBody,
      updateBody: updateAttendeeBody,
      filters: attendeeQuery,
      searchQuery: ['search'],
      list: (p, o, l, filters) => venue.attendees.search(p, attendeeQuery.parse(filters), o, l),
      get: (p, id) => venue.attendees.get(p, id),
      create: (p, input) => venue.attendees.create(p, input),
      update: (p, id, input) => venue.attendees.update(p, id, input),
      destroy: (p, id) => venue.attendees.delete(p, id),
      resource: (row) => venue.attendees.resource(row),
    }),
    ...crudRoutes({
      ...people,
      name: 'attendee-types',
      idParam: 'attendeeTypeId',
      tag: 'Attendee types',
      label: 'attendee type',
      inUseBy: 'attendees or time restrictions',
      schema: attendeeTypeSchema,
      createBody: createAttendeeTypeBody,
      updateBody: updateAttendeeTypeBody,
      list: (p, o, l) => venue.attendeeTypes.table.list(p, o, l),
      get: (p, id) => venue.attendeeTypes.get(p, id),
      create: (p, input) => venue.attendeeTypes.create(p, input),
      update: (p, id, input) => venue.attendeeTypes.update(p, id, input),
      destroy: (p, id) => venue.attendeeTypes.delete(p, id),
      resource: (row) => venue.attendeeTypes.resource(row),
    }),
    defineRoute({
      method: 'GET',
      path: `${PROJECT_PATH}/attendees/{attendeeId}/credentials`,
      operationId: 'attendees.credentials.index',
      tags: ['Credentials'],
      summary: "An attendee's credentials, revoked ones included",
      ability: 'attendees:read',
      rateClass: 'standard',
      project: true,
      params: attendeeParams,
      responses: {
        200: { description: 'The credentials', schema: single(credentialSchema.array()) },
        404: { description: 'No such attendee', schema: messageSchema },
      },
      handler: ({ project, params }) => {
        const attendee = loadAttendee(project!.id, params.attendeeId);
        return { body: { data: venue.credentials.ofAttendee(attendee.id).map(credentialResource) } };
      },
    }),
    defineRoute({
      method: 'POST',
      path: `${PROJECT_PATH}/attendees/{attendeeId}/credentials`,
      operationId: 'attendees.credentials.store',
      tags: ['Credentials'],
      summary: 'Issue a credential to an attendee',
      description:
        '`"signed": true` (or no value in a project with signed_credentials_by_default) issues a signed value ' +
        '(docs/credentials.md); a value given with it is refused. Without signing, value is required. On an edge, signing is refused (409 signing_not_on_edge).',
      ability: 'attendees:write',
      rateClass: 'standard',
      project: true,
      params: attendeeParams,
      body: issueCredentialBody,
      responses: {
        201: { description: 'The credential', schema: single(credentialSchema) },
        404: { description: 'No such attendee', schema: messageSchema },
      },
      handler: ({ project, params, body }) => {
        const attendee = loadAttendee(project!.id, params.attendeeId);
        return {
          status: 201,
          body: { data: credentialResource(venue.credentials.issue(project!.id, attendee.id, body)) },
        };
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: `${PROJECT_PATH}/credentials/{credentialId}`,
      operationId: 'credentials.destroy',
      tags: ['Credentials'],
      summary: 'Revoke a credential (the record stays, with status revoked)',
      ability: 'access:write',
      rateClass: 'standard',
      project: true,
      params: withId('credentialId'),
      responses: {
        200: { description: 'The revoked credential', schema: single(credentialSchema) },
        404: { description: 'No such credential', schema: messageSchema },
      },
      handler: ({ project, params }) => ({
        body: { data: credentialResource(venue.credentials.revoke(project!.id, params.credentialId)) },
      }),
    }),
  ];
}
