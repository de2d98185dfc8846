import type { MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, createUser, startAppliance, type TestAppliance } from '../helpers/appliance.js';
import {
  closedBy,
  connect,
  connectReader,
  inbox,
  mqttUrl,
  readerLogin,
  subscribe,
  type ReaderCredentials,
} from '../helpers/mqtt.js';

// Every ACL refusal of the broker (docs/mqtt.md): CONNACK 4 for bad credentials, SUBACK 0x80
// for forbidden subscriptions, a disconnect for a forbidden publish; staff tokens read-only.

const A = '/api/v1/projects/default/default';
const T = 'gatehouse/default/default';

describe('the broker ACL', () => {
  let gh: TestAppliance;
  let staff: string;
  let api: ReturnType<typeof client>;
  let r1: ReaderCredentials;
  const open: MqttClient[] = [];
  const track = <C extends MqttClient>(c: C) => (open.push(c), c);
  const refusal = (p: Promise<unknown>) =>
    p.then(
      () => null,
      (e: { code?: number }) => e.code,
    );

  beforeAll(async () => {
    gh = await startAppliance({ GATEHOUSE_MQTT_RECHECK_INTERVAL_MS: '200' });
    staff = await gh.token();
    api = client(gh, staff);
    const zone = (await api.post(`${A}/access-zones`, { name: 'Arena' })).body.data.id;
    const gate = (await api.post(`${A}/access-points`, { name: 'Gate', access_zone_id: zone })).body.data.id;
    for (const identifier of ['R-1', 'R-2']) await api.post(`${A}/readers`, { identifier, access_point_id: gate });
    await api.post(`${A}/attendees/import`, [
      { first_name: 'Ada', last_name: 'Lovelace', credential_value: 'TICKET-1' },
    ]);
    r1 = await readerLogin(gh, staff, A, 'R-1');
  });
  afterAll(async () => {
    for (const c of open) c.end(true);
    await gh.destroy();
  });

  it('refuses bad credentials at CONNECT with return code 4, and logs who tried', async () => {
    const url = mqttUrl(gh);
    expect(await refusal(connect(url, {}))).toBe(4);
    expect(
      await refusal(connect(url, { username: 'R-1', password: 'reader:1:not-the-secret-aaaaaaaaaaaaaaaaa' })),
    ).toBe(4);
    expect(await refusal(connect(url, { username: 'R-2', password: r1.reader_token }))).toBe(4); // another reader's name
    expect(await refusal(connect(url, { username: 'x', password: '999|nope' }))).toBe(4);
    const metrics = (await gh.request('GET', '/metrics', { token: staff })).text;
    expect(metrics).toMatch(/gatehouse_mqtt_messages_total\{what="refused_connect"\} 4/);
  });

  it('lets a reader subscribe only to its decisions (0x80 otherwise) and disconnects it for publishing elsewhere', async () => {
    const { client: reader } = await connectReader(gh, r1);
    track(reader);
    expect(
      await subscribe(reader, [
        `${T}/readers/R-2/decisions`,
        `${T}/readers/+/decisions`,
        '#',
        `${T}/readers/R-1/scans`,
        '$SYS/#',
      ]),
    ).toEqual([128, 128, 128, 128, 128]);
    expect(reader.connected).toBe(true); // a refused subscription keeps the connection
    const closed = closedBy(reader);
    reader.publish(`${T}/readers/R-2/scans`, JSON.stringify({ request_id: 'x', credential_value: 'TICKET-1' }), {
      qos: 1,
    });
    await closed;
    const events = (await api.get(`${A}/access-events`)).body.meta.total;
    expect(events).toBe(0);
    // An unknown topic is refused the same way.
    const { client: again } = await connectReader(gh, r1);
    track(again);
    const closedAgain = closedBy(again);
    again.publish('somewhere/else', 'hello', { qos: 0 });
    await closedAgain;
    const metrics = (await gh.request('GET', '/metrics', { token: staff })).text;
    expect(metrics).toMatch(/gatehouse_mqtt_messages_total\{what="refused_publish"\} 2/);
    expect(metrics).toMatch(/gatehouse_mqtt_messages_total\{what="refused_subscribe"\} 5/);
  });

  it('lets staff with access:read follow a project decision stream read-only, and no one else', async () => {
    const monitor = track(
      await connect(mqttUrl(gh), { username: 'monitor', password: await gh.token(['access:read']) }),
    );
    const box = inbox(monitor);
    expect(
      await subscribe(monitor, [
        `${T}/readers/+/decisions`,
        `${T}/gateways/+/status`,
        `${T}/readers/+/scans`,
        'gatehouse/default/other/readers/+/decisions',
      ]),
    ).toEqual([1, 1, 128, 128]);
    const { client: reader } = await connectReader(gh, r1);
    track(reader);
    await reader.publishAsync(
      r1.mqtt.scans_topic,
      JSON.stringify({ request_id: 'watch-1', credential_value: 'TICKET-1' }),
      { qos: 1 },
    );
    const seen = await box.next((m) => m.payload.request_id === 'watch-1');
    expect(seen.topic).toBe(`${T}/readers/R-1/decisions`);
    expect(seen.payload.access_granted).toBe(true);

    // A token without the ability, and a user who cannot reach the project, subscribe to nothing.
    const narrow = track(
      await connect(mqttUrl(gh), { username: 'narrow', password: await gh.token(['attendees:read']) }),
    );
    expect(await subscribe(narrow, `${T}/readers/+/decisions`)).toEqual([128]);
    const outsider = await createUser(gh, staff, 'outsider@example.test', ['*']);
    const other = track(await connect(mqttUrl(gh), { username: 'outsider', password: outsider.token }));
    expect(await subscribe(other, `${T}/readers/+/decisions`)).toEqual([128]);

    // Staff publish nothing.
    const closed = closedBy(monitor);
    monitor.publish(r1.mqtt.scans_topic, JSON.stringify({ request_id: 'forged', credential_value: 'TICKET-1' }), {
      qos: 1,
    });
    await closed;
  });

  it('disconnects a staff connection whose API token is revoked, or whose user is deactivated', async () => {
    const token = await gh.token(['access:read']);
    const monitor = track(await connect(mqttUrl(gh), { username: 'monitor', password: token }));
    const revoked = closedBy(monitor, 5000);
    expect((await gh.request('DELETE', '/api/v1/auth/token', { token })).status).toBe(200);
    await revoked;
    const sam = await createUser(gh, staff, 'sam@example.test', ['*']);
    const samClient = track(await connect(mqttUrl(gh), { username: 'sam', password: sam.token }));
    const deactivated = closedBy(samClient, 5000);
    expect((await api.put(`/api/v1/users/${sam.id}`, { is_active: false })).status).toBe(200);
    await deactivated;
  });
});
