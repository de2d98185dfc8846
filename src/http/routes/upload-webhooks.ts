import { z } from 'zod';
import { AppError } from '../../errors.js';
import { finalizedSchema, uploadSchema, type UploadImports } from '../../webhooks/upload-imports.js';
import type { WebhookGate } from '../../webhooks/gate.js';
import type { ProjectRepository } from '../../accounts/projects.js';
import { collectionSchema, pageQuery, paginate, window } from '../pagination.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { PROJECT_PATH, projectParams } from './crud.js';
import { webhookError } from '../resources.js';

// POST /webhook/v1/large-upload-finalized (spec: incoming webhooks; docs/webhooks-incoming.md)
// and the uploads it recorded, with the outcome of the imports it queued.

export function uploadWebhookRoutes({
  uploads,
  gate,
  projects,
}: {
  uploads: UploadImports;
  gate: WebhookGate;
  projects: ProjectRepository;
}): AnyRoute[] {
  return [
    defineRoute({
      method: 'POST',
      path: '/webhook/v1/large-upload-finalized',
      operationId: 'webhooks.large-upload-finalized',
      tags: ['Incoming webhooks'],
      summary: 'An object store reports a finished upload; attendee files in the import bucket are imported',
      description:
        'Answers 200 `{success, message, upload_id, status}` once the notice is recorded (status `queued` when an import follows, else `recorded`); the import runs after the answer, its outcome in GET .../uploads.',
      ability: 'public',
      rateClass: 'none',
      envelope: 'webhook',
      webhook: 'upload-finalized',
      body: finalizedSchema,
      responses: {
        200: {
          description: 'Recorded',
          schema: z.object({
            success: z.literal(true),
            message: z.string(),
            upload_id: z.number().int(),
            status: z.enum(['recorded', 'queued']),
          }),
        },
        409: {
          description: 'Unsigned (development) and more than one project: the project is unknown',
          schema: webhookError,
        },
      },
      handler: ({ body, koa }) => {
        let { projectId } = gate.admit('upload-finalized', koa);
        if (projectId === null) {
          const all = projects.listReachable({ userId: 0, isAdmin: true }, 0, 2).items;
          if (all.length !== 1) throw new AppError('project_required');
          projectId = all[0]!.id;
        }
        const row = uploads.receive(projectId, body);
        const message = row.status === 'queued' ? 'Upload recorded; attendee import queued.' : 'Upload recorded.';
        return { body: { success: true, message, upload_id: row.id, status: row.status } };
      },
    }),
    defineRoute({
      method: 'GET',
      path: `${PROJECT_PATH}/uploads`,
      operationId: 'uploads.index',
      tags: ['Incoming webhooks'],
      summary: 'Finalised uploads reported to the project, newest first, with their import outcome',
      description: 'Any GET-capable token (`*` or `read`): the path is outside the attendee scopes.',
      ability: '*',
      rateClass: 'standard',
      project: true,
      params: projectParams,
      query: pageQuery,
      responses: { 200: { description: 'A page of uploads', schema: collectionSchema(uploadSchema) } },
      handler: ({ project, query, koa }) => {
        const { items, total } = uploads.list(project!.id, window(query).offset, window(query).limit);
        return {
          body: paginate(
            koa,
            query,
            items.map((r) => uploads.resource(r)),
            total,
          ),
        };
      },
    }),
  ];
}
