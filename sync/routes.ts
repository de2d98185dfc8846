import { z } from 'zod';
import { AppError, notFound } from '../src/errors.js';
import { edgeSchema } from './edges.js';
import type { HttpDeps } from '../src/http/deps.js';
import { collectionSchema, pageQuery, paginate, window } from '../src/http/pagination.js';
import { type AnyRoute, defineRoute } from '../src/http/route.js';
import { messageSchema, single } from '../src/http/resources.js';
import { PROJECT_PATH, projectParams, withId } from '../src/http/routes/crud.js';
import { CONFLICT_KINDS, conflictSchema } from '../src/resources/sync-conflict.js';
import { protocolRoutes } from './protocol-routes.js';

// Cloud sync over HTTP (docs/sync.md), registered in the route table by the composition
// root (app.ts: buildRouteTable's wing routes). Three groups:
// - edges, on the cloud: issue (the token shown once; the ability sync:edges, docs/auth.md), list,
//   show, revoke, and re-confirm one whose issuer lost access (administrators);
// - status and conflicts, for anyone who may read the project, on every role;
// - the protocol itself, for edges with their sync token (ability `sync`): protocol-routes.ts.

const statusSchema = z.object({
  role: z.enum(['standalone', 'edge', 'cloud']),
  state: z
    .string()
    .describe(
      'edge: starting, online, offline (the link is down, or a loop keeps failing on what the cloud answers: last_error says which and why), incompatible (protocols differ: sync stopped), refused (token revoked), suspended (the cloud suspended this edge: its issuer lost access; it resumes once re-confirmed)',
    ),
  edge_id: z.number().int().nullable(),
  online: z.boolean(),
  last_error: z.string().nullable(),
  last_upload_at: z.string().nullable(),
  last_download_at: z
    .string()
    .nullable()
    .describe('the last download round that reached the newest change (an empty one included)'),
  backlog: z.number().int().describe('items waiting to be uploaded'),
  oldest_unsynced_at: z
    .string()
    .nullable()
    .describe('scan time of the oldest access event not yet acknowledged by the cloud'),
  cursor: z.string().nullable().describe('the download cursor'),
  clock_offset_ms: z
    .number()
    .int()
    .nullable()
    .describe(
      "cloud time minus this box's clock now, kept against its monotonic clock since the last measurement (docs/sync.md: clocks)",
    ),
  clock_synchronised: z.boolean(),
  latency_ms: z.number().nullable(),
  cloud_url: z
    .string()
    .nullable()
    .describe(
      'edge: the cloud URL its link uses now, one of cloud.url (docs/sync.md: several cloud URLs); null elsewhere',
    ),
  cloud_rollback: z
    .object({ detected_at: z.string(), resent_items: z.number().int(), pulled_from_start: z.boolean() })
    .nullable()
    .describe(
      'edge: the last time it found its cloud behind it (restored from a backup): items it uploaded again, and that it pulled reference data again from the start',
    ),
  protocol: z
    .number()
    .int()
    .nullable()
    .optional()
    .describe(
      'edge: the sync protocol version agreed with its cloud at the last hello (an older cloud: an older version; docs/sync.md: protocol versions); null before the first',
    ),
  edges: z.array(edgeSchema).optional().describe('cloud: the edges of this project'),
});

const issuedSchema = edgeSchema.extend({ token: z.string().describe('the sync token, shown only in this answer') });

export function syncRoutes(deps: HttpDeps): AnyRoute[] {
  const { sync } = deps;
  const base = `${PROJECT_PATH}/sync`;
  const common = { tags: ['Sync'], rateClass: 'standard' as const, project: true };
  const cloudOnly = () => {
    if (deps.config.role !== 'cloud') throw new AppError('sync_not_cloud', { role: deps.config.role });
  };
  const notCloud = { code: 'sync_not_cloud' as const, when: 'this appliance is not a cloud' };
  const edgeOf = (projectId: number, id: number) => {
    const edge = sync.edges.get(id);
    if (!edge || edge.project_id !== projectId) throw notFound('Edge');
    return edge;
  };

  return [
    defineRoute({
      ...common,
      method: 'POST',
      path: `${base}/edges`,
      operationId: 'sync-edges.store',
      summary: 'Issue an edge (cloud): its sync token is in this answer only',
      description:
        "Takes the ability sync:edges: an administrator's full token or session has it; another user's token only when it names it (docs/auth.md). The edge stands on the issuer's access to the project: suspended when they lose it (docs/sync.md: edges and their issuers).",
      ability: 'sync:edges',
      params: projectParams,
      body: z.strictObject({ name: z.string().trim().min(1).max(120) }),
      responses: { 201: { description: 'The edge and its sync token', schema: single(issuedSchema) } },
      conditions: [notCloud],
      handler: ({ project, body, principal }) => {
        cloudOnly();
        const { edge, token } = sync.edges.create(project!.id, body.name, principal!.user.id);
        return { status: 201, body: { data: { ...sync.edges.resource(edge), token } } };
      },
    }),
    defineRoute({
      ...common,
      method: 'GET',
      path: `${base}/edges`,
      operationId: 'sync-edges.index',
      summary: "The project's edges with their last contact, backlog and protocol version (cloud)",
      ability: '*',
      params: projectParams,
      responses: { 200: { description: 'The edges', schema: z.object({ data: z.array(edgeSchema) }) } },
      conditions: [notCloud],
      handler: ({ project }) => {
        cloudOnly();
        return { body: { data: sync.edges.list(project!.id).map((e) => sync.edges.resource(e)) } };
      },
    }),
    defineRoute({
      ...common,
      method: 'GET',
      path: `${base}/edges/{edgeId}`,
      operationId: 'sync-edges.show',
      summary: 'Show an edge (cloud)',
      ability: '*',
      params: withId('edgeId'),
      responses: {
        200: { description: 'The edge', schema: single(edgeSchema) },
        404: { description: 'No such edge in this project', schema: messageSchema },
      },
      conditions: [notCloud],
      handler: ({ project, params }) => {
        cloudOnly();
        return { body: { data: sync.edges.resource(edgeOf(project!.id, params.edgeId)) } };
      },
    }),
    defineRoute({
      ...common,
      method: 'DELETE',
      path: `${base}/edges/{edgeId}`,
      operationId: 'sync-edges.destroy',
      summary: 'Revoke an edge (cloud): its next request is refused; its uploaded events stay',
      ability: '*',
      params: withId('edgeId'),
      responses: {
        200: { description: 'The edge, revoked', schema: single(edgeSchema) },
        404: { description: 'No such edge in this project', schema: messageSchema },
      },
      conditions: [notCloud],
      handler: ({ project, params }) => {
        cloudOnly();
        edgeOf(project!.id, params.edgeId);
        return { body: { data: sync.edges.resource(sync.edges.revoke(params.edgeId)) } };
      },
    }),
    defineRoute({
      ...common,
      method: 'POST',
      path: `${base}/edges/{edgeId}/confirm`,
      operationId: 'sync-edges.confirm',
      summary:
        'Re-confirm an edge (cloud, administrators): it stands on your access from now on, and a suspension is lifted',
      description:
        'An edge whose issuer lost access to the project is refused (401 edge_suspended) until an administrator re-confirms it here. A revoked edge cannot be re-confirmed: issue a new one.',
      ability: '*',
      admin: true,
      params: withId('edgeId'),
      responses: {
        200: { description: 'The edge, its issuer now the caller', schema: single(edgeSchema) },
        404: { description: 'No such edge in this project', schema: messageSchema },
        409: { description: 'The edge is revoked', schema: messageSchema },
      },
      conditions: [notCloud],
      handler: ({ project, params, principal }) => {
        cloudOnly();
        if (edgeOf(project!.id, params.edgeId).revoked_at !== null)
          throw new AppError('conflict', {
            detail: 'The edge is revoked: it cannot be re-confirmed. Issue a new edge instead.',
          });
        return { body: { data: sync.edges.resource(sync.edges.confirm(params.edgeId, principal!.user.id)) } };
      },
    }),
    defineRoute({
      ...common,
      method: 'GET',
      path: `${base}/status`,
      operationId: 'sync.status',
      summary: "This box's sync state for the project: role, link, backlog, cursor, clock (the cloud adds its edges)",
      ability: 'access:read',
      params: projectParams,
      responses: { 200: { description: 'The sync status', schema: single(statusSchema) } },
      handler: ({ project }) => ({ body: { data: sync.status(project!.id) } }),
    }),
    defineRoute({
      ...common,
      method: 'GET',
      path: `${base}/conflicts`,
      operationId: 'sync-conflicts.index',
      summary: 'Flagged access events and field conflicts, oldest first',
      ability: 'access:read',
      params: projectParams,
      query: pageQuery.extend({
        kind: z.enum(CONFLICT_KINDS).optional(),
        reviewed: z.enum(['true', 'false']).optional(),
      }),
      responses: { 200: { description: 'A page of conflicts', schema: collectionSchema(conflictSchema) } },
      handler: ({ project, query, koa }) => {
        const { offset, limit } = window(query);
        const reviewed = query.reviewed === undefined ? undefined : query.reviewed === 'true';
        const { items, total } = sync.conflicts.list(project!.id, { kind: query.kind, reviewed }, offset, limit);
        return { body: paginate(koa, query, items, total) };
      },
    }),
    defineRoute({
      ...common,
      method: 'POST',
      path: `${base}/conflicts/{conflictId}/review`,
      operationId: 'sync-conflicts.review',
      summary: 'Mark a conflict reviewed',
      ability: 'access:write',
      params: withId('conflictId'),
      responses: {
        200: { description: 'The conflict', schema: single(conflictSchema) },
        404: { description: 'No such conflict in this project', schema: messageSchema },
      },
      handler: ({ project, params }) => {
        const conflict = sync.conflicts.markReviewed(project!.id, params.conflictId);
        if (!conflict) throw notFound('Conflict');
        return { body: { data: conflict } };
      },
    }),
    ...protocolRoutes(deps),
  ];
}
