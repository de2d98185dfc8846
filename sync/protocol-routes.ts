import { z } from 'zod';
import { AppError } from '../src/errors.js';
import { isStoreBusy } from '../src/store/transactions.js';
import type { EdgeRow } from './edges.js';
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
import { SIGNED_CREDENTIALS_PROTOCOL, SUPPORTED_PROTOCOLS } from '../src/http/sync-protocol-version.js';
import { beyondUploadOf } from './protocol-versions.js';
import type { HttpDeps } from '../src/http/deps.js';
import { type AnyRoute, defineRoute } from '../src/http/route.js';
import { single } from '../src/http/resources.js';
import { edgeRefusal } from '../src/http/edge-refusal.js';
import { PROJECT_PATH, projectParams } from '../src/http/routes/crud.js';

// The sync protocol's routes, for edges with their sync token (ability `sync`): hello, upload,
// changes, revocations (docs/sync.md: the protocol). Their request and answer shapes are in the
// OpenAPI document, so the upstream platform can serve edges too. The edges' management, status
// and conflicts are routes.ts.

const protocolErrorSchema = z.object({
  message: z.string(),
  code: z.literal('sync_protocol_unsupported'),
  supported_protocols: z.array(z.number().int()),
});

/** The answer to an edge whose protocol version this cloud does not speak. */
const refused = {
  409: {
    description: 'The edge speaks a protocol version this cloud does not (it stops syncing)',
    schema: protocolErrorSchema,
  },
};

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

export function protocolRoutes(deps: HttpDeps): AnyRoute[] {
  const { sync, clock } = deps;
  const base = `${PROJECT_PATH}/sync`;
  const protocol = { tags: ['Sync protocol'], rateClass: 'sync' as const, ability: 'sync' as const };
  const now = () => new Date(clock.now()).toISOString();
  const lastTouch = new Map<number, number>();
  const touch = (edge: EdgeRow, protocol: number, fields: Parameters<typeof sync.edges.touch>[1] = {}) => {
    const at = clock.now();
    if (!fields.uploaded && (lastTouch.get(edge.id) ?? 0) > at - 1000) return;
    lastTouch.set(edge.id, at);
    try {
      sync.edges.touch(edge, { protocol, ...fields });
    } catch (err) {
      if (!isStoreBusy(err)) throw err; // a last-contact time is not worth refusing the request: the next one writes it
    }
  };
  const edgeIn = (koa: { state: Record<string, unknown> }) => koa.state.edge as EdgeRow;
  /** The version the request speaks, checked by the pipeline: every answer is in it
   * (docs/sync.md: protocol versions). */
  const spokenIn = (koa: { state: Record<string, unknown> }) => koa.state.protocol as number;

  return [
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
        const protocol = spokenIn(koa);
        touch(edge, protocol);
        const team = deps.teams.find(project!.team_id)!;
        return {
          body: {
            data: {
              protocol,
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
        const beyond = beyondUploadOf(body.items, spokenIn(koa));
        if (Object.keys(beyond).length > 0)
          throw new AppError(
            'validation_failed',
            {},
            { body: { message: 'The batch carries fields its sync protocol version does not have.', errors: beyond } },
          );
        const outcome = await sync.uploads.apply(edge, project!.id, body);
        touch(edge, spokenIn(koa), { uploaded: true, backlog: body.backlog, offsetMs: body.clock.offset_ms });
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
    const protocol = spokenIn(koa);
    touch(edge, protocol);
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
    // Public keys only to an edge whose protocol has them: an older one refuses a page with an entity it does not know.
    const keys = protocol >= SIGNED_CREDENTIALS_PROTOCOL;
    let page = sync.changes.page(projectId, after, query.limit, only, keys);
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
      page = sync.changes.page(projectId, after, query.limit, only, keys);
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
