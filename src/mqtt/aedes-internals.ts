import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Duplex } from 'node:stream';
import type { Aedes, Client } from 'aedes';

// aedes' private surface, in one place (docs/decisions.md, "Other libraries' internals behind one door each"). The MQTT
// fast path needs a few things aedes' typings leave out: the client's packet parser (the packet-size guard and the
// reader-frame split, broker.ts), its read batch and keep-alive timer (a scan taken before aedes counts as a
// packet aedes read, direct-replies.ts), its outgoing message-id counter and drain wait (the
// decision written with its PUBACK, reply-writer.ts), its subscriptions, and the persistence's
// session calls (client-sessions.ts). Every read of them goes through this module; nothing
// else in src/ names an aedes private field.
//
// Written against aedes 1.2 (package.json pins ~1.2.0: patch releases only). checkAedesShape()
// runs once at start on a real client of the running aedes and refuses to start, naming the
// library and its version, when anything here is missing or of another type: a silent mismatch
// would drop PUBACKs or stop scans, which is worse than not starting. test/mqtt/aedes-internals.test.ts
// runs the same check and each accessor on a connected client, so `npm test` fails on an aedes
// release that moved any of them. docs/mqtt.md says how to take a patch release.

export const AEDES_WRITTEN_AGAINST = '1.2';

/** mqtt-packet's parser as aedes keeps it on each client. */
export interface PacketParser {
  parse(buf: Buffer): number;
  /** The packet being parsed; its length is known once the fixed header is. */
  packet: { length: number };
  /** Bytes buffered and not parsed yet. */
  _list: { length: number };
}

/** The parts of aedes' Client this code uses that its typings leave out. */
interface ClientInternals {
  _parser: PacketParser;
  connackSent: boolean;
  errored: boolean;
  subscriptions: Record<string, { qos: number } | undefined>;
  _nextId: number;
  _parsingBatch: number;
  _nextBatch(err?: Error): void;
  _keepaliveInterval: number;
  _keepaliveTimer: NodeJS.Timeout | null;
  waitForDrain(done: () => void): void;
}

/** The part of aedes' persistence a session is made of (aedes-persistence 11). */
export interface SessionStore {
  subscriptionsByClient(client: { id: string }): Promise<{ topic: string }[]>;
  cleanSubscriptions(client: { id: string }): Promise<void>;
  outgoingStream(client: { id: string }): AsyncIterable<{ messageId?: number }>;
  outgoingClearMessageId(client: { id: string }, packet: { messageId?: number }): Promise<unknown>;
}

const inner = (client: Client) => client as unknown as ClientInternals & Client;

export const parserOf = (client: Client): PacketParser => inner(client)._parser;
export const connackSent = (client: Client): boolean => inner(client).connackSent;
export const subscriptionsOf = (client: Client): Record<string, { qos: number } | undefined> =>
  inner(client).subscriptions ?? {};

/** Whether `client` can be written to: its CONNACK sent, and neither closed nor errored. */
export function writable(client: Client): boolean {
  const c = inner(client);
  return c.connackSent && !client.closed && !c.errored;
}

/** The next id of a QoS 1 publish to `client`, from the counter aedes numbers its own deliveries with
 * (lib/qos-packet.js: 1..65535, wrapping). */
export function nextMessageId(client: Client): number {
  const c = inner(client);
  const id = c._nextId;
  c._nextId = id >= 65535 ? 1 : id + 1;
  return id;
}

/** Hands a socket that does not drain to aedes' drain timeout, the bound of its own writes. */
export function waitForDrain(client: Client): void {
  inner(client).waitForDrain(() => {});
}

/** What aedes' packet handler does for every packet of a connected client (lib/handlers/index.js). */
export function keptAlive(client: Client): void {
  const c = inner(client);
  if (c._keepaliveInterval > 0) c._keepaliveTimer?.refresh();
}

/** Counts a packet taken before aedes in the client's read
 * batch: the connection is not read further until endReadBatch. */
export function beginReadBatch(client: Client): void {
  inner(client)._parsingBatch++;
}

/** Ends what beginReadBatch began; with an error, aedes closes the connection. */
export function endReadBatch(client: Client, err?: Error): void {
  inner(client)._nextBatch(err);
}

/** The persistence the sessions live in (aedes' own default, in memory). */
export const sessionStoreOf = (aedes: Aedes): SessionStore =>
  (aedes as unknown as { persistence: SessionStore }).persistence;

/** aedes' version as installed (its package.json; aedes does not export it). */
export function aedesVersion(): string {
  try {
    const main = createRequire(import.meta.url).resolve('aedes');
    return (JSON.parse(readFileSync(join(dirname(main), 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

/** What is wrong with aedes' private surface on `client` and `aedes`
 * (empty: it has the shape this module was written against). */
export function shapeProblems(aedes: Aedes, client: Client): string[] {
  const c = client as unknown as Record<string, unknown>;
  const problems: string[] = [];
  const expect = (what: string, ok: boolean) => ok || problems.push(what);
  const parser = c._parser as Record<string, unknown> | undefined;
  expect('client._parser.parse()', typeof parser?.parse === 'function');
  expect('client._parser.packet', typeof parser?.packet === 'object' && parser.packet !== null);
  expect(
    'client._parser._list.length',
    typeof (parser?._list as { length?: unknown } | undefined)?.length === 'number',
  );
  expect('client.connackSent', typeof c.connackSent === 'boolean');
  expect('client.errored', typeof c.errored === 'boolean');
  expect('client.subscriptions', typeof c.subscriptions === 'object' && c.subscriptions !== null);
  expect('client._nextId', typeof c._nextId === 'number');
  expect('client._parsingBatch', typeof c._parsingBatch === 'number');
  expect('client._nextBatch()', typeof c._nextBatch === 'function');
  expect('client._keepaliveInterval', typeof c._keepaliveInterval === 'number');
  expect('client._keepaliveTimer', '_keepaliveTimer' in c);
  expect('client.waitForDrain()', typeof c.waitForDrain === 'function');
  const store = (aedes as unknown as { persistence?: Record<string, unknown> }).persistence;
  for (const name of ['subscriptionsByClient', 'cleanSubscriptions', 'outgoingStream', 'outgoingClearMessageId'])
    expect(`aedes.persistence.${name}()`, typeof store?.[name] === 'function');
  return problems;
}

/**
 * Checks the private surface on a client of this aedes made for the purpose (a connection that
 * never sends CONNECT, closed at once), and throws naming aedes, its version and what is missing
 * when it does not match. Call once at start, before accepting connections.
 */
export function checkAedesShape(aedes: Aedes): void {
  const stream = new Duplex({
    read() {},
    write(_chunk, _encoding, done) {
      done();
    },
  });
  const client = aedes.handle(stream);
  let problems: string[];
  try {
    problems = shapeProblems(aedes, client);
  } finally {
    stream.destroy();
  }
  if (problems.length > 0) {
    throw new Error(
      `aedes ${aedesVersion()} does not have the private fields Gatehouse was written against (aedes ${AEDES_WRITTEN_AGAINST}.x): ${problems.join(', ')}. ` +
        'Install the aedes version package.json pins, or update src/mqtt/aedes-internals.ts (docs/mqtt.md: taking a patch release).',
    );
  }
}
