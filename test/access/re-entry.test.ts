import type { MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { connectReader, type Inbox, readerLogin } from '../helpers/mqtt.js';
import { type RawClient, rawClient, subscribeAs, wsUrl } from '../helpers/pusher.js';
import { type Receiver, startReceiver } from '../helpers/receiver.js';

// Re-entry, as a client built from the platform's contract meets it (docs/engine.md; docs/decisions.md:
// "Re-entry and every scan's event"). The contract's checks have no re-entry rule, so a zone lets its
// holder in again unless it asks for anti-passback (`anti_passback` on the zone, off by default).
// A zone that asks for it denies a second entry with the contract's `not_authorized` and says why in
// `reason_detail: "already_inside"`: in the scan's answer (REST and MQTT), the stored access
// event, the real-time AccessDenied and the outgoing access.denied webhook.

const A = '/api/v1/projects/default/default';
const ACCESS = 'private-dashboard.project.default.access';

describe('re-entry: anti-passback is a choice of each zone, off by default', () => {
  let gh: TestAppliance;
  let token: string;
  let api: ReturnType<typeof client>;
  let receiver: Receiver;
  let socket: RawClient;
  let reader: { client: MqttClient; inbox: Inbox; scansTopic: string };
  const ids: Record<string, number> = {};
  let n = 0;

  const scan = async (point: number, value: string) => {
    const res = await api.post(`${A}/access-points/${point}/scan`, { credential_value: value, scan_type: 'qr' });
    expect(res.status, res.text).toBe(200);
    return res.body;
  };
  const mqttScan = async (value: string) => {
    const request_id = `re-entry-${++n}`;
    reader.client.publish(reader.scansTopic, JSON.stringify({ request_id, credential_value: value }), { qos: 1 });
    return (await reader.inbox.next((m) => m.payload.request_id === request_id, 5000)).payload;
  };
  const eventOf = async (uuid: string) => {
    const events = (await api.get(`${A}/access-events?per_page=100`)).body.data as Record<string, unknown>[];
    return events.find((e) => e.uuid === uuid);
  };
  const deniedFrame = async (value: string) => {
    for (;;) {
      const frame = await socket.next('AccessDenied', 5000);
      if (frame.data.credential_value === value) return frame.data;
    }
  };
  const deniedHook = (uuid: string) =>
    until(() => receiver.received.find((r) => r.body.event === 'access.denied' && r.body.data.uuid === uuid));

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
          events: ['access.denied'],
          project_id: projectId,
        })
      ).status,
    ).toBe(201);
    socket = await rawClient(wsUrl(gh));
    expect((await subscribeAs(gh, socket, { token }, ACCESS)).event).toBe('pusher_internal:subscription_succeeded');
    const vipType = (await api.post(`${A}/attendee-types`, { name: 'VIP', slug: 'vip' })).body.data.id;
    await api.post(`${A}/attendee-types`, { name: 'Guest', slug: 'guest' });
    ids.hall = (await api.post(`${A}/access-zones`, { name: 'Hall' })).body.data.id;
    ids.lounge = (
      await api.post(`${A}/access-zones`, { name: 'Lounge', anti_passback: true, requires_ticket: true })
    ).body.data.id;
    await api.put(`${A}/attendee-types/${vipType}`, { zone_ids: [ids.lounge] });
    ids.hallIn = (
      await api.post(`${A}/access-points`, { name: 'Hall in', access_zone_id: ids.hall, direction: 'in' })
    ).body.data.id;
    ids.loungeIn = (
      await api.post(`${A}/access-points`, { name: 'Lounge in', access_zone_id: ids.lounge, direction: 'in' })
    ).body.data.id;
    expect(
      (await api.post(`${A}/readers`, { identifier: 'HALL-1', type: 'qr', access_point_id: ids.hallIn })).status,
    ).toBe(201);
    const imported = await api.post(`${A}/attendees/import`, [
      { first_name: 'Gina', last_name: 'Guest', attendee_type: 'guest', credential_value: 'G-1' },
      { first_name: 'Vic', last_name: 'Vip', attendee_type: 'vip', credential_value: 'V-1' },
    ]);
    expect(imported.status, imported.text).toBe(200);
    const creds = await readerLogin(gh, token, A, 'HALL-1');
    reader = { ...(await connectReader(gh, creds)), scansTopic: creds.mqtt.scans_topic };
  });
  afterAll(async () => {
    reader?.client.end(true);
    socket?.ws.close();
    await receiver?.close();
    await gh?.destroy();
  });

  it('makes a zone without anti-passback unless asked, and shows anti_passback in create, update and show', async () => {
    const hall = (await api.get(`${A}/access-zones/${ids.hall}`)).body.data;
    expect(hall.anti_passback).toBe(false);
    expect((await api.get(`${A}/access-zones/${ids.lounge}`)).body.data.anti_passback).toBe(true);
    const made = await api.post(`${A}/access-zones`, { name: 'Gallery', anti_passback: true });
    expect(made.status).toBe(201);
    expect(made.body.data.anti_passback).toBe(true);
    const changed = await api.put(`${A}/access-zones/${made.body.data.id}`, { anti_passback: false });
    expect(changed.status).toBe(200);
    expect(changed.body.data.anti_passback).toBe(false);
    // A change of something else leaves it as it was.
    expect((await api.put(`${A}/access-zones/${ids.lounge}`, { capacity: 40 })).body.data.anti_passback).toBe(true);
    const listed = (await api.get(`${A}/access-zones`)).body.data as { id: number; anti_passback: boolean }[];
    expect(listed.map((z) => [z.id, z.anti_passback])).toEqual([
      [ids.hall, false],
      [ids.lounge, true],
      [made.body.data.id, false],
    ]);
  });

  it('refuses anti_passback that is not a boolean, with 422 naming the field, and changes nothing', async () => {
    for (const bad of ['yes', 1, null, 'true', {}]) {
      const created = await api.post(`${A}/access-zones`, { name: `Bad ${String(bad)}`, anti_passback: bad });
      expect(created.status, JSON.stringify(bad)).toBe(422);
      expect(created.body.errors.anti_passback, JSON.stringify(bad)).toHaveLength(1);
      const updated = await api.put(`${A}/access-zones/${ids.lounge}`, { anti_passback: bad });
      expect(updated.status, JSON.stringify(bad)).toBe(422);
      expect(updated.body.errors.anti_passback).toHaveLength(1);
    }
    expect((await api.get(`${A}/access-zones/${ids.lounge}`)).body.data.anti_passback).toBe(true);
    expect(((await api.get(`${A}/access-zones`)).body.data as unknown[]).length).toBe(3);
  });

  it('lets a holder in again at a zone without anti-passback: a second and third entry over REST and MQTT are granted', async () => {
    const first = await scan(ids.hallIn!, 'G-1');
    expect(first).toMatchObject({ access_granted: true, attendee: { first_name: 'Gina' } });
    expect(first).not.toHaveProperty('reason_detail');
    expect(await scan(ids.hallIn!, 'G-1')).toMatchObject({ access_granted: true });
    expect(await mqttScan('G-1')).toMatchObject({ access_granted: true });
    // Counted in once: a re-entry does not count the holder twice.
    expect((await api.get(`${A}/access-zones/${ids.hall}`)).body.data.current_count).toBe(1);
    expect(await eventOf(first.event_id)).toMatchObject({ granted: true, reason: null, reason_detail: null });
  });

  it('with anti-passback on, denies a second entry not_authorized with reason_detail already_inside, in the answer, the event, AccessDenied and access.denied', async () => {
    expect(await scan(ids.loungeIn!, 'V-1')).toMatchObject({ access_granted: true });
    const again = await scan(ids.loungeIn!, 'V-1');
    expect(again).toEqual({
      success: true,
      access_granted: false,
      reason: 'not_authorized',
      reason_detail: 'already_inside',
      attendee: { id: expect.any(Number), first_name: 'Vic', last_name: 'Vip' },
      event_id: expect.any(String),
    });
    expect(await eventOf(again.event_id)).toMatchObject({
      granted: false,
      reason: 'not_authorized',
      reason_detail: 'already_inside',
      access_zone_id: ids.lounge,
    });
    expect(await deniedFrame('V-1')).toEqual({
      credential_value: 'V-1',
      access_point_id: ids.loungeIn,
      reason: 'not_authorized',
      reason_detail: 'already_inside',
      timestamp: expect.any(String),
    });
    const hook = await deniedHook(again.event_id);
    expect(hook.body).toMatchObject({
      event: 'access.denied',
      data: {
        uuid: again.event_id,
        reason: 'not_authorized',
        reason_detail: 'already_inside',
        access_point_id: ids.loungeIn,
      },
    });
    // Turned off, the same holder is let in again at once.
    expect((await api.put(`${A}/access-zones/${ids.lounge}`, { anti_passback: false })).status).toBe(200);
    expect(await scan(ids.loungeIn!, 'V-1')).toMatchObject({ access_granted: true });
    expect((await api.put(`${A}/access-zones/${ids.lounge}`, { anti_passback: true })).status).toBe(200);
    expect(await scan(ids.loungeIn!, 'V-1')).toMatchObject({
      access_granted: false,
      reason: 'not_authorized',
      reason_detail: 'already_inside',
    });
  });

  it('names a type the zone does not admit type_not_permitted, and gives every other denial a null reason_detail', async () => {
    const notPermitted = await scan(ids.loungeIn!, 'G-1');
    expect(notPermitted).toMatchObject({
      access_granted: false,
      reason: 'not_authorized',
      reason_detail: 'type_not_permitted',
    });
    expect(await eventOf(notPermitted.event_id)).toMatchObject({
      reason: 'not_authorized',
      reason_detail: 'type_not_permitted',
    });
    expect((await deniedFrame('G-1')).reason_detail).toBe('type_not_permitted');
    const unknown = await scan(ids.hallIn!, 'NOBODY');
    expect(unknown).toEqual({
      success: true,
      access_granted: false,
      reason: 'invalid_credential',
      reason_detail: null,
      attendee: null,
      event_id: expect.any(String),
    });
    expect(await eventOf(unknown.event_id)).toMatchObject({ reason: 'invalid_credential', reason_detail: null });
    expect(await deniedFrame('NOBODY')).toEqual({
      credential_value: 'NOBODY',
      access_point_id: ids.hallIn,
      reason: 'invalid_credential',
      reason_detail: null,
      timestamp: expect.any(String),
    });
    expect((await deniedHook(unknown.event_id)).body.data).toMatchObject({
      reason: 'invalid_credential',
      reason_detail: null,
    });
    const overMqtt = await mqttScan('NOBODY');
    expect(overMqtt).toMatchObject({ access_granted: false, reason: 'invalid_credential', reason_detail: null });
  });
});

async function until<T>(read: () => T | undefined, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = read();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
