import { z } from 'zod';
import { AppError, notFound } from '../src/errors.js';
import { isStoreBusy } from '../src/store/transactions.js';
import { edgeSchema, type EdgeRow } from './edges.js';
import {
  changePageSchema,
  decodeCursor,
  encodeCursor,
  helloSchema,
  UPLOAD_MAX_BYTES,
  UPLOAD_MAX_ITEMS,
  uploadBodySchema,
  uploadResultSchema,
} from './protocol.js';
import { PROTOCOL_VERSION, SUPPORTED_PROTOCOLS } from '../src/http/sync-protocol-version.js';
import type { HttpDeps } from '../src/http/deps.js';
import { collectionSchema, pageQuery, paginate, window } from '../src/http/pagination.js';
import { type AnyRoute, defineRoute } from '../src/http/route.js';
import { messageSchema, single } from '../src/http/resources.js';
import { edgeRefusal } from '../src/http/edge-refusal.js';
import { PROJECT_PATH, projectParams, withId } from '../src/http/routes/crud.js';
import { CONFLICT_KINDS, conflictSchema } from '../src/resources/sync-conflict.js';

// Cloud sync over HTTP (docs/sync.md), registered in the route table by the composition
// root (app.ts: buildRouteTable's wing routes). Three groups:
// - edges, on the cloud: issue (the token shown once; the ability sync:edges, docs/auth.md), list,
//   show, revoke, and re-confirm one whose issuer lost access (administrators);
// - status and conflicts, for anyone who may read the project, on every role;
// - the protocol itself, for edges with their sync token (ability `sync`): hello, upload,
//   changes, revocations. Its request and answer shapes are in the OpenAPI document, so the
//   upstream platform can serve edges too.

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
  cloud_rollback: z
    .object({ detected_at: z.string(), resent_items: z.number().int(), pulled_from_start: z.boolean() })
    .nullable()
    .describe(
      'edge: the last time it found its cloud behind it (restored from a backup): items it uploaded again, and that it pulled reference data again from the start',
    ),
  edges: z.array(edgeSchema).optional().describe('cloud: the edges of this project'),
});

const protocolErrorSchema = z.object({
  message: z.string(),
  code: z.literal('sync_protocol_unsupported'),
  supported_protocols: z.array(z.number().int()),
});

const issuedSchema = edgeSchema.extend({ token: z.string().describe('the sync token, shown only in this answer') });

const waitQuery = z.object({
  cursor: z.string().max(200).optional().describe('the cursor of the last page (absent: from the beginning)'),
  limit: z.coerce.number().int().min(1).max(20_000).default(5000),
  wait: z.coerce
    .number()
    .int()
    .min(0)
    .max(300)
    .default(0)
    .describe('seconds to hold the request open when nothing is newer than the cursor (a long poll)'),
});

export function syncRoutes(deps: HttpDeps): AnyRoute[] {
  const { sync, clock } = deps;
  const base = `${PROJECT_PATH}/sync`;
  const common = { tags: ['Sync'], rateClass: 'standard' as const, project: true };
  const protocol = { tags: ['Sync protocol'], rateClass: 'sync' as const, ability: 'sync' as const };
  const refused = {
    409: {
      description: 'The edge speaks a protocol version this cloud does not (it stops syncing)',
      schema: protocolErrorSchema,
    },
  };
  const cloudOnly = () => {
    if (deps.config.role !== 'cloud') throw new AppError('sync_not_cloud', { role: deps.config.role });
  };
  const notCloud = { code: 'sync_not_cloud' as const, when: 'this appliance is not a cloud' };
  const edgeOf = (projectId: number, id: number) => {
    const edge = sync.edges.get(id);
    if (!edge || edge.project_id !== projectId) throw notFound('Edge');
    return edge;
  };
  const now = () => new Date(clock.now()).toISOString();
  const lastTouch = new Map<number, number>();
  const touch = (edge: EdgeRow, fields: Parameters<typeof sync.edges.touch>[1] = {}) => {
    const at = clock.now();
    if (!fields.uploaded && (lastTouch.get(edge.id) ?? 0) > at - 1000) return;
    lastTouch.set(edge.id, at);
    try {
      sync.edges.touch(edge, { protocol: PROTOCOL_VERSION, ...fields });
    } catch (err) {
      if (!isStoreBusy(err)) throw err; // a last-contact time is not worth refusing the request: the next one writes it
    }
  };
  const edgeIn = (koa: { state: Record<string, unknown> }) => koa.state.edge as EdgeRow;

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

    // ---- the protocol (edges)
    defineRoute({
      ...protocol,
      method: 'GET',
      path: '/api/v1/sync/hello',
      operationId: 'sync-protocol.hello',
      summary: "Protocol: who the edge is, its project's slugs, the protocol versions served",
      description:
        'An edge calls it first: it hosts the project under these slugs, numbers what it creates from its id and above `highest_ids` (docs/sync.md: ids), and stops if it does not speak `protocol`.',
      writes: false,
      responses: {
        200: { description: 'The edge, its project and the protocol', schema: single(helloSchema) },
        ...refused,
      },
      handler: ({ project, koa }) => {
        const edge = edgeIn(koa);
        touch(edge);
        const team = deps.teams.find(project!.team_id)!;
        return {
          body: {
            data: {
              protocol: PROTOCOL_VERSION,
              supported_protocols: [...SUPPORTED_PROTOCOLS],
              edge: { id: edge.id, name: edge.name },
              project: {
                id: project!.id,
                team_slug: team.slug,
                slug: project!.slug,
                name: project!.name,
                timezone: project!.timezone,
              },
              highest_ids: sync.edges.highestIds(edge.id),
              uploaded: sync.edges.uploadedPosition(edge.id),
              cloud: sync.cloudState(),
              server_time: now(),
            },
          },
        };
      },
    }),
    defineRoute({
      ...protocol,
      method: 'POST',
      path: `${base}/upload`,
      operationId: 'sync-protocol.upload',
      project: true,
      summary: 'Protocol: a batch of access events and changes from the edge, in its order, stored once each by uuid',
      description: `Send batches in order and move the edge cursor only after a 200: a batch sent again (after a lost answer) stores nothing twice. At most ${UPLOAD_MAX_ITEMS} items and ${UPLOAD_MAX_BYTES / 1048576} MiB a request: send a larger batch as several, \`feed\` with the last. The cloud applies a batch in slices, each a transaction of its own, \`feed\` kept with the last.`,
      params: projectParams,
      body: uploadBodySchema,
      bodyLimitBytes: UPLOAD_MAX_BYTES,
      admit: (koa) => sync.uploadGate.admit(edgeIn(koa).id),
      responses: { 200: { description: 'What the batch stored', schema: single(uploadResultSchema) }, ...refused },
      conditions: [
        {
          code: 'sync_upload_busy',
          when: 'another batch of this edge is still being received or applied, or sync.uploadsAtOnce batches of other edges are: answered before the body is read; send it again after Retry-After',
          headers: ['Retry-After'],
        },
      ],
      handler: async ({ project, body, koa }) => {
        const edge = edgeIn(koa);
        const outcome = await sync.uploads.apply(edge, project!.id, body);
        touch(edge, { uploaded: true, backlog: body.backlog, offsetMs: body.clock.offset_ms });
        return { body: { data: { ...outcome, cloud: sync.cloudState(), server_time: now() } } };
      },
    }),
    defineRoute({
      ...protocol,
      method: 'GET',
      path: `${base}/changes`,
      operationId: 'sync-protocol.changes',
      project: true,
      summary: 'Protocol: reference data changed after the cursor, oldest first (rows and deletions)',
      description:
        'The cursor is over change versions, not offsets: a row changed while an edge pages moves to the end of the stream and is read there. With wait, a caught-up request is held until something changes.',
      params: projectParams,
      query: waitQuery,
      writes: false,
      responses: { 200: { description: 'A page of changes', schema: single(changePageSchema) }, ...refused },
      handler: async ({ project, query, koa }) => changePage(koa, project!.id, query),
    }),
    defineRoute({
      ...protocol,
      method: 'GET',
      path: `${base}/revocations`,
      operationId: 'sync-protocol.revocations',
      project: true,
      summary: 'Protocol: revoked credentials and blocklist entries after the cursor (the fast path, its own cursor)',
      params: projectParams,
      query: waitQuery,
      writes: false,
      responses: { 200: { description: 'A page of revocations', schema: single(changePageSchema) }, ...refused },
      handler: async ({ project, query, koa }) => changePage(koa, project!.id, query, 'revocations'),
    }),
  ];

  async function changePage(
    koa: { state: Record<string, unknown>; req: NodeJS.EventEmitter },
    projectId: number,
    query: z.output<typeof waitQuery>,
    only?: 'revocations',
  ) {
    const edge = edgeIn(koa);
    touch(edge);
    const after = decodeCursor(query.cursor);
    if (after === null)
      throw new AppError(
        'validation_failed',
        {},
        {
          body: {
            message: 'The cursor is not one this cloud gave.',
            errors: { cursor: ['The cursor is not one this cloud gave.'] },
          },
        },
      );
    let page = sync.changes.page(projectId, after, query.limit, only);
    const end = performance.now() + query.wait * 1000;
    // Held until something of the project's changes, or the wait is over. Let go at once when the
    // edge is revoked or suspended meanwhile; whatever woke it, the edge is asked again before
    // anything is answered (docs/sync.md: the protocol, authentication).
    for (
      let left = end - performance.now();
      page.changes.length === 0 && left > 0 && !sync.changes.stopped;
      left = end - performance.now()
    ) {
      await sync.changes.wait(projectId, left, edge.id);
      const refusal = edgeRefusal(deps, sync.edges.get(edge.id));
      if (refusal) throw refusal;
      page = sync.changes.page(projectId, after, query.limit, only);
    }
    return {
      body: {
        data: {
          changes: page.changes,
          cursor: encodeCursor(page.last),
          has_more: page.hasMore,
          cloud: sync.cloudState(),
          server_time: now(),
        },
      },
    };
  }
}
