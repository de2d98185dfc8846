import { PROTOCOL_VERSION } from '../../../src/http/sync-protocol-version.js';
import { randomUUID } from 'node:crypto';
import { c, type Venue } from './fixtures.js';
import { A, type Case, type World } from './world.js';

// Cloud sync (docs/sync.md): the edges an administrator issues (and re-confirms) on the cloud, status and conflicts,
// and the protocol an edge speaks with its sync token (the wire test's appliance is a cloud).

export function syncCases(w: World, _v: Venue): Case[] {
  const edgeToken = () => w.syncToken();
  const conflict = async () => {
    const projectId = (await w.api('GET', A)).body.data.id as number;
    return w.gh.app.services.sync.conflicts.record(projectId, {
      kind: 'attendee_field',
      edgeId: 1,
      entity: 'attendee',
      entityId: 1,
      field: 'first_name',
      edgeValue: 'Ada',
      cloudValue: 'Ava',
    }).id;
  };
  const edge = async () => (await w.api('POST', `${A}/sync/edges`, { name: 'another' })).body.data.id as number;
  const speak = async (method: string, path: string, json?: unknown, protocol = '1') =>
    w.send({ method, path, token: await edgeToken(), json, headers: { 'Gatehouse-Sync-Protocol': protocol } });
  const batch = {
    clock: { offset_ms: 3, synchronised: true },
    backlog: 0,
    items: [] as unknown[],
  };
  return [
    c('sync-edges.store', 201, 'a name', () => w.api('POST', `${A}/sync/edges`, { name: 'North box' })),
    c('sync-edges.store', 422, 'no name', () => w.api('POST', `${A}/sync/edges`, { name: '' })),
    c('sync-edges.index', 200, 'the edges', () => w.api('GET', `${A}/sync/edges`)),
    c('sync-edges.show', 200, 'an edge', async () => w.api('GET', `${A}/sync/edges/${await edge()}`)),
    c('sync-edges.show', 404, 'an id that names nothing', () => w.api('GET', `${A}/sync/edges/999999`)),
    c('sync-edges.destroy', 200, 'an edge', async () => w.api('DELETE', `${A}/sync/edges/${await edge()}`)),
    c('sync-edges.destroy', 404, 'an id that names nothing', () => w.api('DELETE', `${A}/sync/edges/999999`)),
    c('sync-edges.confirm', 200, 'an edge', async () => w.api('POST', `${A}/sync/edges/${await edge()}/confirm`)),
    c('sync-edges.confirm', 404, 'an id that names nothing', () => w.api('POST', `${A}/sync/edges/999999/confirm`)),
    c('sync-edges.confirm', 409, 'a revoked edge', async () => {
      const id = await edge();
      await w.api('DELETE', `${A}/sync/edges/${id}`);
      return w.api('POST', `${A}/sync/edges/${id}/confirm`);
    }),
    c('sync.status', 200, 'the cloud with its edges', () => w.api('GET', `${A}/sync/status`)),
    c('sync-conflicts.index', 200, 'a page', () => w.api('GET', `${A}/sync/conflicts?reviewed=false`)),
    c('sync-conflicts.index', 422, 'an unknown kind', () => w.api('GET', `${A}/sync/conflicts?kind=nope`)),
    c('sync-conflicts.review', 200, 'a conflict', async () =>
      w.api('POST', `${A}/sync/conflicts/${await conflict()}/review`),
    ),
    c('sync-conflicts.review', 404, 'an id that names nothing', () =>
      w.api('POST', `${A}/sync/conflicts/999999/review`),
    ),
    c('sync-protocol.hello', 200, 'a sync token', () => speak('GET', '/api/v1/sync/hello')),
    c(
      'sync-protocol.hello',
      409,
      'a protocol version the cloud does not speak',
      () => speak('GET', '/api/v1/sync/hello', undefined, '99'),
      { error: 'sync_protocol_unsupported' },
    ),
    c('sync-protocol.upload', 200, 'a batch', () => speak('POST', `${A}/sync/upload`, batch)),
    c('sync-protocol.upload', 422, 'an item of no known kind', () =>
      speak('POST', `${A}/sync/upload`, { ...batch, items: [{ kind: 'other', uuid: randomUUID() }] }),
    ),
    c('sync-protocol.upload', 404, "another project's path", () =>
      speak('POST', '/api/v1/projects/default/elsewhere/sync/upload', batch),
    ),
    c('sync-protocol.upload', 409, 'an old protocol version', () => speak('POST', `${A}/sync/upload`, batch, '0'), {
      error: 'sync_protocol_unsupported',
    }),
    c('sync-protocol.changes', 409, 'no protocol version', () => speak('GET', `${A}/sync/changes`, undefined, ''), {
      error: 'sync_protocol_unsupported',
    }),
    c(
      'sync-protocol.revocations',
      409,
      'a newer protocol version',
      () => speak('GET', `${A}/sync/revocations`, undefined, String(PROTOCOL_VERSION + 1)),
      { error: 'sync_protocol_unsupported' },
    ),
    c('sync-protocol.changes', 200, 'from the beginning', () => speak('GET', `${A}/sync/changes?limit=10`)),
    c('sync-protocol.changes', 422, 'a cursor the cloud never gave', () =>
      speak('GET', `${A}/sync/changes?cursor=bm9wZQ`),
    ),
    c('sync-protocol.revocations', 200, 'from the beginning', () => speak('GET', `${A}/sync/revocations`)),
    c('sync-protocol.revocations', 422, 'a wait over the limit', () =>
      speak('GET', `${A}/sync/revocations?wait=100000`),
    ),
  ];
}
