import { once } from 'node:events';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { Aedes, type Client } from 'aedes';
import mqtt, { type MqttClient } from 'mqtt';
import { afterEach, describe, expect, it } from 'vitest';
import {
  aedesVersion,
  AEDES_WRITTEN_AGAINST,
  beginReadBatch,
  checkAedesShape,
  connackSent,
  endReadBatch,
  keptAlive,
  nextMessageId,
  parserOf,
  sessionStoreOf,
  shapeProblems,
  subscriptionsOf,
  writable,
} from '../../src/mqtt/aedes-internals.js';
import { ConnectedClients } from '../../src/mqtt/connected-clients.js';

// aedes' private surface (src/mqtt/aedes-internals.ts), on the aedes that is
// installed: a real broker on a free port and real mqtt.js clients. These fail when an aedes
// release moves a field the MQTT fast path reads, before any reader meets it.

interface Running {
  aedes: Aedes;
  server: Server;
  port: number;
  connected: ConnectedClients;
  clients: MqttClient[];
}

let running: Running | null = null;

async function broker(): Promise<Running> {
  const aedes = new Aedes();
  const connected = new ConnectedClients(aedes);
  await aedes.listen();
  const server = createServer((socket) => aedes.handle(socket));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  running = { aedes, server, port: (server.address() as AddressInfo).port, connected, clients: [] };
  return running;
}

/** Connects a real client with `clientId` and answers the broker's Client for it once aedes registered it. */
async function connectAs(b: Running, clientId: string, clean = true): Promise<{ remote: MqttClient; client: Client }> {
  const registered = new Promise<Client>((resolve) => {
    const on = (client: Client) => {
      if (client.id !== clientId) return;
      b.aedes.off('client', on);
      resolve(client);
    };
    b.aedes.on('client', on);
  });
  const remote = mqtt.connect(`mqtt://127.0.0.1:${b.port}`, {
    clientId,
    clean,
    reconnectPeriod: 0,
    protocolVersion: 4,
  });
  b.clients.push(remote);
  await new Promise((resolve) => remote.once('connect', resolve));
  const client = await registered;
  // A round trip, so aedes has finished the connect series (its read batch, its flags) first.
  await remote.subscribeAsync(`settled/${clientId}`);
  return { remote, client };
}

afterEach(async () => {
  if (!running) return;
  for (const c of running.clients) c.end(true);
  running.server.close();
  await new Promise<void>((resolve) => running!.aedes.close(() => resolve()));
  running = null;
});

describe('aedes internals', () => {
  it('finds every private field on a client of the installed aedes', async () => {
    const b = await broker();
    const { client } = await connectAs(b, 'shape');
    expect(shapeProblems(b.aedes, client)).toEqual([]);
    expect(() => checkAedesShape(b.aedes)).not.toThrow();
    expect(aedesVersion().startsWith(`${AEDES_WRITTEN_AGAINST}.`)).toBe(true);
  });

  it('reads the parser, the CONNACK, the subscriptions and writability of a connected client', async () => {
    const b = await broker();
    const { remote, client } = await connectAs(b, 'reader-1');
    expect(typeof parserOf(client).parse).toBe('function');
    expect(parserOf(client)._list.length).toBe(0);
    expect(connackSent(client)).toBe(true);
    expect(writable(client)).toBe(true);
    await remote.subscribeAsync('doors/1/decisions', { qos: 1 });
    expect(subscriptionsOf(client)['doors/1/decisions']).toMatchObject({ qos: 1 });
    expect(subscriptionsOf(client)['doors/2/decisions']).toBeUndefined();
    remote.end(true);
    await once(b.aedes, 'clientDisconnect');
    expect(writable(client)).toBe(false);
  });

  it('numbers publishes from the counter aedes numbers its own with, wrapping after 65535', async () => {
    const b = await broker();
    const { client } = await connectAs(b, 'ids');
    const first = nextMessageId(client);
    expect(nextMessageId(client)).toBe(first + 1);
    (client as unknown as { _nextId: number })._nextId = 65535;
    expect(nextMessageId(client)).toBe(65535);
    expect(nextMessageId(client)).toBe(1);
  });

  it('holds the read batch of a connection until it is ended, and keeps it alive meanwhile', async () => {
    const b = await broker();
    const { remote, client } = await connectAs(b, 'batch');
    const batch = () => (client as unknown as { _parsingBatch: number })._parsingBatch;
    const before = batch();
    beginReadBatch(client);
    expect(batch()).toBe(before + 1);
    keptAlive(client);
    endReadBatch(client);
    expect(batch()).toBe(before);
    // The connection still works: a publish round trip after the batch ended.
    await remote.subscribeAsync('t/echo');
    const got = new Promise<string>((resolve) => remote.once('message', (topic) => resolve(topic)));
    await remote.publishAsync('t/echo', 'x', { qos: 1 });
    const topic = await got;
    expect(topic).toBe('t/echo');
  });

  it('reaches the session calls of the persistence', async () => {
    const b = await broker();
    const store = sessionStoreOf(b.aedes);
    const { remote } = await connectAs(b, 'persistent', false);
    await remote.subscribeAsync('a/b', { qos: 1 });
    const subs = await store.subscriptionsByClient({ id: 'persistent' });
    expect(subs.map((s) => s.topic)).toContain('a/b');
  });

  it('names aedes, its version and the missing field when the shape has moved, and refuses', async () => {
    const b = await broker();
    const { client } = await connectAs(b, 'moved');
    delete (client as unknown as Record<string, unknown>)._nextId;
    expect(shapeProblems(b.aedes, client)).toEqual(['client._nextId']);
    const handle = b.aedes.handle.bind(b.aedes);
    // A client whose parser is not where it was (while the check looks; aedes' own close still finds it).
    b.aedes.handle = ((stream: Parameters<Aedes['handle']>[0]) => {
      const made = handle(stream);
      const parser = (made as unknown as { _parser: unknown })._parser;
      Object.defineProperty(made, '_parser', {
        get: () => (stream.destroyed ? parser : undefined),
        configurable: true,
      });
      return made;
    }) as Aedes['handle'];
    expect(() => checkAedesShape(b.aedes)).toThrow(
      new RegExp(
        `^aedes ${aedesVersion().replace(/\./g, '\\.')} does not have .*aedes 1\\.2\\.x.*client\\._parser\\.parse\\(\\)`,
      ),
    );
  });
});

describe('connected clients, from aedes public events', () => {
  it('follows connects, a takeover of the same id and disconnects', async () => {
    const b = await broker();
    const first = await connectAs(b, 'door');
    const other = await connectAs(b, 'gate');
    expect(
      b.connected
        .all()
        .map((c) => c.id)
        .sort(),
    ).toEqual(['door', 'gate']);
    // The same id again: aedes closes the first connection and registers the second (MQTT-3.1.4-2).
    const second = await connectAs(b, 'door');
    expect(b.connected.all()).toHaveLength(2);
    expect(b.connected.all()).toContain(second.client);
    expect(b.connected.all()).not.toContain(first.client);
    other.remote.end(true);
    await once(b.aedes, 'clientDisconnect');
    expect(b.connected.has('gate')).toBe(false);
    expect(b.connected.has('door')).toBe(true);
  });
});
