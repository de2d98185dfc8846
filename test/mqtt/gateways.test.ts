import type { MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { closedBy, connect, connectReader, inbox, mqttUrl, readerLogin, subscribe } from '../helpers/mqtt.js';
import { rawClient, signChannel, wsUrl, type RawClient } from '../helpers/pusher.js';
import { signedPoster } from '../helpers/signed-webhooks.js';

// Gateways (docs/mqtt.md): credentials issued over REST, a retained status with a last will
// that marks them offline, the readers they front, and the mqtt-gateway-status webhook keeping
// the same state; state over REST and as console events on the WebSocket.

const A = '/api/v1/projects/default/default';
const T = 'gatehouse/default/default';
const DEVICES = 'private-console.project.default.devices';

describe('gateways', () => {
  let gh: TestAppliance;
  let staff: string;
  let api: ReturnType<typeof client>;
  let readers: Record<string, number>;
  let console_: RawClient;
  const open: MqttClient[] = [];
  const track = <C extends MqttClient>(c: C) => (open.push(c), c);
  const gatewayWith = async (identifier: string, readerIds: number[]) => {
    const res = await api.post(`${A}/gateways`, { identifier, name: `Gateway ${identifier}`, reader_ids: readerIds });
    expect(res.status).toBe(201);
    return res.body as { data: { id: number; status_topic: string }; token: string };
  };

  beforeAll(async () => {
    gh = await startAppliance();
    staff = await gh.token();
    api = client(gh, staff);
    const zone = (await api.post(`${A}/access-zones`, { name: 'Arena' })).body.data.id;
    const gate = (await api.post(`${A}/access-points`, { name: 'Gate', access_zone_id: zone, direction: 'both' })).body
      .data.id;
    readers = {};
    for (const identifier of ['GW1-A', 'GW1-B', 'LONE'])
      readers[identifier] = (await api.post(`${A}/readers`, { identifier, access_point_id: gate })).body.data.id;
    await api.post(`${A}/attendees/import`, [
      { first_name: 'Ada', last_name: 'Lovelace', credential_value: 'TICKET-1' },
      { first_name: 'Alan', last_name: 'Turing', credential_value: 'TICKET-2' },
    ]);
    console_ = await rawClient(wsUrl(gh));
    await console_.subscribe(DEVICES, signChannel(gh, console_.socketId, DEVICES));
  });
  afterAll(async () => {
    for (const c of open) c.end(true);
    console_.ws.close();
    await gh.destroy();
  });

  it('validates gateways: identifier taken, unknown readers, abilities', async () => {
    await gatewayWith('GW-CHECK', []);
    const taken = await api.post(`${A}/gateways`, { identifier: 'GW-CHECK' });
    expect(taken.status).toBe(422);
    expect(taken.body.errors).toEqual({ identifier: ['The identifier has already been taken.'] });
    const unknown = await api.post(`${A}/gateways`, { identifier: 'GW-X', reader_ids: [999999] });
    expect(unknown.body.errors.reader_ids[0]).toMatch(/999999/);
    expect((await api.post(`${A}/gateways`, { identifier: 'bad id/with slash' })).status).toBe(422);
    expect(
      (
        await gh.request('POST', `${A}/gateways`, {
          token: await gh.token(['access:read']),
          body: { identifier: 'GW-Y' },
        })
      ).status,
    ).toBe(401);
    expect(
      (await api.get(`${A}/gateways?per_page=100`)).body.data.map((g: { identifier: string }) => g.identifier),
    ).toEqual(['GW-CHECK']);
  });

  it('takes a retained status, fronts its readers only, and goes offline by its last will', async () => {
    const gw = await gatewayWith('GW-1', [readers['GW1-A']!, readers['GW1-B']!]);
    expect(gw.data.status_topic).toBe(`${T}/gateways/GW-1/status`);
    expect(gw.token).toMatch(/^gateway:\d+:/);
    const gateway = track(
      await connect(mqttUrl(gh), {
        username: 'GW-1',
        password: gw.token,
        will: { topic: gw.data.status_topic, payload: Buffer.from('offline'), qos: 1, retain: true },
      }),
    );
    const box = inbox(gateway);
    const report = {
      gateway_id: 'GW-1',
      status: 'online',
      readers: [
        { reader_id: 'GW1-A', status: 'connected', last_scan: '2026-11-23T11:00:00Z' },
        { reader_id: 'GW1-B', status: 'connected', last_scan: null },
      ],
      timestamp: '2026-11-23T11:00:05Z',
    };
    await gateway.publishAsync(gw.data.status_topic, JSON.stringify(report), { qos: 1, retain: true });
    const online = await console_.next('GatewayOnline');
    expect(online.data).toMatchObject({ id: gw.data.id, identifier: 'GW-1', status: 'online' });
    const shown = (await api.get(`${A}/gateways/${gw.data.id}`)).body.data;
    expect(shown).toMatchObject({
      identifier: 'GW-1',
      status: 'online',
      reader_ids: [readers['GW1-A'], readers['GW1-B']],
      last_report: { gateway_id: 'GW-1', status: 'online', readers: report.readers },
    });
    expect(Date.parse(shown.last_seen)).toBeGreaterThan(Date.now() - 10_000);
    const readerA = (await api.get(`${A}/readers/${readers['GW1-A']}`)).body.data;
    expect(readerA).toMatchObject({
      gateway_id: gw.data.id,
      status: {
        status: 'online',
        connected_via: 'gateway',
        gateway_status: 'connected',
        last_scan: '2026-11-23T11:00:00.000Z',
      },
    });
    expect((await console_.next('ReaderStatusChanged')).data).toMatchObject({
      status: 'online',
      connected_via: 'gateway',
    });

    // Staff see the retained status when they subscribe.
    const monitor = track(await connect(mqttUrl(gh), { username: 'staff', password: staff }));
    const watched = inbox(monitor);
    expect(await subscribe(monitor, `${T}/gateways/+/status`)).toEqual([1]);
    expect((await watched.next()).payload).toMatchObject({ gateway_id: 'GW-1', status: 'online' });

    // It scans for its readers and hears only their decisions, though subscribed to readers/+.
    expect(await subscribe(gateway, [`${T}/readers/+/decisions`, `${T}/readers/LONE/decisions`])).toEqual([1, 128]);
    const lone = await readerLogin(gh, staff, A, 'LONE');
    // Without the OTP: only REST with access:write shows it (docs/security.md, attack 2).
    expect((await console_.next('ReaderLoginRequested')).data).toEqual({
      reader_id: readers.LONE,
      reader_identifier: 'LONE',
      expires_at: expect.any(String),
    });
    const { client: loneReader, inbox: loneBox } = await connectReader(gh, lone);
    track(loneReader);
    await loneReader.publishAsync(
      lone.mqtt.scans_topic,
      JSON.stringify({ request_id: 'lone-1', credential_value: 'TICKET-2' }),
      { qos: 1 },
    );
    await loneBox.next((m) => m.payload.request_id === 'lone-1');
    await gateway.publishAsync(
      `${T}/readers/GW1-B/scans`,
      JSON.stringify({ request_id: 'gw-1', credential_value: 'TICKET-1' }),
      { qos: 1 },
    );
    const decision = await box.next((m) => m.payload.request_id === 'gw-1');
    expect(decision.topic).toBe(`${T}/readers/GW1-B/decisions`);
    expect(decision.payload.access_granted).toBe(true);
    expect(box.messages.some((m) => m.payload.request_id === 'lone-1')).toBe(false);
    const event = (await api.get(`${A}/access-events`)).body.data[0];
    expect(event).toMatchObject({ source: 'mqtt', reader_id: readers['GW1-B'] });

    // Publishing for a reader it does not front disconnects it; the last will marks it offline.
    const closed = closedBy(gateway);
    gateway.publish(`${T}/readers/LONE/scans`, JSON.stringify({ request_id: 'nope', credential_value: 'TICKET-1' }), {
      qos: 1,
    });
    await closed;
    const offline = await console_.next('GatewayOffline');
    expect(offline.data).toMatchObject({ identifier: 'GW-1', status: 'offline' });
    expect((await api.get(`${A}/gateways/${gw.data.id}`)).body.data.status).toBe('offline');
    expect((await api.get(`${A}/readers/${readers['GW1-A']}`)).body.data.status).toMatchObject({
      status: 'offline',
      gateway_status: 'offline',
    });
    expect((await watched.next((m) => m.payload === 'offline')).topic).toBe(`${T}/gateways/GW-1/status`);
  });

  it('keeps the same state from the mqtt-gateway-status webhook, and answers bad reports in the webhook envelope', async () => {
    const gw = await gatewayWith('GW-2', [readers['GW1-A']!]);
    const post = signedPoster(gh, staff, 'gateway-status');
    const ok = await post({
      gateway_id: 'GW-2',
      status: 'online',
      readers: [
        { reader_id: 'GW1-A', status: 'connected', last_scan: '2026-11-23T11:30:00Z' },
        { reader_id: 'GHOST', status: 'connected' },
      ],
      timestamp: '2026-11-23T11:30:01Z',
    });
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ success: true, message: 'Gateway status recorded; unknown reader ids ignored: GHOST.' });
    expect((await console_.next('GatewayOnline')).data).toMatchObject({ identifier: 'GW-2' });
    const shown = (await api.get(`${A}/gateways/${gw.data.id}`)).body.data;
    expect(shown).toMatchObject({ status: 'online', last_report: { status: 'online' } });
    expect((await api.get(`${A}/readers/${readers['GW1-A']}`)).body.data.status).toMatchObject({
      status: 'online',
      last_scan: '2026-11-23T11:30:00.000Z',
    });
    expect((await post({ gateway_id: 'GW-2', status: 'offline', timestamp: 1_795_000_000 })).body.success).toBe(true);
    expect((await console_.next('GatewayOffline')).data).toMatchObject({ identifier: 'GW-2' });

    const unknown = await post({ gateway_id: 'NO-SUCH', status: 'online' });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ error: 'unknown_gateway', message: 'No gateway has the identifier "NO-SUCH".' });
    const bad = await post({ status: 'online', readers: 'all' });
    expect(bad.status).toBe(400);
    expect(Object.keys(bad.body.errors).sort()).toEqual(['gateway_id', 'readers']);
    const json = await post('{"gateway_id":');
    expect(json.status).toBe(400);
    expect(json.body.error).toBe('malformed_json');
  });

  it('cuts a gateway off when its token is rotated or it is deleted', async () => {
    const gw = await gatewayWith('GW-3', []);
    const first = track(await connect(mqttUrl(gh), { username: 'GW-3', password: gw.token }));
    const closed = closedBy(first);
    const rotated = await api.post(`${A}/gateways/${gw.data.id}/token`, {});
    expect(rotated.status).toBe(201);
    await closed;
    expect(
      await connect(mqttUrl(gh), { username: 'GW-3', password: gw.token }).then(
        () => 0,
        (e: { code: number }) => e.code,
      ),
    ).toBe(4);
    const second = track(await connect(mqttUrl(gh), { username: 'GW-3', password: rotated.body.token }));
    const gone = closedBy(second);
    expect((await api.del(`${A}/gateways/${gw.data.id}`)).status).toBe(204);
    await gone;
    expect(
      await connect(mqttUrl(gh), { username: 'GW-3', password: rotated.body.token }).then(
        () => 0,
        (e: { code: number }) => e.code,
      ),
    ).toBe(4);
    expect((await api.get(`${A}/gateways/${gw.data.id}`)).status).toBe(404);
  });
});
