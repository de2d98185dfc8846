import { z } from 'zod';
import type { Scope } from '../../auth/abilities.js';
import { collectionSchema, pageQuery, paginate, window, type PageQuery } from '../pagination.js';
import { defineRoute, type AnyRoute, type ResponseSpec } from '../route.js';
import { messageSchema, single } from '../resources.js';

// index / show / store / update / destroy for a project-scoped resource, the Laravel way
// (operation ids `<name>.index` ... `<name>.destroy`). Each resource module supplies its
// schemas and service calls; the route shapes, abilities and envelopes stay uniform.

export const PROJECT_PATH = '/api/v1/projects/{teamSlug}/{projectSlug}';
export const projectParams = z.object({ teamSlug: z.string(), projectSlug: z.string() });
export const withId = <K extends string>(key: K) =>
  projectParams.extend({ [key]: z.coerce.number().int().positive() } as Record<K, z.ZodCoercedNumber>);

interface CrudSpec<Row, C extends z.ZodType, U extends z.ZodType> {
  /** Operation id prefix and path segment: 'access-points'. */
  name: string;
  /** Path parameter of the id: 'accessPointId'. */
  idParam: string;
  tag: string;
  label: string;
  read: Scope;
  write: Scope;
  schema: z.ZodType;
  createBody: C;
  updateBody: U;
  /** Filters of the index beyond page and per_page. */
  filters?: z.ZodObject;
  /** When deleting can be refused because the record is still in use (409 conflict): what uses it. */
  inUseBy?: string;
  /** Further refusals of a deletion, by status (a zone attendee types grant: 422). */
  deleteRefusals?: Record<number, ResponseSpec>;
  /** Query parameters that make the index a search (the search rate class); the rest is standard. */
  searchQuery?: readonly string[];
  list(
    projectId: number,
    offset: number,
    limit: number,
    filters: Record<string, unknown>,
  ): { items: Row[]; total: number };
  get(projectId: number, id: number): Row;
  create(projectId: number, input: z.output<C>): Row;
  update(projectId: number, id: number, input: z.output<U>): Row;
  destroy(projectId: number, id: number): void;
  resource(row: Row): unknown;
}

export function crudRoutes<Row, C extends z.ZodType, U extends z.ZodType>(spec: CrudSpec<Row, C, U>): AnyRoute[] {
  const base = `${PROJECT_PATH}/${spec.name}`;
  const item = `${base}/{${spec.idParam}}`;
  const params = withId(spec.idParam);
  const common = { tags: [spec.tag], rateClass: 'standard' as const, project: true };
  const one = { description: `The ${spec.label}`, schema: single(spec.schema) };
  const missing = { description: `No such ${spec.label} in this project`, schema: messageSchema };
  const id = (p: Record<string, unknown>) => p[spec.idParam] as number;
  const inUse: Record<number, ResponseSpec> = spec.inUseBy
    ? { 409: { description: `Still in use by ${spec.inUseBy}`, schema: messageSchema } }
    : {};
  return [
    defineRoute({
      ...common,
      method: 'GET',
      path: base,
      operationId: `${spec.name}.index`,
      summary: `List ${spec.label}s`,
      ability: spec.read,
      rateClass: 'standard',
      ...(spec.searchQuery ? { searchQuery: spec.searchQuery } : {}),
      params: projectParams,
      query: spec.filters ? pageQuery.extend(spec.filters.shape) : pageQuery,
      responses: { 200: { description: `A page of ${spec.label}s`, schema: collectionSchema(spec.schema) } },
      handler: ({ project, query: q, koa }) => {
        const query = q as PageQuery & Record<string, unknown>;
        const { items, total } = spec.list(project!.id, window(query).offset, window(query).limit, query);
        return {
          body: paginate(
            koa,
            query,
            items.map((r) => spec.resource(r)),
            total,
          ),
        };
      },
    }),
    defineRoute({
      ...common,
      method: 'GET',
      path: item,
      operationId: `${spec.name}.show`,
      summary: `Show a ${spec.label}`,
      ability: spec.read,
      params,
      responses: { 200: one, 404: missing },
      handler: ({ project, params: p }) => ({ body: { data: spec.resource(spec.get(project!.id, id(p))) } }),
    }),
    defineRoute({
      ...common,
      method: 'POST',
      path: base,
      operationId: `${spec.name}.store`,
      summary: `Create a ${spec.label}`,
      ability: spec.write,
      params: projectParams,
      body: spec.createBody,
      responses: { 201: one },
      handler: ({ project, body }) => ({
        status: 201,
        body: { data: spec.resource(spec.create(project!.id, body as z.output<C>)) },
      }),
    }),
    defineRoute({
      ...common,
      method: 'PUT',
      path: item,
      operationId: `${spec.name}.update`,
      summary: `Update a ${spec.label} (fields not sent stay as they are)`,
      ability: spec.write,
      params,
      body: spec.updateBody,
      responses: { 200: one, 404: missing },
      handler: ({ project, params: p, body }) => ({
        body: { data: spec.resource(spec.update(project!.id, id(p), body as z.output<U>)) },
      }),
    }),
    defineRoute({
      ...common,
      method: 'DELETE',
      path: item,
      operationId: `${spec.name}.destroy`,
      summary: `Delete a ${spec.label}`,
      ability: spec.write,
      params,
      responses: {
        204: { description: 'Deleted; a tombstone records it' },
        404: missing,
        ...inUse,
        ...spec.deleteRefusals,
      },
      handler: ({ project, params: p }) => {
        spec.destroy(project!.id, id(p));
        return { status: 204 };
      },
    }),
  ];
}
