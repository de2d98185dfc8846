import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requester, type TestResponse } from '../helpers/appliance.js';
import { type Receiver, startReceiver } from '../helpers/receiver.js';
import { P, SyncWorld, until } from '../helpers/sync-world.js';

// What an edge's sync token opens on its cloud, and what it does not (docs/sync.md "The
// protocol"; docs/security.md "A stolen edge": what held). The cloud as a process; the test
// holds the sync tokens as a thief would and speaks the protocol itself. The routes are read
// from the served OpenAPI document, so a route added later is tried without a line here.

const BLOCK = 2 ** 32;
const SPEAK = { 'Gatehouse-Sync-Protocol': '1' };

interface Operation {
  method: string;
  path: string;
  operationId: string;
  security: Record<string, unknown>[];
}

/** The path with its parameters filled: the default project's slugs, ids that parse. */
const fill = (path: string) =>
  path.replace(
    /\{(\w+)\}/g,
    (_, name: string) => ({ teamSlug: 'default', projectSlug: 'default', appId: 'app' })[name] ?? '1',
  );

describe('a stolen sync token, on a cloud process', () => {
  const world = new SyncWorld();
  let receiver: Receiver;
  let request: ReturnType<typeof requester>;
  let operations: Operation[];
  let edge: { id: number; token: string };
  let other: { id: number; token: string };
  let door: number;

  const issue = async (path: string, name: string) => {
    const res = await world.cloud.api('POST', `${path}/sync/edges`, { name });
    expect(res.status, res.text).toBe(201);
    return { id: res.body.data.id as number, token: res.body.data.token as string };
  };
  const speak = (method: string, path: string, token: string, body?: unknown) =>
    request(method, path, { token, headers: SPEAK, ...(body === undefined ? {} : { body }) });
  const protocolRoutes = () => operations.filter((o) => o.security.some((s) => 'syncToken' in s));
  const accessEvent = (over: Record<string, unknown> = {}) => ({
    kind: 'access',
    uuid: randomUUID(),
    access_point_id: door,
    access_zone_id: null,
    reader_id: null,
    credential_id: null,
    credential_value: 'STOLEN-1',
    attendee_id: null,
    granted: false,
    reason: 'invalid_credential',
    movement: null,
    scanned_at: new Date().toISOString(),
    decided_at: new Date().toISOString(),
    source: 'api',
    ...over,
  });
  const batch = (items: unknown[], over: Record<string, unknown> = {}) => ({
    clock: { offset_ms: 0, synchronised: true },
    backlog: 0,
    items,
    ...over,
  });
  const eventsOf = async (project: string) =>
    (await world.cloud.api('GET', `${project}/access-events?per_page=100`)).body.data as {
      uuid: string;
      edge_id: number | null;
    }[];
  const expectUnauthenticated = (res: TestResponse, what: string) => {
    expect(res.status, `${what}: ${res.text}`).toBe(401);
    expect(res.body, what).toEqual({ message: 'Unauthenticated.' });
  };

  beforeAll(async () => {
    await world.startCloud({ GATEHOUSE_WEBHOOK_ALLOW_INSECURE: '1' });
    request = requester(world.cloud.url);
    receiver = await startReceiver();
    const doc = (await world.cloud.api('GET', '/api/v1/openapi.json')).body as {
      paths: Record<string, Record<string, Omit<Operation, 'method' | 'path'>>>;
    };
    operations = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.entries(ops).map(([method, op]) => ({ ...op, method: method.toUpperCase(), path })),
    );
    const zone = (await world.cloud.api('POST', '/access-zones', { name: 'Hall' })).body.data.id as number;
    door = (await world.cloud.api('POST', '/access-points', { name: 'Door', access_zone_id: zone })).body.data
      .id as number;
    // Two more projects: one in the same team, one in another team.
    expect(
      (await world.cloud.api('POST', '/api/v1/projects', { name: 'Other', slug: 'other', team_slug: 'default' }))
        .status,
    ).toBe(201);
    expect((await world.cloud.api('POST', '/api/v1/teams', { name: 'North' })).status).toBe(201);
    expect(
      (await world.cloud.api('POST', '/api/v1/projects', { name: 'Gala', slug: 'gala', team_slug: 'north' })).status,
    ).toBe(201);
    edge = await issue(P, 'gate');
    other = await issue('/api/v1/projects/north/gala', 'gala gate');
    const projectId = (await world.cloud.api('GET', P)).body.data.id as number;
    const sub = await world.cloud.api('POST', '/api/v1/webhook/subscribe', {
      url: receiver.url,
      events: ['access.denied', 'gateway.online'],
      project_id: projectId,
    });
    expect(sub.status, sub.text).toBe(201);
  }, 90_000);
  afterAll(async () => {
    await world.destroy();
    await receiver?.close();
  });

  it("answers 404 to an edge's token on another project's sync paths, and stores nothing there", async () => {
    expect(protocolRoutes().map((o) => o.operationId)).toEqual(
      expect.arrayContaining([
        'sync-protocol.hello',
        'sync-protocol.upload',
        'sync-protocol.changes',
        'sync-protocol.revocations',
      ]),
    );
    const elsewhere = [
      '/api/v1/projects/default/other',
      '/api/v1/projects/north/gala',
      '/api/v1/projects/north/default',
      '/api/v1/projects/nope/nope',
    ];
    const projectRoutes = protocolRoutes().filter((o) => o.path.includes('{projectSlug}'));
    expect(projectRoutes.length).toBeGreaterThanOrEqual(3);
    for (const project of elsewhere) {
      for (const op of projectRoutes) {
        const path = op.path.replace('/api/v1/projects/{teamSlug}/{projectSlug}', project);
        const res = await speak(op.method, path, edge.token, op.method === 'POST' ? batch([accessEvent()]) : undefined);
        expect(res.status, `${op.operationId} at ${project}: ${res.text}`).toBe(404);
        expect(res.body, `${op.operationId} at ${project}`).toEqual({ message: 'Project not found.' });
      }
    }
    expect(await eventsOf('/api/v1/projects/default/other')).toEqual([]);
    expect(await eventsOf('/api/v1/projects/north/gala')).toEqual([]);
    // The gala's own edge is held to its project the same way.
    const before = (await eventsOf(P)).length;
    expect((await speak('POST', `${P}/sync/upload`, other.token, batch([accessEvent()]))).status).toBe(404);
    expect((await speak('GET', `${P}/sync/changes`, other.token)).status).toBe(404);
    expect(await eventsOf(P)).toHaveLength(before);
    // And its own project's paths answer it.
    expect((await speak('GET', `${P}/sync/changes`, edge.token)).status).toBe(200);
  });

  it("refuses a user's API token, and no token at all, on every sync protocol route: 401", async () => {
    const admin = await world.cloud.token();
    const before = (await eventsOf(P)).length;
    for (const op of protocolRoutes()) {
      const path = fill(op.path);
      const body = op.method === 'POST' ? batch([accessEvent()]) : undefined;
      expectUnauthenticated(
        await speak(op.method, path, admin, body),
        `${op.operationId} with the administrator's token`,
      );
      expectUnauthenticated(
        await request(op.method, path, { headers: SPEAK, ...(body ? { body } : {}) }),
        `${op.operationId} without a token`,
      );
    }
    expect(await eventsOf(P)).toHaveLength(before);
  });

  it("refuses an edge's sync token on every REST route: 401", async () => {
    const rest = operations.filter((o) => o.security.some((s) => 'bearerAuth' in s));
    expect(rest.length).toBeGreaterThan(50);
    for (const op of rest) {
      const res = await request(op.method, fill(op.path), {
        token: edge.token,
        ...(op.method === 'GET' || op.method === 'DELETE' ? {} : { body: {} }),
      });
      expectUnauthenticated(res, `${op.method} ${op.path}`);
    }
  });

  it('refuses a revoked edge on every protocol route: 401', async () => {
    const doomed = await issue(P, 'doomed');
    const before = (await eventsOf(P)).length;
    expect((await speak('GET', '/api/v1/sync/hello', doomed.token)).status).toBe(200);
    expect((await world.cloud.api('DELETE', `/sync/edges/${doomed.id}`)).status).toBe(200);
    for (const op of protocolRoutes()) {
      expectUnauthenticated(
        await speak(op.method, fill(op.path), doomed.token, op.method === 'POST' ? batch([accessEvent()]) : undefined),
        `${op.operationId} of a revoked edge`,
      );
    }
    expect(await eventsOf(P)).toHaveLength(before);
  });

  it('counts a replayed upload batch as duplicates and stores each item once', async () => {
    const items = [
      accessEvent(),
      accessEvent(),
      accessEvent(),
      {
        kind: 'change',
        uuid: randomUUID(),
        event: 'attendee.created',
        data: { id: edge.id * BLOCK + 1, first_name: 'Walk', last_name: 'In', status: 'active' },
        created_at: new Date().toISOString(),
      },
    ];
    const first = await speak('POST', `${P}/sync/upload`, edge.token, batch(items));
    expect(first.status, first.text).toBe(200);
    expect(first.body.data).toMatchObject({ accepted: 4, duplicates: 0, refused: 0 });
    const again = await speak('POST', `${P}/sync/upload`, edge.token, batch(items));
    expect(again.body.data).toMatchObject({ accepted: 0, duplicates: 4, refused: 0 });
    const fresh = accessEvent();
    const mixed = await speak('POST', `${P}/sync/upload`, edge.token, batch([...items.slice(0, 2), fresh]));
    expect(mixed.body.data).toMatchObject({ accepted: 1, duplicates: 2, refused: 0 });
    const mine = new Set<string>([...items.slice(0, 3).map((i) => i.uuid), fresh.uuid]);
    expect((await eventsOf(P)).filter((e) => mine.has(e.uuid))).toHaveLength(4);
    expect((await world.cloud.api('GET', '/attendees?search=Walk')).body.data).toHaveLength(1);
    const told = () => receiver.received.filter((r) => mine.has(r.body.data.uuid));
    await until('the four events on the webhook', told, (r) => r.length >= 4);
    await new Promise((r) => setTimeout(r, 300)); // a second announcement would have come by now
    expect(told()).toHaveLength(4);
  });

  it("refuses an upload naming an edge_id (422) and stores nothing; the cloud records the token's edge whatever the data says", async () => {
    const before = (await eventsOf(P)).length;
    const forgedItem = await speak('POST', `${P}/sync/upload`, edge.token, batch([accessEvent({ edge_id: other.id })]));
    expect(forgedItem.status, forgedItem.text).toBe(422);
    expect(forgedItem.body.errors['items.0.edge_id']).toEqual(['The items.0.edge_id field is not allowed.']);
    const forgedBatch = await speak(
      'POST',
      `${P}/sync/upload`,
      edge.token,
      batch([accessEvent()], { edge_id: other.id }),
    );
    expect(forgedBatch.status, forgedBatch.text).toBe(422);
    expect(forgedBatch.body.errors.edge_id).toEqual(['The edge_id field is not allowed.']);
    expect(await eventsOf(P)).toHaveLength(before);

    // A change's data is free-form: an edge_id in it is overwritten by the token's edge.
    const status = {
      kind: 'change',
      uuid: randomUUID(),
      event: 'gateway.online',
      data: { identifier: 'GW-X', status: 'online', edge_id: other.id },
      created_at: new Date().toISOString(),
    };
    const event = accessEvent();
    const sent = await speak('POST', `${P}/sync/upload`, edge.token, batch([event, status]));
    expect(sent.body.data).toMatchObject({ accepted: 2, duplicates: 0 });
    expect((await eventsOf(P)).find((e) => e.uuid === event.uuid)?.edge_id).toBe(edge.id);
    const [online] = await receiver.waitFor(1, 'gateway.online');
    expect(online!.body.data).toMatchObject({ identifier: 'GW-X', edge_id: edge.id });
    const denied = await until(
      'the access event on the webhook',
      () => receiver.received.find((r) => r.body.data.uuid === event.uuid),
      (r) => r !== undefined,
    );
    expect(denied!.body.data.edge_id).toBe(edge.id);
  });
});
