import { credentialKeyResource } from '../../venue/credential-keys.js';
import type { Venue } from '../../venue/index.js';
import { credentialKeySchema } from '../../resources/venue.js';
import { messageSchema, single } from '../resources.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { PROJECT_PATH, projectParams, withId } from './crud.js';

// A project's credential keys (docs/credentials.md: the key lifecycle): their public parts, a
// rotation, a retirement. Keys are access control: access:read to list, access:write to change.
// No answer here carries a private key: the resource is the public part only.

const PATH = `${PROJECT_PATH}/credential-keys`;

export function credentialKeyRoutes({ venue }: { venue: Venue }): AnyRoute[] {
  return [
    defineRoute({
      method: 'GET',
      path: PATH,
      operationId: 'credential-keys.index',
      tags: ['Credentials'],
      summary: "The project's credential keys (public parts), the retired ones included",
      ability: 'access:read',
      rateClass: 'standard',
      project: true,
      params: projectParams,
      responses: { 200: { description: 'The keys, oldest first', schema: single(credentialKeySchema.array()) } },
      handler: ({ project }) => ({ body: { data: venue.credentialKeys.list(project!.id).map(credentialKeyResource) } }),
    }),
    defineRoute({
      method: 'POST',
      path: PATH,
      operationId: 'credential-keys.store',
      tags: ['Credentials'],
      summary: 'Rotate: a new signing key; the previous one becomes verifying',
      ability: 'access:write',
      rateClass: 'standard',
      project: true,
      params: projectParams,
      description: 'Refused on an edge, which holds public keys only (409 signing_not_on_edge).',
      responses: { 201: { description: 'The new signing key', schema: single(credentialKeySchema) } },
      handler: ({ project }) => ({
        status: 201,
        body: { data: credentialKeyResource(venue.credentialKeys.rotate(project!.id)) },
      }),
    }),
    defineRoute({
      method: 'POST',
      path: `${PATH}/{keyId}/retire`,
      operationId: 'credential-keys.retire',
      tags: ['Credentials'],
      summary: 'Retire a key: what it signed no longer verifies',
      description: 'A retired key is answered as it is. Refused on an edge (409 signing_not_on_edge).',
      ability: 'access:write',
      rateClass: 'standard',
      project: true,
      params: withId('keyId'),
      conditions: [{ code: 'signing_key_in_use', when: 'the key is the signing key: rotate first' }],
      responses: {
        200: { description: 'The retired key', schema: single(credentialKeySchema) },
        404: { description: 'No such key in this project', schema: messageSchema },
      },
      handler: ({ project, params }) => ({
        body: { data: credentialKeyResource(venue.credentialKeys.retire(project!.id, params.keyId)) },
      }),
    }),
  ];
}
