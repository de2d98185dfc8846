import { readdirSync, symlinkSync } from 'node:fs';
import { connect as netConnect, type Socket } from 'node:net';
import { join } from 'node:path';
import mqttPacket, { type Packet } from 'mqtt-packet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startAppliance, type TestAppliance } from '../helpers/appliance.js';
import {
  connect,
  connectReader,
  inbox,
  mqttPort,
  mqttUrl,
  readerLogin,
  subscribe,
  type ReaderCredentials,
} from '../helpers/mqtt.js';

// How a scan is acknowledged and answered (docs/mqtt.md: acknowledgement and answer): the PUBACK
// only once the decision is durable, in the same write as the decision; a reader's scans keep
// its connection alive; others following the decisions get them, the reader exactly once; a
// scan whose event cannot be written is not acknowledged and its connection is closed.
// The wire is read with a raw TCP client and mqtt-packet's parser, packet by packet and chunk by
// chunk, so what is asserted is what the bytes say.

const A = '/api/v1/projects/default/default';

interface RawClient {
  socket: Socket;
  /** Packets by the TCP read they arrived in. */
  reads: Packet[][];
  send(packet: Packet): void;
  /** The first packet (from the start) matching `where`, waiting for it. */
  next(where: (p: Packet) => boolean, timeoutMs?: number): Promise<Packet>;
  closed: Promise<void>;
  isClosed(): boolean;
}

async function rawConnect(
  gh: TestAppliance,
  creds: ReaderCredentials,
  keepalive = 60,
  subscriptionQos: 0 | 1 = 1,
): Promise<RawClient> {
  const socket = netConnect({ host: '127.0.0.1', port: mqttPort(gh) });
  socket.setNoDelay(true);
  const parser = mqttPacket.parser({ protocolVersion: 4 });
  const reads: Packet[][] = [];
  let current: Packet[] = [];
  const waiters: { where: (p: Packet) => boolean; resolve: (p: Packet) => void }[] = [];
  parser.on('packet', (packet: Packet) => {
    current.push(packet);
    const i = waiters.findIndex((w) => w.where(packet));
    if (i >= 0) waiters.splice(i, 1)[0]!.resolve(packet);
  });
  socket.on('data', (chunk) => {
    current = [];
    reads.push(current);
    parser.parse(chunk);
  });
  let isClosed = false;
  const closed = new Promise<void>((resolve) => socket.once('close', () => ((isClosed = true), resolve())));
  socket.on('error', () => {});
  const raw: RawClient = {
    socket,
    reads,
    send: (packet) => socket.write(mqttPacket.generate(packet)),
    next(where, timeoutMs = 3000) {
      const seen = reads.flat().find(where);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () =>
            reject(
              new Error(
                `no matching packet within ${timeoutMs} ms; got ${JSON.stringify(reads.flat().map((p) => p.cmd))}`,
              ),
            ),
          timeoutMs,
        );
        waiters.push({ where, resolve: (p) => (clearTimeout(timer), resolve(p)) });
      });
    },
    closed,
    isClosed: () => isClosed,
  };
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  raw.send({
    cmd: 'connect',
    protocolId: 'MQTT',
    protocolVersion: 4,
    clean: true,
    clientId: `raw-${creds.reader.identifier}-${Math.random().toString(36).slice(2, 8)}`,
    keepalive,
    username: creds.mqtt.username,
    password: Buffer.from(creds.mqtt.password),
  });
  expect(await raw.next((p) => p.cmd === 'connack')).toMatchObject({ returnCode: 0 });
  raw.send({
    cmd: 'subscribe',
    messageId: 1,
    subscriptions: [{ topic: creds.mqtt.decisions_topic, qos: subscriptionQos }],
  });
  expect(await raw.next((p) => p.cmd === 'suback')).toMatchObject({ granted: [subscriptionQos] });
  return raw;
}

const scanPacket = (creds: ReaderCredentials, messageId: number, requestId: string, credential: string): Packet => ({
  cmd: 'publish',
  topic: creds.mqtt.scans_topic,
  qos: 1,
  messageId,
  retain: false,
  dup: false,
  payload: Buffer.from(JSON.stringify({ request_id: requestId, credential_value: credential, scan_type: 'barcode' })),
});

const decisionOf = (p: Packet) => (p.cmd === 'publish' ? JSON.parse(p.payload.toString()) : null);

describe('acknowledging and answering scans', () => {
  let gh: TestAppliance;
  let staff: string;
  let api: ReturnType<typeof client>;
  let gate: number;
  const eventCount = async () => {
    await gh.app.deps.scans.settled();
    return (await api.get(`${A}/access-events?per_page=1`)).body.meta.total as number;
  };

  beforeAll(async () => {
    // Small journal segments, so one test can make the next segment a full disk.
    gh = await startAppliance({
      GATEHOUSE_READERS_VERIFY_PER_MINUTE: '1000',
      GATEHOUSE_STORE_JOURNAL_SEGMENT_BYTES: '65536',
    });
    staff = await gh.token();
    api = client(gh, staff);
    const zone = (await api.post(`${A}/access-zones`, { name: 'Hall' })).body.data.id;
    gate = (await api.post(`${A}/access-points`, { name: 'Door', access_zone_id: zone, direction: 'both' })).body.data
      .id;
    for (const identifier of ['Q-1', 'Q-2', 'Q-3', 'Q-4', 'Q-5'])
      expect((await api.post(`${A}/readers`, { identifier, access_point_id: gate })).status).toBe(201);
    await api.post(`${A}/attendees/import`, [{ first_name: 'Grace', last_name: 'Hopper', credential_value: 'T-1' }]);
  });
  afterAll(() => gh.destroy());

  it('sends the PUBACK with the decision, in one write, the decision at QoS 1 with a packet id of its own', async () => {
    const creds = await readerLogin(gh, staff, A, 'Q-1');
    const raw = await rawConnect(gh, creds);
    for (let i = 0; i < 5; i++) {
      const messageId = 100 + i;
      raw.send(scanPacket(creds, messageId, `one-write-${i}`, 'T-1'));
      const ack = await raw.next((p) => p.cmd === 'puback' && p.messageId === messageId);
      const read = raw.reads.find((packets) => packets.includes(ack))!;
      // The PUBACK's read holds the decision right after it: they left the box as one buffer.
      const decision = read[read.indexOf(ack) + 1];
      expect(decision, JSON.stringify(raw.reads)).toMatchObject({
        cmd: 'publish',
        topic: creds.mqtt.decisions_topic,
        qos: 1,
      });
      expect(decisionOf(decision!)).toMatchObject({
        request_id: `one-write-${i}`,
        access_granted: true,
        access_point_id: gate,
        attendee: { first_name: 'Grace' },
      });
      const id = (decision as mqttPacket.IPublishPacket).messageId!;
      expect(id).toBeGreaterThan(0);
      raw.send({ cmd: 'puback', messageId: id });
    }
    const ids = raw.reads.flat().flatMap((p) => (p.cmd === 'publish' ? [p.messageId] : []));
    expect(new Set(ids).size).toBe(5);
    raw.socket.end();
    await raw.closed;
  });

  it("splits a reader's bytes into frames itself: a scan in pieces, scans around a PINGREQ in one write, a foreign topic to the ACL", async () => {
    const creds = await readerLogin(gh, staff, A, 'Q-1');
    const raw = await rawConnect(gh, creds);
    const whole = mqttPacket.generate(scanPacket(creds, 300, 'pieces-1', 'T-1'));
    for (const [from, to] of [
      [0, 1],
      [1, 2],
      [2, 30],
      [30, whole.length],
    ] as const) {
      raw.socket.write(whole.subarray(from, to));
      await new Promise((r) => setTimeout(r, 30));
    }
    expect(
      decisionOf(await raw.next((p) => p.cmd === 'publish' && decisionOf(p).request_id === 'pieces-1')),
    ).toMatchObject({ access_point_id: gate });
    raw.socket.write(
      Buffer.concat([
        mqttPacket.generate(scanPacket(creds, 301, 'batch-1', 'T-1')),
        mqttPacket.generate({ cmd: 'pingreq' }),
        mqttPacket.generate(scanPacket(creds, 302, 'batch-2', 'NOBODY')),
      ]),
    );
    await raw.next((p) => p.cmd === 'pingresp');
    for (const id of [301, 302]) await raw.next((p) => p.cmd === 'puback' && p.messageId === id);
    expect(
      decisionOf(await raw.next((p) => p.cmd === 'publish' && decisionOf(p).request_id === 'batch-2')),
    ).toMatchObject({ access_granted: false, reason: 'invalid_credential' });
    // Another reader's scans topic is not this reader's: aedes' ACL refuses it and closes the connection.
    raw.send({
      ...scanPacket(creds, 303, 'foreign-1', 'T-1'),
      topic: 'gatehouse/default/default/readers/Q-2/scans',
    } as Packet);
    await raw.closed;
    expect(raw.reads.flat().some((p) => p.cmd === 'puback' && p.messageId === 303)).toBe(false);
  });

  it('answers a QoS 0 scan without a PUBACK, and at QoS 0 to a reader subscribed at QoS 0', async () => {
    const creds = await readerLogin(gh, staff, A, 'Q-2');
    const raw = await rawConnect(gh, creds, 60, 0);
    raw.send({ ...scanPacket(creds, 0, 'qos0-1', 'T-1'), qos: 0, messageId: undefined } as Packet);
    const decision = await raw.next((p) => p.cmd === 'publish' && decisionOf(p).request_id === 'qos0-1');
    expect(decision).toMatchObject({ qos: 0 });
    raw.send(scanPacket(creds, 77, 'qos1-under-qos0', 'NOBODY'));
    await raw.next((p) => p.cmd === 'puback' && p.messageId === 77);
    expect(await raw.next((p) => p.cmd === 'publish' && decisionOf(p).request_id === 'qos1-under-qos0')).toMatchObject({
      qos: 0,
    });
    expect(raw.reads.flat().filter((p) => p.cmd === 'puback')).toHaveLength(1); // none for the QoS 0 scan
    raw.socket.end();
    await raw.closed;
  });

  it('keeps a reader that only sends scans connected: its scans count as keep-alive traffic, and silence does not', async () => {
    const creds = await readerLogin(gh, staff, A, 'Q-2');
    const raw = await rawConnect(gh, creds, 1); // keep-alive 1 s: the broker closes after 1.5 s of silence
    const start = Date.now();
    let n = 0;
    while (Date.now() - start < 2600) {
      raw.send(scanPacket(creds, 1000 + n, `alive-${n}`, 'NOBODY'));
      await raw.next((p) => p.cmd === 'puback' && p.messageId === 1000 + n);
      n++;
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(raw.isClosed()).toBe(false);
    expect(n).toBeGreaterThan(8);
    // Then nothing at all (no PUBACKs, no PINGREQ): the keep-alive closes it.
    const quiet = Date.now();
    await raw.closed;
    expect(Date.now() - quiet).toBeGreaterThan(900);
  });

  it('also answers whoever else follows the decisions (staff, another connection of the reader), the reader once', async () => {
    const creds = await readerLogin(gh, staff, A, 'Q-3');
    const raw = await rawConnect(gh, creds);
    const twin = await connectReader(gh, creds); // a second connection with the same credentials
    const monitor = await connect(mqttUrl(gh), { username: 'staff', password: staff, clientId: 'monitor-q3' });
    const watched = inbox(monitor);
    expect(await subscribe(monitor, 'gatehouse/default/default/readers/+/decisions')).toEqual([1]);
    raw.send(scanPacket(creds, 7, 'followed-1', 'T-1'));
    await raw.next((p) => p.cmd === 'puback' && p.messageId === 7);
    expect((await watched.next((m) => m.payload.request_id === 'followed-1')).topic).toBe(creds.mqtt.decisions_topic);
    expect((await twin.inbox.next((m) => m.payload.request_id === 'followed-1')).payload.access_point_id).toBe(gate);
    await new Promise((r) => setTimeout(r, 200)); // anything twice would have arrived by now
    expect(
      raw.reads.flat().filter((p) => p.cmd === 'publish' && decisionOf(p).request_id === 'followed-1'),
    ).toHaveLength(1);
    expect(watched.messages.filter((m) => m.payload.request_id === 'followed-1')).toHaveLength(0);
    monitor.end(true);
    twin.client.end(true);
    raw.socket.end();
  });

  it('acknowledges a scan sent before its CONNACK was read and answered at once (a retry): aedes has not marked the connection connected yet', async () => {
    // Issue 22, item 2: mosquitto_pub repeating a request_id got no PUBACK for minutes. Its scan
    // arrived between the CONNACK and the end of aedes' connect series, was answered from the
    // request-id window at once, and its PUBACK was dropped as "not connected". MQTT 3.1.1
    // (3.1.4) lets a client send before the CONNACK: the scan is sent here while the broker
    // registers the client, so it is read just after the CONNACK goes out.
    const creds = await readerLogin(gh, staff, A, 'Q-5');
    const first = await rawConnect(gh, creds);
    first.send(scanPacket(creds, 1, 'early-1', 'T-1'));
    const decided = decisionOf(await first.next((p) => p.cmd === 'publish'));
    first.socket.end();
    await first.closed;
    for (let attempt = 0; attempt < 3; attempt++) {
      const socket = netConnect({ host: '127.0.0.1', port: mqttPort(gh) });
      socket.setNoDelay(true);
      socket.on('error', () => {});
      const parser = mqttPacket.parser({ protocolVersion: 4 });
      const got: Packet[] = [];
      parser.on('packet', (p: Packet) => got.push(p));
      socket.on('data', (chunk) => parser.parse(chunk));
      await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
      const clientId = `early-${attempt}`;
      const registering = (c: { id: string }) => {
        // The broker names a client <identity>/<client id> (docs/security.md, attack 4: client-sessions.ts).
        if (!c.id.endsWith(`/${clientId}`)) return;
        gh.app.mqtt.aedes.off('client', registering);
        socket.write(mqttPacket.generate(scanPacket(creds, 7, 'early-1', 'T-1')));
      };
      gh.app.mqtt.aedes.on('client', registering);
      socket.write(
        mqttPacket.generate({
          cmd: 'connect',
          protocolId: 'MQTT',
          protocolVersion: 4,
          clean: true,
          clientId,
          keepalive: 60,
          username: creds.mqtt.username,
          password: Buffer.from(creds.mqtt.password),
        }),
      );
      await expect.poll(() => got.map((p) => p.cmd), { timeout: 5000 }).toEqual(['connack', 'puback']);
      expect(got[1]).toMatchObject({ messageId: 7 });
      socket.destroy();
    }
    expect(decided).toMatchObject({ request_id: 'early-1', access_granted: true });
  });

  it('does not acknowledge a scan whose access event cannot be written, and closes the connection so it is sent again', async () => {
    const creds = await readerLogin(gh, staff, A, 'Q-4');
    const raw = await rawConnect(gh, creds);
    // The journal's next segment is a full disk; fill the current one until it rotates there.
    const dir = join(gh.dataDir, 'journal');
    const current = readdirSync(dir).sort().at(-1)!;
    const next = `events-${String(Number(/\d+/.exec(current)![0]) + 1).padStart(10, '0')}.jsonl`;
    symlinkSync('/dev/full', join(dir, next));
    // Scans over REST until one fails: the journal rotated onto the full disk.
    let refused: { status: number; body: unknown } | null = null;
    for (let i = 0; i < 2000 && !refused; i++) {
      const res = await api.post(`${A}/access-points/${gate}/scan`, {
        credential_value: 'NOBODY',
        request_id: `fill-${i}`,
      });
      if (res.status >= 300) refused = res;
    }
    expect(refused?.status).toBe(500);
    const before = await eventCount();
    raw.send(scanPacket(creds, 42, 'lost-1', 'T-1'));
    await raw.closed;
    expect(raw.reads.flat().some((p) => p.cmd === 'puback' && p.messageId === 42)).toBe(false);
    expect(raw.reads.flat().some((p) => p.cmd === 'publish')).toBe(false);
    expect(await eventCount()).toBe(before);
  });
});
