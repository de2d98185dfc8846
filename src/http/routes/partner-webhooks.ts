import { z } from 'zod';
import { AppError } from '../../errors.js';
import { attendeeSyncBody, SYNC_BODY_LIMIT } from '../../webhooks/attendee-sync.js';
import { checkInSchema, partnerResponseSchema, partnerEventBody } from '../../webhooks/registration-partner.js';
import { collectionSchema, pageQuery, paginate, window } from '../pagination.js';
import { PROJECT_PATH, projectParams } from './crud.js';
import type { HttpDeps } from '../deps.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { webhookError } from '../resources.js';

// The incoming webhooks that bring attendees in (spec: Endpoints, Incoming webhooks;
// docs/webhooks-incoming.md): attendee-sync from an external attendee list, registration-partner events. Both
// answer errors in the webhook envelope {error, message, errors?}; docs/webhooks-incoming.md.

const syncResponse = z.object({
  success: z.literal(true).describe('the request was processed; records in errors were not applied'),
  results: z.object({
    created: z.number().int(),
    updated: z.number().int(),
    skipped: z
      .number()
      .int()
      .describe('create: known external ids; update: unknown ones; any mode: records identical to the stored attendee'),
    errors: z.array(
      z.object({
        index: z.number().int().describe('0-based position in attendees'),
        external_id: z.string().nullable(),
        messages: z.array(z.string()),
      }),
    ),
  }),
});

export function partnerWebhookRoutes({
  attendeeSync: sync,
  registrationPartner: partner,
  projects,
  webhookGate: gate,
}: HttpDeps): AnyRoute[] {
  return [
    defineRoute({
      method: 'GET',
      path: `${PROJECT_PATH}/attendees/check-ins`,
      operationId: 'attendees.check-ins',
      tags: ['Incoming webhooks'],
      summary: 'Check-ins reported by the registration partner (attendee.checked_in), newest first',
      ability: 'attendees:read',
      rateClass: 'standard',
      project: true,
      params: projectParams,
      query: pageQuery,
      responses: { 200: { description: 'A page of check-ins', schema: collectionSchema(checkInSchema) } },
      handler: ({ project, query, koa }) => {
        const { items, total } = partner.checkIns(project!.id, window(query).offset, window(query).limit);
        return { body: paginate(koa, query, items, total) };
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/webhook/v1/attendee-sync',
      operationId: 'webhooks.attendee-sync',
      tags: ['Incoming webhooks'],
      summary: 'An external system creates and updates attendees by external_id',
      description:
        'sync_mode `upsert`, `create` or `update`; up to 10,000 records and 10 MiB per request, applied in one transaction. Bad records are reported in `results.errors` by index while the good ones are applied. A signed request must name the project of its webhook source.',
      ability: 'public',
      rateClass: 'none',
      envelope: 'webhook',
      webhook: 'attendee-sync',
      bodyLimitBytes: SYNC_BODY_LIMIT,
      body: attendeeSyncBody,
      responses: {
        200: { description: 'Processed', schema: syncResponse },
        400: { description: 'The envelope fails validation (mode, attendees not an array, over 10,000 records)' },
        403: { description: 'The signing webhook source belongs to another project', schema: webhookError },
        404: { description: 'team_slug/project_slug name no project', schema: webhookError },
      },
      handler: ({ body, koa }) => {
        const { projectId } = gate.admit('attendee-sync', koa);
        const project = projects.findBySlugs(body.team_slug, body.project_slug);
        if (!project) throw new AppError('unknown_project', { identifier: `${body.team_slug}/${body.project_slug}` });
        if (projectId !== null && projectId !== project.id) throw new AppError('source_project_mismatch');
        return { body: { success: true, results: sync.run(project.id, body.sync_mode, body.attendees) } };
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/webhook/v1/registration-partner',
      operationId: 'webhooks.registration-partner',
      tags: ['Incoming webhooks'],
      summary: 'The registration partner reports a registration event',
      description:
        '`registration.created` creates an attendee (external_id = registration_id) with a credential, `registration.updated` changes name and email, `registration.cancelled` revokes the credentials and cancels the attendee, `attendee.checked_in` records a check-in. Each event_id is applied once per project; a replay answers `outcome: replayed`.',
      ability: 'public',
      rateClass: 'none',
      envelope: 'webhook',
      webhook: 'registration-partner',
      body: partnerEventBody,
      responses: {
        200: { description: 'Applied, or acknowledged as a replay', schema: partnerResponseSchema },
        400: { description: 'The payload fails validation (also an unknown event_type or a credential_value in use)' },
        404: {
          description:
            'No attendee has this registration id (not recorded: send it again once the registration exists)',
          schema: webhookError,
        },
        409: {
          description:
            'registration.created for a known registration id, or an unsigned request while more than one project exists',
          schema: webhookError,
        },
      },
      handler: ({ body, koa }) => {
        const { projectId } = gate.admit('registration-partner', koa);
        return { body: partner.handle(partner.projectFor(projectId), body) };
      },
    }),
  ];
}
