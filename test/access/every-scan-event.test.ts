import type { MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { connectReader, type Inbox, readerLogin } from '../helpers/mqtt.js';
import { type RawClient, rawClient, subscribeAs, wsUrl } from '../helpers/pusher.js';
import { type Receiver, startReceiver } from '../helpers/receiver.js';
import { signedPoster } from '../helpers/signed-webhooks.js';

// Every scan has a decision and an event (spec: What the service does, item 3: "Each result
// produces an event"; docs/engine.md). A scan at an inactive access point, or at one that leads
// into no zone, is answered in the access-event reply's shape (denied, `not_authorized`, its
// `reason_detail` naming the cause), stored with no zone, and announced like any other denial:
// over REST, MQTT and the access-event webhook alike. Everything that reads events copes with
// the missing zone: occupancy, analytics, the listing and its CSV, the live and webhook payloads.

const A = '/api/v1/projects/default/default';
const ACCESS = 'private-dashboard.project.default.access';

describe('every scan has a decision and an event, also at a door that cannot admit', () => {
  let gh: TestAppliance;
  let token: string;
  let api: ReturnType<typeof client>;
  let receiver: Receiver;
  let socket: RawClient;
  let gateway: ReturnType<typeof signedPoster>;
  let reader: { client: MqttClient; inbox: Inbox; scansTopic: string };
  const ids: Record<string, number> = {};

  const scan = async (point: number, value: string, extra: Record<string, unknown> = {}) => {
    const res = await api.post(`${A}/access-points/${point}/scan`, {
      credential_value: value,
      scan_type: 'qr',
      ...extra,
    });
    expect(res.status, res.text).toBe(200);
    return res.body;
  };
  const mqttScan = async (value: string, request_id: string) => {
    reader.client.publish(reader.scansTopic, JSON.stringify({ request_id, credential_value: value }), { qos: 1 });
    return (await reader.inbox.next((m) => m.payload.request_id === request_id, 5000)).payload;
  };
  const events = async (query = '') =>
    (await api.get(`${A}/access-events?per_page=100${query}`)).body.data as Record<string, unknown>[];
  const eventOf = async (uuid: string) => (await events()).find((e) => e.uuid === uuid);
  const deniedFrame = async (value: string) => {
    for (;;) {
      const frame = await socket.next('AccessDenied', 5000);
      if (frame.data.credential_value === value) return frame.data;
    }
  };
  const hookOf = async (uuid: string) => {
    const end = Date.now() + 10_000;
    for (;;) {
      const got = receiver.received.find((r) => r.body.data?.uuid === uuid);
      if (got) return got.body;
      if (Date.now() > end) throw new Error(`no webhook for ${uuid}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const count = async (zone: number) => (await api.get(`${A}/access-zones/${zone}`)).body.data.current_count as number;

  beforeAll(async () => {
    gh = await startAppliance({ GATEHOUSE_WEBHOOK_ALLOW_INSECURE: '1' });
    token = await gh.token();
    api = client(gh, token);
    receiver = await startReceiver();
    const projectId = (await api.get(A)).body.data.id;
    expect(
      (
        await api.post('/api/v1/webhook/subscribe', {
          url: receiver.url,
          events: ['access.granted', 'access.denied'],
          project_id: projectId,
        })
      ).status,
    ).toBe(201);
    socket = await rawClient(wsUrl(gh));
    expect((await subscribeAs(gh, socket, { token }, ACCESS)).event).toBe('pusher_internal:subscription_succeeded');
    gateway = signedPoster(gh, token, 'access-event');
    ids.hall = (await api.post(`${A}/access-zones`, { name: 'Hall' })).body.data.id;
    ids.open = (await api.post(`${A}/access-points`, { name: 'Hall in', access_zone_id: ids.hall })).body.data.id;
    ids.closed = (
      await api.post(`${A}/access-points`, { name: 'Side door', access_zone_id: ids.hall, is_active: false })
    ).body.data.id;
    ids.nowhere = (await api.post(`${A}/access-points`, { name: 'Unfinished door' })).body.data.id;
    expect(
      (await api.post(`${A}/readers`, { identifier: 'SIDE-1', type: 'qr', access_point_id: ids.closed })).status,
    ).toBe(201);
    expect(
      (await api.post(`${A}/readers`, { identifier: 'NOWHERE-1', type: 'qr', access_point_id: ids.nowhere })).status,
    ).toBe(201);
    expect((await api.post(`${A}/readers`, { identifier: 'SPARE-1', type: 'qr' })).status).toBe(201);
    const imported = await api.post(`${A}/attendees/import`, [
      { first_name: 'Ada', last_name: 'Lovelace', credential_value: 'T-1' },
      { first_name: 'Bo', last_name: 'Diddley', credential_value: 'T-2' },
    ]);
    expect(imported.status, imported.text).toBe(200);
    const creds = await readerLogin(gh, token, A, 'SIDE-1');
    reader = { ...(await connectReader(gh, creds)), scansTopic: creds.mqtt.scans_topic };
    // Ada is inside the hall: a scan at a door that cannot admit must not move her.
    expect((await scan(ids.open!, 'T-1')).access_granted).toBe(true);
  });
  afterAll(async () => {
    reader?.client.end(true);
    socket?.ws.close();
    await receiver?.close();
    await gh?.destroy();
  });

  it('answers a REST scan at an inactive door in the reply shape, stores its event with no zone, and announces it', async () => {
    const res = await scan(ids.closed!, 'T-2');
    expect(res).toEqual({
      success: true,
      access_granted: false,
      reason: 'not_authorized',
      reason_detail: 'access_point_inactive',
      attendee: { id: expect.any(Number), first_name: 'Bo', last_name: 'Diddley' },
      event_id: expect.any(String),
    });
    expect(await eventOf(res.event_id)).toMatchObject({
      access_point_id: ids.closed,
      access_zone_id: null,
      granted: false,
      reason: 'not_authorized',
      reason_detail: 'access_point_inactive',
      movement: null,
      source: 'api',
      credential_value: 'T-2',
    });
    expect(await deniedFrame('T-2')).toEqual({
      credential_value: 'T-2',
      access_point_id: ids.closed,
      reason: 'not_authorized',
      reason_detail: 'access_point_inactive',
      timestamp: expect.any(String),
    });
    expect(await hookOf(res.event_id)).toMatchObject({
      event: 'access.denied',
      data: { access_point_id: ids.closed, reason: 'not_authorized', reason_detail: 'access_point_inactive' },
    });
  });

  it('answers a REST scan at a door leading into no zone likewise, with reason_detail access_point_without_zone, also for an unknown credential', async () => {
    const res = await scan(ids.nowhere!, 'NOT-A-TICKET');
    expect(res).toEqual({
      success: true,
      access_granted: false,
      reason: 'not_authorized',
      reason_detail: 'access_point_without_zone',
      attendee: null,
      event_id: expect.any(String),
    });
    expect(await eventOf(res.event_id)).toMatchObject({
      access_point_id: ids.nowhere,
      access_zone_id: null,
      reason: 'not_authorized',
      reason_detail: 'access_point_without_zone',
      attendee_id: null,
    });
    expect((await deniedFrame('NOT-A-TICKET')).reason_detail).toBe('access_point_without_zone');
    expect((await hookOf(res.event_id)).data).toMatchObject({
      reason: 'not_authorized',
      reason_detail: 'access_point_without_zone',
    });
  });

  it('answers an MQTT scan at an inactive door with a decision on its decisions topic (not an error), once per request_id', async () => {
    const decision = await mqttScan('T-1', 'side-1');
    expect(decision).toEqual({
      request_id: 'side-1',
      access_granted: false,
      reason: 'not_authorized',
      reason_detail: 'access_point_inactive',
      attendee: { id: expect.any(Number), first_name: 'Ada', last_name: 'Lovelace' },
      access_point_id: ids.closed,
      decided_at: expect.any(String),
      event_id: expect.any(String),
    });
    const replayed = await mqttScan('T-1', 'side-1');
    expect(replayed).toMatchObject({
      event_id: decision.event_id,
      reason: 'not_authorized',
      reason_detail: 'access_point_inactive',
    });
    expect((await events()).filter((e) => e.uuid === decision.event_id)).toHaveLength(1);
    expect(await eventOf(decision.event_id)).toMatchObject({
      source: 'mqtt',
      access_zone_id: null,
      reader_id: expect.any(Number),
      reason_detail: 'access_point_inactive',
    });
    expect((await deniedFrame('T-1')).reason_detail).toBe('access_point_inactive');
  });

  it('answers a webhook scan at a zoneless door in the reply shape, and a retry with its request_id gets the same event', async () => {
    const body = { reader_id: 'NOWHERE-1', credential_value: 'T-2', scan_type: 'qr', request_id: 'gw-7' };
    const res = await gateway(body);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({
      success: true,
      access_granted: false,
      reason: 'not_authorized',
      reason_detail: 'access_point_without_zone',
      attendee: { id: expect.any(Number), first_name: 'Bo', last_name: 'Diddley' },
      event_id: expect.any(String),
    });
    const again = await gateway(body);
    expect(again.body).toEqual(res.body);
    expect(await eventOf(res.body.event_id)).toMatchObject({
      source: 'webhook',
      access_zone_id: null,
      reason_detail: 'access_point_without_zone',
    });
    expect((await hookOf(res.body.event_id)).data.reason_detail).toBe('access_point_without_zone');
  });

  it('moves no one and counts nothing: occupancy, the zone filter and analytics take the zoneless denials as denials at their doors', async () => {
    expect(await count(ids.hall!)).toBe(1); // Ada, still inside since her grant
    expect((await events(`&access_zone_id=${ids.hall}`)).every((e) => e.access_zone_id === ids.hall)).toBe(true);
    expect(
      (await events('&result=denied')).every((e) => e.access_zone_id === null && e.reason === 'not_authorized'),
    ).toBe(true);
    const day = new Date().toISOString().slice(0, 10);
    const summary = (
      await api.post(`${A}/analytics/metrics`, { metric: 'access_summary', start_date: day, end_date: day })
    ).body.data;
    expect(summary).toMatchObject({
      granted: 1,
      denied: 4,
      denied_by_reason: { not_authorized: 4 },
      unique_attendees: 1,
    });
    expect(summary.by_zone).toEqual(
      expect.arrayContaining([
        { access_zone_id: ids.hall, name: 'Hall', granted: 1, denied: 0 },
        { access_zone_id: null, name: null, granted: 0, denied: 4 },
      ]),
    );
    expect(summary.by_access_point).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ access_point_id: ids.closed, denied: 2 }),
        expect.objectContaining({ access_point_id: ids.nowhere, denied: 2 }),
      ]),
    );
    const occupancy = (
      await api.post(`${A}/analytics/metrics`, {
        metric: 'zone_occupancy',
        zone_id: ids.hall,
        start_date: day,
        end_date: day,
        interval: 'day',
      })
    ).body.data;
    expect(occupancy.series.at(-1)).toMatchObject({ entries: 1, exits: 0, occupancy: 1 });
  });

  it('exports reason_detail as the last CSV column, so the columns before it stay where they were', async () => {
    const csv = await fetch(`${gh.url}${A}/access-events?format=csv`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const lines = (await csv.text()).trim().split('\r\n');
    expect(lines[0]).toBe(
      'uuid,scanned_at,decided_at,access_point_id,access_zone_id,reader_id,credential_id,credential_value,attendee_id,granted,reason,movement,source,reason_detail',
    );
    expect(lines.filter((l) => l.endsWith(',access_point_inactive'))).toHaveLength(2);
  });

  it('still refuses what names no door: an unknown access point 404, an unknown reader 404, a reader at no door 409, recording nothing', async () => {
    const before = (await events()).length;
    expect((await api.post(`${A}/access-points/999999/scan`, { credential_value: 'T-1' })).status).toBe(404);
    expect((await gateway({ reader_id: 'NO-SUCH-READER', credential_value: 'T-1' })).status).toBe(404);
    const spare = await gateway({ reader_id: 'SPARE-1', credential_value: 'T-1' });
    expect(spare.status).toBe(409);
    expect(spare.body.error).toBe('reader_unassigned');
    expect((await events()).length).toBe(before);
  });
});
