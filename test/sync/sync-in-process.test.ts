import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { rawClient, subscribeAs, wsUrl } from '../helpers/pusher.js';
import { type Receiver, startReceiver } from '../helpers/receiver.js';

// A cloud and an edge in this process (the fast loop for the protocol's details); the same
// scenarios across real processes and a cut link are in sync-processes.test.ts.

const P = '/api/v1/projects/default/default';

async function until<T>(what: string, read: () => Promise<T> | T, ok: (v: T) => boolean, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  let last: T = await read();
  while (!ok(last)) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 50));
    last = await read();
  }
  return last;
}

describe('cloud sync, in one process', () => {
  let cloud: TestAppliance;
  let edge: TestAppliance;
  let cloudToken: string;
  let edgeToken: string;
  let syncToken: string;
  let receiver: Receiver;
  const ids: Record<string, number> = {};

  const onCloud = async (method: string, path: string, body?: unknown) =>
    cloud.request(method, `${P}${path}`, { token: cloudToken, ...(body === undefined ? {} : { body }) });
  const onEdge = async (method: string, path: string, body?: unknown) =>
    edge.request(method, `${P}${path}`, { token: edgeToken, ...(body === undefined ? {} : { body }) });

  beforeAll(async () => {
    cloud = await startAppliance({ GATEHOUSE_ROLE: 'cloud', GATEHOUSE_WEBHOOK_ALLOW_INSECURE: '1' });
    receiver = await startReceiver();
    cloudToken = await cloud.token();
    const zone = (await onCloud('POST', '/access-zones', { name: 'Hall', capacity: 100 })).body.data;
    const point = (await onCloud('POST', '/access-points', { name: 'Gate 1', access_zone_id: zone.id })).body.data;
    const type = (await onCloud('POST', '/attendee-types', { name: 'Guest', zone_ids: [zone.id] })).body.data; // slug: guest
    const attendee = (
      await onCloud('POST', '/attendees', { first_name: 'Ada', last_name: 'Lovelace', attendee_type: type.slug })
    ).body.data;
    const credential = (await onCloud('POST', `/attendees/${attendee.id}/credentials`, { value: 'TICKET-1' })).body
      .data;
    Object.assign(ids, { zone: zone.id, point: point.id, attendee: attendee.id, credential: credential.id });
    const issued = await onCloud('POST', '/sync/edges', { name: 'North gate box' });
    expect(issued.status).toBe(201);
    syncToken = issued.body.data.token;
    edge = await startAppliance({
      GATEHOUSE_ROLE: 'edge',
      GATEHOUSE_CLOUD_URL: cloud.url,
      GATEHOUSE_SYNC_TOKEN: syncToken,
      GATEHOUSE_SYNC_LONG_POLL_SECONDS: '2',
    });
    edgeToken = await edge.token();
  }, 60_000);
  afterAll(async () => {
    await edge?.destroy();
    await cloud?.destroy();
    await receiver?.close();
  });

  it('downloads the reference data under the cloud ids and decides on it', async () => {
    await until(
      'the credential on the edge',
      () => onEdge('GET', `/attendees/${ids.attendee}/credentials`),
      (r) => r.status === 200 && r.body.data.length === 1,
    );
    const scan = await onEdge('POST', `/access-points/${ids.point}/scan`, { credential_value: 'TICKET-1' });
    expect(scan.status).toBe(200);
    expect(scan.body.data?.access_granted ?? scan.body.access_granted).toBe(true);
  });

  it('uploads the scan: the cloud stores it once with the edge id and raw scan time', async () => {
    const events = await until(
      'the event on the cloud',
      () => onCloud('GET', '/access-events'),
      (r) => r.status === 200 && r.body.data.length === 1,
    );
    const e = events.body.data[0];
    expect(e.edge_id).toBeGreaterThan(0);
    const status = await onEdge('GET', '/sync/status');
    expect(status.body.data).toMatchObject({ role: 'edge', online: true, backlog: 0 });
  });

  it('refuses a revoked credential at the edge soon after the cloud revokes it', async () => {
    const revoked = await onCloud('DELETE', `/credentials/${ids.credential}`);
    expect(revoked.status).toBe(200);
    await until(
      'the refusal',
      () => onEdge('POST', `/access-points/${ids.point}/scan`, { credential_value: 'TICKET-1' }),
      (r) => (r.body.data?.access_granted ?? r.body.access_granted) === false,
      5000,
    );
  });

  it("announces each uploaded event once on the cloud's WebSocket and webhooks, with the edge id, raw scan time and upload time", async () => {
    const projectId = (await cloud.request('GET', P, { token: cloudToken })).body.data.id;
    expect(
      (
        await cloud.request('POST', '/api/v1/webhook/subscribe', {
          token: cloudToken,
          body: { url: receiver.url, events: ['access.granted', 'gateway.online'], project_id: projectId },
        })
      ).status,
    ).toBe(201);
    const ws = await rawClient(wsUrl(cloud));
    await subscribeAs(cloud, ws, { token: cloudToken }, 'private-dashboard.project.default.access');
    const attendee = (await onCloud('POST', '/attendees', { first_name: 'Live', attendee_type: 'guest' })).body.data;
    await onCloud('POST', `/attendees/${attendee.id}/credentials`, { value: 'LIVE-1' });
    await until(
      'the ticket on the edge',
      () => onEdge('GET', `/attendees/${attendee.id}/credentials`),
      (r) => r.body.data?.length === 1,
    );
    const answer = (await onEdge('POST', `/access-points/${ids.point}/scan`, { credential_value: 'LIVE-1' })).body;
    const scanned = answer.data ?? answer;
    const frame = await ws.next('AccessGranted', 5000);
    expect(frame.data).toMatchObject({
      uuid: scanned.event_id,
      attendee_id: attendee.id,
      edge_id: expect.any(Number),
      uploaded_at: expect.any(String),
      duplicate_of: null,
    });
    const [hook] = await receiver.waitFor(1, 'access.granted');
    expect(hook!.body).toMatchObject({
      id: scanned.event_id,
      data: {
        uuid: scanned.event_id,
        edge_id: frame.data.edge_id,
        uploaded_at: expect.any(String),
        clock_unsynchronised: false,
      },
    });
    await new Promise((r) => setTimeout(r, 300));
    // Once: no second AccessGranted for the same event (next() took the first from the frames).
    expect(
      ws.frames.filter((f) => f.event === 'AccessGranted' && (f.data as { uuid?: string }).uuid === scanned.event_id),
    ).toHaveLength(0);
    expect(receiver.received.filter((r) => r.body.id === scanned.event_id)).toHaveLength(1);
    ws.ws.close();
  });

  it("uploads a gateway's status change at the edge; the cloud tells its webhooks with the edge id", async () => {
    const gateway = (await onEdge('POST', '/gateways', { identifier: 'GW-NORTH' })).body.data;
    const { gateways } = edge.app.services.devices;
    gateways.report(gateways.byId(gateway.id)!, { status: 'online', timestamp: new Date().toISOString() } as never);
    const [hook] = await receiver.waitFor(1, 'gateway.online');
    expect(hook!.body.data).toMatchObject({ identifier: 'GW-NORTH', status: 'online', edge_id: expect.any(Number) });
  });

  it('refuses at the edge a credential blocklisted on the cloud, by the fast path', async () => {
    const attendee = (await onCloud('POST', '/attendees', { first_name: 'Barred', attendee_type: 'guest' })).body.data;
    const credential = (await onCloud('POST', `/attendees/${attendee.id}/credentials`, { value: 'BAR-1' })).body.data;
    await until(
      'the ticket on the edge',
      () => onEdge('GET', `/attendees/${attendee.id}/credentials`),
      (r) => r.body.data?.length === 1,
    );
    expect((await onCloud('POST', '/blocklist', { credential_id: credential.id, reason: 'fraud' })).status).toBe(201);
    const refused = await until(
      'the refusal',
      () => onEdge('POST', `/access-points/${ids.point}/scan`, { credential_value: 'BAR-1' }),
      (r) => (r.body.data ?? r.body).access_granted === false,
      5000,
    );
    expect((refused.body.data ?? refused.body).reason).toBe('blocklisted');
  });

  it('keeps a change its store refuses as a refused_change conflict and applies the rest of the batch: one bad change never stops an upload', async () => {
    const change = (uuid: string, data: Record<string, unknown>) => ({
      kind: 'change',
      uuid,
      event: 'attendee.created',
      data,
      created_at: new Date().toISOString(),
    });
    const block = Number(syncToken.split('|')[0]) * 2 ** 32; // an edge creates under the ids of its own block (docs/sync.md: ids)
    const body = {
      clock: { offset_ms: 0, synchronised: true },
      backlog: 0,
      items: [
        change('8f0c1a52-5d1e-4c61-9a57-000000000001', {
          id: block + 990001,
          first_name: 'Bad',
          last_name: 'Status',
          status: 'sleeping',
        }), // the CHECK on status
        change('8f0c1a52-5d1e-4c61-9a57-000000000002', {
          id: block + 990002,
          first_name: { not: 'text' },
          last_name: 'Object',
          status: 'active',
        }), // no value SQLite binds
        change('8f0c1a52-5d1e-4c61-9a57-000000000003', {
          id: block + 990003,
          first_name: 'Good',
          last_name: 'One',
          status: 'active',
        }),
      ],
    };
    const upload = () =>
      cloud.request('POST', `${P}/sync/upload`, {
        token: syncToken,
        body,
        headers: { 'Gatehouse-Sync-Protocol': '1' },
      });
    const first = await upload();
    expect(first.status, first.text).toBe(200);
    expect(first.body.data).toMatchObject({ accepted: 3, duplicates: 0, refused: 2 });
    expect((await onCloud('GET', `/attendees/${block + 990003}`)).body.data).toMatchObject({
      first_name: 'Good',
      last_name: 'One',
    });
    for (const id of [block + 990001, block + 990002])
      expect((await onCloud('GET', `/attendees/${id}`)).status).toBe(404);
    const refused = (await onCloud('GET', '/sync/conflicts?kind=refused_change')).body.data as Record<
      string,
      unknown
    >[];
    expect(refused).toEqual([
      expect.objectContaining({
        entity: 'attendee',
        entity_id: block + 990001,
        field: null,
        edge_value: { event: 'attendee.created', data: body.items[0]!.data },
        detail: expect.stringMatching(/refused it: (CHECK constraint failed|.*violates check constraint)/), // SQLite's words, or PostgreSQL's,
      }),
      expect.objectContaining({
        entity: 'attendee',
        entity_id: block + 990002,
        edge_value: { event: 'attendee.created', data: body.items[1]!.data },
        detail: expect.stringMatching(/^the cloud's store refused it: \w/),
      }),
    ]);
    // Sent again (an answer lost on the way): nothing applied or recorded twice.
    const again = await upload();
    expect(again.body.data).toMatchObject({ accepted: 0, duplicates: 3, refused: 0 });
    expect((await onCloud('GET', '/sync/conflicts?kind=refused_change')).body.meta.total).toBe(2);
  });

  it('keeps a sync token off the rest of the API', async () => {
    const res = await cloud.request('GET', `${P}/attendees`, { token: syncToken });
    expect(res.status).toBe(401);
  });
});
