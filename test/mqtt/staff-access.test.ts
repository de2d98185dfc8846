import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';
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

// A staff MQTT subscription ends when the access it relied on does (docs/security.md, attack 1;
// docs/mqtt.md: "When access ends"): a membership removed, a user deactivated, a token revoked
// disconnect the client at once, and a persistent session (clean=false) keeps no subscription
// the user may no longer have, so nothing is queued for it. The periodic re-check is the
// backstop; it is turned off here (an hour), so what these tests see is event-driven.

const A = '/api/v1/projects/default/default';
const T = 'gatehouse/default/default';
const DECISIONS = `${T}/readers/+/decisions`;

/** Connects and answers the client with CONNACK's session-present flag. */
function connectWithSession(
  url: string,
  options: IClientOptions,
): Promise<{ client: MqttClient; sessionPresent: boolean }> {
  return new Promise((resolve, reject) => {
    const c = mqtt.connect(url, { reconnectPeriod: 0, connectTimeout: 3000, protocolVersion: 4, ...options });
    c.once('connect', (connack) => resolve({ client: c, sessionPresent: connack.sessionPresent }));
    c.once('error', (err) => {
      c.end(true);
      reject(err);
    });
  });
}

describe('staff MQTT sessions when access ends', () => {
  let gh: TestAppliance;
  let api: ReturnType<typeof client>;
  let r1: ReaderCredentials;
  let reader: MqttClient;
  let readerBox: ReturnType<typeof inbox>;
  let monitor: MqttClient;
  let monitorBox: ReturnType<typeof inbox>;
  let n = 0;
  const open: MqttClient[] = [];
  const track = <C extends MqttClient>(c: C) => (open.push(c), c);

  const member = async (email: string, scopes = ['access:read']) => {
    const user = await createUser(gh, await gh.token(), email, scopes);
    expect((await api.post(`/api/v1/users/${user.id}/teams`, { team_slug: 'default' })).status).toBe(200);
    return user;
  };
  /** A reader scan; resolves with its request id once the reader and the administrator's monitor have its decision. */
  const scan = async () => {
    const requestId = `scan-${++n}`;
    await reader.publishAsync(
      r1.mqtt.scans_topic,
      JSON.stringify({ request_id: requestId, credential_value: 'TICKET-1' }),
      { qos: 1 },
    );
    await readerBox.next((m) => m.payload.request_id === requestId);
    await monitorBox.next((m) => m.payload.request_id === requestId);
    return requestId;
  };
  const watcher = async (token: string, clientId: string) => {
    const c = track(await connect(mqttUrl(gh), { username: 'staff', password: token, clientId, clean: false }));
    const box = inbox(c);
    expect(await subscribe(c, DECISIONS)).toEqual([1]);
    const seen = await scan();
    await box.next((m) => m.payload.request_id === seen);
    return { client: c, box };
  };

  beforeAll(async () => {
    gh = await startAppliance({ GATEHOUSE_MQTT_RECHECK_INTERVAL_MS: '3600000' });
    const admin = await gh.token();
    api = client(gh, admin);
    const zone = (await api.post(`${A}/access-zones`, { name: 'Arena' })).body.data.id;
    const gate = (await api.post(`${A}/access-points`, { name: 'Gate', access_zone_id: zone, direction: 'both' })).body
      .data.id;
    await api.post(`${A}/readers`, { identifier: 'R-1', access_point_id: gate });
    await api.post(`${A}/attendees/import`, [
      { first_name: 'Ada', last_name: 'Lovelace', credential_value: 'TICKET-1' },
    ]);
    r1 = await readerLogin(gh, admin, A, 'R-1');
    ({ client: reader, inbox: readerBox } = await connectReader(gh, r1));
    track(reader);
    monitor = track(await connect(mqttUrl(gh), { username: 'admin', password: admin }));
    monitorBox = inbox(monitor);
    expect(await subscribe(monitor, DECISIONS)).toEqual([1]);
  });
  afterAll(async () => {
    for (const c of open) c.end(true);
    await gh.destroy();
  });

  it('disconnects a staff subscriber at once when their membership is removed, and keeps nothing of their persistent session', async () => {
    const user = await member('removed@example.test');
    const { client: c, box } = await watcher(user.token, 'watch-removed');
    const closed = closedBy(c, 5000);
    expect((await api.del(`/api/v1/users/${user.id}/teams/default`)).status).toBe(200);
    await closed;
    const away = await scan(); // decided while the staff client is away
    // The token still works, so it connects again with its client id: the session is gone (no
    // subscription kept, nothing queued), and the filter is refused now.
    const again = await connectWithSession(mqttUrl(gh), {
      username: 'staff',
      password: user.token,
      clientId: 'watch-removed',
      clean: false,
    });
    track(again.client);
    const againBox = inbox(again.client);
    expect(again.sessionPresent).toBe(false);
    expect(await subscribe(again.client, DECISIONS)).toEqual([128]);
    await scan();
    expect([...box.messages, ...againBox.messages].some((m) => m.payload.request_id === away)).toBe(false);
  });

  it('drops the persistent session of a staff member who is away when their membership is removed: nothing decided after is queued for them', async () => {
    const user = await member('away@example.test');
    const { client: c } = await watcher(user.token, 'watch-away');
    await c.endAsync(); // away, the session kept (clean: false)
    expect((await api.del(`/api/v1/users/${user.id}/teams/default`)).status).toBe(200);
    const after = await scan();
    const again = await connectWithSession(mqttUrl(gh), {
      username: 'staff',
      password: user.token,
      clientId: 'watch-away',
      clean: false,
    });
    track(again.client);
    const box = inbox(again.client);
    expect(again.sessionPresent).toBe(false);
    expect(await subscribe(again.client, DECISIONS)).toEqual([128]);
    await scan();
    expect(box.messages.some((m) => m.payload.request_id === after)).toBe(false);
  });

  it('disconnects a staff subscriber at once when the user is deactivated, and refuses the token at CONNECT after', async () => {
    const user = await member('deactivated@example.test');
    const { client: c, box } = await watcher(user.token, 'watch-deactivated');
    const closed = closedBy(c, 5000);
    expect((await api.put(`/api/v1/users/${user.id}`, { is_active: false })).status).toBe(200);
    await closed;
    const after = await scan();
    expect(box.messages.some((m) => m.payload.request_id === after)).toBe(false);
    await expect(
      connect(mqttUrl(gh), { username: 'staff', password: user.token, clientId: 'watch-deactivated', clean: false }),
    ).rejects.toMatchObject({ code: 4 });
  });

  it('disconnects a staff subscriber at once when its token is revoked, and not the same user on another token', async () => {
    const user = await member('revoked@example.test');
    const other = await gh.token(['access:read'], 'revoked@example.test', 'a long enough password');
    const { client: doomed } = await watcher(user.token, 'watch-revoked');
    const { client: kept, box: keptBox } = await watcher(other, 'watch-kept');
    const closed = closedBy(doomed, 5000);
    expect((await gh.request('DELETE', '/api/v1/auth/token', { token: user.token })).status).toBe(200);
    await closed;
    const after = await scan();
    await keptBox.next((m) => m.payload.request_id === after);
    expect(kept.connected).toBe(true);
  });

  it('disconnects a demoted administrator who followed a project only as an administrator', async () => {
    const user = await createUser(gh, await gh.token(), 'demoted@example.test', ['access:read']);
    expect((await api.put(`/api/v1/users/${user.id}`, { is_admin: true })).status).toBe(200);
    const { client: c } = await watcher(user.token, 'watch-demoted');
    const closed = closedBy(c, 5000);
    expect((await api.put(`/api/v1/users/${user.id}`, { is_admin: false })).status).toBe(200);
    await closed;
    expect(monitor.connected).toBe(true);
  });
});
