import type { Venue } from '../../venue/index.js';
import { createFormBody, formResource, submissionBody, submissionResource, updateFormBody } from '../../venue/forms.js';
import { collectionSchema, pageQuery, paginate, window } from '../pagination.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { messageSchema, single } from '../resources.js';
import { crudRoutes, PROJECT_PATH, withId } from './crud.js';
import { formSchema, submissionSchema } from '../../resources/forms.js';

// Forms and submissions: forms:read for GET, forms:write for the rest (spec: scope table).

export function formRoutes({ venue }: { venue: Venue }): AnyRoute[] {
  const base = `${PROJECT_PATH}/forms/{formId}/submissions`;
  const common = { tags: ['Forms'], rateClass: 'standard' as const, project: true, params: withId('formId') };
  return [
    ...crudRoutes({
      read: 'forms:read',
      write: 'forms:write',
      name: 'forms',
      idParam: 'formId',
      tag: 'Forms',
      label: 'form',
      schema: formSchema,
      createBody: createFormBody,
      updateBody: updateFormBody,
      list: (p, o, l) => venue.forms.table.list(p, o, l),
      get: (p, id) => venue.forms.get(p, id),
      create: (p, input) => venue.forms.create(p, input),
      update: (p, id, input) => venue.forms.update(p, id, input),
      destroy: (p, id) => venue.forms.delete(p, id),
      resource: formResource,
    }),
    defineRoute({
      ...common,
      method: 'GET',
      path: base,
      operationId: 'forms.submissions.index',
      summary: "A form's submissions, oldest first",
      ability: 'forms:read',
      query: pageQuery,
      responses: {
        200: { description: 'A page of submissions', schema: collectionSchema(submissionSchema) },
        404: { description: 'No such form', schema: messageSchema },
      },
      handler: ({ project, params, query, koa }) => {
        const form = venue.forms.get(project!.id, params.formId);
        const { items, total } = venue.forms.listSubmissions(form.id, window(query).offset, window(query).limit);
        return { body: paginate(koa, query, items.map(submissionResource), total) };
      },
    }),
    defineRoute({
      ...common,
      method: 'POST',
      path: base,
      operationId: 'forms.submissions.store',
      summary: 'Submit a form; data is checked against its fields',
      ability: 'forms:write',
      body: submissionBody,
      responses: {
        201: { description: 'The submission', schema: single(submissionSchema) },
        404: { description: 'No such form', schema: messageSchema },
      },
      handler: ({ project, params, body }) => ({
        status: 201,
        body: { data: submissionResource(venue.forms.submit(project!.id, params.formId, body)) },
      }),
    }),
  ];
}
