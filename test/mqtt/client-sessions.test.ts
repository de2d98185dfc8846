import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, createUser, startAppliance, type TestAppliance } from '../helpers/appliance.js';
import {
  closedBy,
  connect,
  inbox,
  mqttUrl,
  readerLogin,
  subscribe,
  type Inbox,
  type ReaderCredentials,
} from '../helpers/mqtt.js';

// MQTT client ids belong to their identity (docs/mqtt.md: "Client ids and
// sessions"). Another identity using a reader's client id neither kicks the reader off nor gets
// its persistent session or queued decisions; the same reader reconnecting takes its own session
// over; each identity has a connection cap, so one token cannot fill the broker. Real `mqtt`
// clients over TCP against a real appliance.

const A = '/api/v1/projects/default/default';
const DECISIONS = 'gatehouse/default/default/readers/+/decisions';

/** Connects; answers the client with CONNACK's session-present flag and an inbox opened before CONNACK (queued messages come right after it). */
function connectWithSession(
  url: string,
  options: IClientOptions,
): Promise<{ client: MqttClient; sessionPresent: boolean; box: Inbox }> {
  return new Promise((resolve, reject) => {
    const c = mqtt.connect(url, { reconnectPeriod: 0, connectTimeout: 5000, protocolVersion: 4, ...options });
    const box = inbox(c);
    c.once('connect', (connack) => resolve({ client: c, sessionPresent: connack.sessionPresent, box }));
    c.once('error', (err) => {
      c.end(true);
      reject(err);
    });
  });
}

describe('MQTT client ids and sessions per identity', () => {
  let gh: TestAppliance;
  let admin: string;
  let api: ReturnType<typeof client>;
  let gate: number;
  let contractor: string; // a read-only token of a staff member of the project
  let outsider: string; // a staff member of no project
  const creds: Record<string, ReaderCredentials> = {};
  const open: MqttClient[] = [];
  const track = <C extends MqttClient>(c: C) => (open.push(c), c);
  const url = () => mqttUrl(gh);
  let n = 0;

  const asReader = (id: string, clientId: string, extra: IClientOptions = {}) => ({
    username: creds[id]!.mqtt.username,
    password: creds[id]!.mqtt.password,
    clientId,
    ...extra,
  });
  /** A scan of this reader over a connection of its own that does not follow its decisions: the decision goes through the broker to whoever does. Answers its request id once acknowledged (the decision is ready then). */
  const scanAside = async (id: string) => {
    const requestId = `aside-${++n}`;
    const c = await connect(url(), asReader(id, `${id}-scanner-${n}`));
    await c.publishAsync(
      creds[id]!.mqtt.scans_topic,
      JSON.stringify({ request_id: requestId, credential_value: 'TICKET-1' }),
      { qos: 1 },
    );
    await c.endAsync();
    return requestId;
  };
  /** A reader connection following its decisions. */
  const readerFollowing = async (id: string, clientId: string, extra: IClientOptions = {}) => {
    const c = track(await connect(url(), asReader(id, clientId, extra)));
    const box = inbox(c);
    expect(await subscribe(c, creds[id]!.mqtt.decisions_topic)).toEqual([1]);
    return { client: c, box };
  };
  /** Connects until admitted, for a connection that is admitted once the broker has seen an earlier one close. */
  const connectOnceFreed = async (options: IClientOptions) => {
    for (let attempt = 0; ; attempt++) {
      try {
        return track(await connect(url(), options));
      } catch (err) {
        if ((err as { code?: number }).code !== 3 || attempt >= 50) throw err;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  };

  beforeAll(async () => {
    gh = await startAppliance({
      GATEHOUSE_READERS_VERIFY_PER_MINUTE: '1000',
      GATEHOUSE_MQTT_RECHECK_INTERVAL_MS: '3600000',
    });
    admin = await gh.token();
    api = client(gh, admin);
    const zone = (await api.post(`${A}/access-zones`, { name: 'Arena' })).body.data.id;
    gate = (await api.post(`${A}/access-points`, { name: 'Gate', access_zone_id: zone, direction: 'both' })).body.data
      .id;
    await api.post(`${A}/attendees/import`, [
      { first_name: 'Ada', last_name: 'Lovelace', credential_value: 'TICKET-1' },
    ]);
    for (const id of ['R-1', 'R-2', 'R-3', 'R-4', 'R-5']) {
      expect((await api.post(`${A}/readers`, { identifier: id, access_point_id: gate })).status).toBe(201);
      creds[id] = await readerLogin(gh, admin, A, id);
    }
    const member = await createUser(gh, admin, 'contractor@example.test', ['access:read']);
    expect((await api.post(`/api/v1/users/${member.id}/teams`, { team_slug: 'default' })).status).toBe(200);
    contractor = member.token;
    outsider = (await createUser(gh, admin, 'outsider@example.test')).token;
  });
  afterAll(async () => {
    for (const c of open) c.end(true);
    await gh.destroy();
  });

  it('keeps a reader connected and answered when a read-only token connects with its client id', async () => {
    const { client: reader, box } = await readerFollowing('R-1', 'door-1');
    let kicked = false;
    reader.on('close', () => (kicked = true));
    for (const clean of [true, false]) {
      const intruder = await connectWithSession(url(), {
        username: 'contractor',
        password: contractor,
        clientId: 'door-1',
        clean,
      });
      track(intruder.client);
      expect(intruder.sessionPresent).toBe(false);
      // The reader still scans and is answered on the connection it had.
      await reader.publishAsync(
        creds['R-1']!.mqtt.scans_topic,
        JSON.stringify({ request_id: `kept-${clean}`, credential_value: 'TICKET-1' }),
        { qos: 1 },
      );
      expect((await box.next((m) => m.payload.request_id === `kept-${clean}`, 5000)).payload).toMatchObject({
        access_granted: true,
      });
      expect(intruder.client.connected).toBe(true); // a connection of its own, beside the reader's
      await intruder.client.endAsync();
    }
    expect(kicked).toBe(false);
    expect(reader.connected).toBe(true);
    expect((await api.get(`${A}/readers/${creds['R-1']!.reader.id}`)).body.data.status).toMatchObject({
      status: 'online',
      connected_via: 'mqtt',
    });
  });

  for (const [who, options] of [
    ['a staff member of no project', () => ({ username: 'outsider', password: outsider })],
    ['another reader', () => asReader('R-3', 'unused')],
    ['a read-only staff member of the project', () => ({ username: 'contractor', password: contractor })],
  ] as const) {
    it(`never resumes a reader's persistent session, nor hands its queued decisions, to ${who}`, async () => {
      const clientId = `door-2-${++n}`;
      const { client: away } = await readerFollowing('R-2', clientId, { clean: false });
      await away.endAsync(); // away, its session kept
      const queued = await scanAside('R-2'); // decided while it is away: queued for its session
      const intruder = await connectWithSession(url(), { ...options(), clientId, clean: false });
      track(intruder.client);
      expect(intruder.sessionPresent).toBe(false);
      // The reader comes back: its session and the decision queued for it are still there.
      const back = await connectWithSession(url(), asReader('R-2', clientId, { clean: false }));
      track(back.client);
      expect(back.sessionPresent).toBe(true);
      expect((await back.box.next((m) => m.payload.request_id === queued, 5000)).payload).toMatchObject({
        access_granted: true,
      });
      expect(intruder.box.messages).toEqual([]);
      expect(intruder.client.connected).toBe(true);
      await Promise.all([intruder.client.endAsync(), back.client.endAsync()]);
    });
  }

  it('lets a reader reconnecting with its own client id take over: the old connection is closed, the new one resumes its session', async () => {
    const { client: old } = await readerFollowing('R-4', 'door-4', { clean: false });
    const closed = closedBy(old, 5000);
    const again = await connectWithSession(url(), asReader('R-4', 'door-4', { clean: false }));
    track(again.client);
    await closed;
    expect(again.sessionPresent).toBe(true);
    // No SUBSCRIBE on the new connection: the session's subscription brings the decisions.
    const requestId = await scanAside('R-4');
    expect((await again.box.next((m) => m.payload.request_id === requestId, 5000)).payload).toMatchObject({
      access_granted: true,
    });
    await again.client.endAsync();
  });

  it('refuses connection N+1 of one identity with CONNACK 3 while other identities still connect', async () => {
    const capped = (await createUser(gh, admin, 'capped@example.test', ['access:read'])).token;
    const staff = (clientId: string) => ({ username: 'capped', password: capped, clientId });
    const four = [];
    for (let i = 1; i <= 4; i++) four.push(track(await connect(url(), staff(`capped-${i}`))));
    await expect(connect(url(), staff('capped-5'))).rejects.toMatchObject({ code: 3 });
    // Another token of the same user is the same identity.
    const second = await gh.token(['read'], 'capped@example.test', 'a long enough password');
    await expect(connect(url(), { username: 'capped', password: second, clientId: 'capped-6' })).rejects.toMatchObject({
      code: 3,
    });
    // Others are not locked out by it.
    track(await connect(url(), { username: 'admin', password: admin, clientId: 'admin-while-capped' }));
    const { client: reader } = await readerFollowing('R-5', 'door-5-a');
    // One of its own client ids takes its connection over: not one more connection.
    const closed = closedBy(four[1]!, 5000);
    track(await connect(url(), staff('capped-2')));
    await closed;
    // One closed: one more is admitted.
    await four[0]!.endAsync();
    await connectOnceFreed(staff('capped-5'));
    await expect(connect(url(), staff('capped-7'))).rejects.toMatchObject({ code: 3 });

    // A reader: two connections at most.
    track(await connect(url(), asReader('R-5', 'door-5-b')));
    await expect(connect(url(), asReader('R-5', 'door-5-c'))).rejects.toMatchObject({ code: 3 });
    expect(reader.connected).toBe(true);
    track(await connect(url(), asReader('R-4', 'door-4-other')));
  });

  it('empties the queue of a staff session dropped because its user lost access while away', async () => {
    const user = await createUser(gh, admin, 'leaving@example.test', ['access:read']);
    expect((await api.post(`/api/v1/users/${user.id}/teams`, { team_slug: 'default' })).status).toBe(200);
    const watcher = track(
      await connect(url(), { username: 'leaving', password: user.token, clientId: 'watch-leaving', clean: false }),
    );
    expect(await subscribe(watcher, DECISIONS)).toEqual([1]);
    await watcher.endAsync(); // away, its session kept
    const before = await scanAside('R-1'); // queued for the session while the user still had access
    expect((await api.del(`/api/v1/users/${user.id}/teams/default`)).status).toBe(200);
    const again = await connectWithSession(url(), {
      username: 'leaving',
      password: user.token,
      clientId: 'watch-leaving',
      clean: false,
    });
    track(again.client);
    expect(again.sessionPresent).toBe(false);
    expect(await subscribe(again.client, DECISIONS)).toEqual([128]);
    // A round trip after the SUBACK: anything queued would have come before it.
    const monitor = track(await connect(url(), { username: 'admin', password: admin, clientId: 'monitor-leaving' }));
    const monitorBox = inbox(monitor);
    expect(await subscribe(monitor, DECISIONS)).toEqual([1]);
    const after = await scanAside('R-1');
    await monitorBox.next((m) => m.payload.request_id === after, 5000);
    expect(again.box.messages.map((m) => m.payload.request_id)).not.toContain(before);
    expect(again.box.messages).toEqual([]);
  });

  it('gives a reader made in a deleted reader’s row none of the deleted reader’s session', async () => {
    const old = (await api.post(`${A}/readers`, { identifier: 'R-OLD', access_point_id: gate })).body.data.id as number;
    creds['R-OLD'] = await readerLogin(gh, admin, A, 'R-OLD');
    const { client: away } = await readerFollowing('R-OLD', 'door-old', { clean: false });
    await away.endAsync();
    const queued = await scanAside('R-OLD');
    expect((await api.del(`${A}/readers/${old}`)).status).toBe(204);
    const made = (await api.post(`${A}/readers`, { identifier: 'R-NEW', access_point_id: gate })).body.data
      .id as number;
    expect(made).toBe(old); // SQLite gave the new reader the deleted one's row id
    creds['R-NEW'] = await readerLogin(gh, admin, A, 'R-NEW');
    const fresh = await connectWithSession(url(), asReader('R-NEW', 'door-old', { clean: false }));
    track(fresh.client);
    expect(fresh.sessionPresent).toBe(false);
    expect(await subscribe(fresh.client, creds['R-NEW']!.mqtt.decisions_topic)).toEqual([1]);
    const own = await scanAside('R-NEW');
    await fresh.box.next((m) => m.payload.request_id === own, 5000);
    expect(fresh.box.messages.map((m) => m.payload.request_id)).not.toContain(queued);
  });
});
