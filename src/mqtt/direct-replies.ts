import type { Client, PublishPacket } from 'aedes';
import { type ScanDeadlines, type Tickets, type WaitingOn, withTicket } from '../access/scan-deadlines.js';
import type { Logger } from '../logger.js';
import { beginReadBatch, endReadBatch, keptAlive } from './aedes-internals.js';
import { canReplyDirectly, writeReply } from './reply-writer.js';
import { describeIdentity, type MqttIdentity } from './identities.js';
import type { FrameTaker } from './reader-frames.js';

type ReaderIdentity = Extract<MqttIdentity, { kind: 'reader' }>;

// How the box answers a publish it answers itself (a scan; docs/mqtt.md: acknowledgement and
// answer). The publish is acknowledged only once its answer is ready (durable), and the PUBACK
// and the answer go back in one write on the connection it came in on (reply-writer.ts). The
// answer goes through aedes as well only when someone else may be listening (staff, the
// reader's gateway, a second connection of the reader); aedes then skips the client that has it.
//
// A reader's own scans take a shorter way in: a reader may publish nothing but its scans topic
// and be sent nothing but its decisions (acl.ts), so once it is connected its bytes are split into
// frames here (reader-frames.ts) and its QoS 0/1 PUBLISHes on that topic and its PUBACKs (a clean
// session has nothing in aedes to clear) never reach aedes' parser and packet pipeline
// (authorisation hooks, publish series, topic matching of a publish nobody may read, a promise
// per PUBACK). What aedes does for every packet is kept: its keep-alive timer is refreshed, and
// its read batch counts the scan until it is answered, so the connection is not read further
// meanwhile. Everything else (gateways, staff, QoS 2, other packets, topics the ACL refuses) goes
// to aedes' parser and pipeline whole, with the hooks of broker.ts.
//
// Every scan answered here has a ticket in the answer deadlines (access/scan-deadlines.ts):
// one not answered within mqtt.answerTimeoutMs closes its connection unacknowledged, so the
// reader reconnects and sends it again, and its request_id makes that safe (docs/mqtt.md, "Answered in bounded time").
// An answer that cannot be written closes the connection too: a scan is never left unanswered
// on a connection that stays open.

/** What the box answers a publish with, on `topic` (JSON-encoded). */
export interface MqttReply {
  topic: string;
  payload: unknown;
}

/** `deadline`: the scan's ticket in the answer deadlines (0: none), for the scan service to note what it waits on. */
export type ReplyHook = (
  identity: MqttIdentity,
  packet: PublishPacket,
  deadline: number,
) => Promise<MqttReply | null> | null;

export class DirectReplies {
  /** Connections that may hear a reader's decisions besides the reader
   * itself: staff; per project, gateways; per reader, its connections. */
  readonly #listeners = new Map<string, number>();
  readonly #counted = new WeakSet<Client>();
  /** Answers written straight to a client and published for others
   * too: aedes must not forward them to that client again. */
  readonly #repliedDirectly = new WeakMap<Buffer, Client>();
  readonly #waiters = new WeakMap<Client, ConnectionWaiter>();
  /** MQTT's tickets in the answer deadlines: a scan let go closes its connection. */
  readonly #tickets: Tickets<ConnectionWaiter> | null;

  constructor(
    private readonly reply: ReplyHook,
    /** Publishes through aedes to every subscriber, at QoS 1. */
    private readonly publish: (topic: string, payload: Buffer) => void,
    deadlines: ScanDeadlines | null,
    private readonly log: Logger,
  ) {
    this.#tickets = deadlines?.tickets('mqtt', letGo) ?? null;
  }

  /**
   * A publish that came through aedes' pipeline (authorizePublish: a gateway's scans, a reader's
   * before its frames are split here): answered and acknowledged as below, then `done`. False:
   * not a publish the box answers.
   */
  replyToPublish(
    client: Client,
    identity: MqttIdentity,
    packet: PublishPacket,
    done: (err?: Error | null) => void,
  ): boolean {
    const answering = withTicket(this.#tickets, this.#waiterOf(client, identity), (ticket) =>
      this.reply(identity, packet, ticket),
    );
    if (!answering) return false;
    answering.then(
      (answer) => {
        this.acknowledge(client, identity, packet, answer);
        done(null);
      },
      (err: Error) => done(err),
    );
    return true;
  }

  /**
   * Acknowledges a publish the box answered, with its answer in the same write when the client is
   * subscribed to the answer's topic. Marks the packet QoS 0 for aedes, should it go on through
   * aedes' pipeline: acknowledged already, and nobody may read scans (acl.ts).
   */
  acknowledge(client: Client, identity: MqttIdentity, packet: PublishPacket, answer: MqttReply | null): void {
    const ack = packet.qos === 1 ? (packet.messageId ?? null) : null;
    if (ack !== null) packet.qos = 0;
    if (!answer) {
      this.#written(client, writeReply(client, ack, null));
      return;
    }
    const payload = Buffer.from(JSON.stringify(answer.payload));
    if (!canReplyDirectly(client, answer.topic)) {
      this.#written(client, writeReply(client, ack, null));
      this.publish(answer.topic, payload);
      return;
    }
    this.#written(client, writeReply(client, ack, { topic: answer.topic, payload }));
    if (!this.#othersMayHear(identity)) return;
    this.#repliedDirectly.set(payload, client);
    this.publish(answer.topic, payload);
  }

  /** authorizeForward: false for the client an answer was already written to. */
  mayForward(client: Client, payload: Buffer): boolean {
    return this.#repliedDirectly.get(payload) !== client;
  }

  connected(client: Client, identity: MqttIdentity): void {
    this.#count(client, identity, 1);
  }

  disconnected(client: Client, identity: MqttIdentity): void {
    this.#count(client, identity, -1);
  }

  /**
   * The frames of a connected reader the box takes before aedes (see above): its QoS 0/1 PUBLISHes
   * on its own scans topic, and its PUBACKs when its session is clean (reader-frames.ts).
   */
  frameTaker(client: Client, identity: ReaderIdentity): FrameTaker {
    const scans = Buffer.from(identity.scansTopic);
    const waiter = this.#waiterOf(client, identity);
    return (header, buf, start, end) => {
      const type = header >> 4;
      if (type === 4) {
        if (end - start !== 2 || !client.clean) return false;
        keptAlive(client);
        return true;
      }
      const qos = (header >> 1) & 3;
      if (type !== 3 || qos > 1 || end - start < 2) return false;
      const topicEnd = start + 2 + buf.readUInt16BE(start);
      const payloadStart = topicEnd + (qos === 1 ? 2 : 0);
      if (
        topicEnd - start - 2 !== scans.length ||
        payloadStart > end ||
        buf.compare(scans, 0, scans.length, start + 2, topicEnd) !== 0
      )
        return false;
      const packet = {
        cmd: 'publish',
        topic: identity.scansTopic,
        payload: buf.subarray(payloadStart, end),
        qos,
        messageId: qos === 1 ? buf.readUInt16BE(topicEnd) : undefined,
        retain: (header & 1) === 1,
        dup: (header & 8) === 8,
      } as PublishPacket;
      const answering = withTicket(this.#tickets, waiter, (ticket) => this.reply(identity, packet, ticket));
      if (!answering) return false;
      keptAlive(client);
      beginReadBatch(client);
      answering.then(
        (answer) => {
          this.acknowledge(client, identity, packet, answer);
          endReadBatch(client);
        },
        (err: Error) => endReadBatch(client, err), // aedes closes the connection: unacknowledged, the reader sends it again
      );
      return true;
    };
  }

  /** An answer the connection could not take (closed or errored under it): closed, should it still be open. */
  #written(client: Client, written: boolean): void {
    if (written || client.closed) return;
    this.log.warn(
      { clientId: client.id },
      'mqtt answer could not be written, closing the connection so the scan is sent again',
    );
    client.close();
  }

  #waiterOf(client: Client, identity: MqttIdentity): ConnectionWaiter {
    let waiter = this.#waiters.get(client);
    if (!waiter)
      this.#waiters.set(
        client,
        (waiter = new ConnectionWaiter(client, identity, this.log, this.#tickets?.timeoutMs ?? 0)),
      );
    return waiter;
  }

  /** Whether a connection besides the reader's one may be subscribed to its
   * decisions (acl.ts: staff, its gateway, another connection of the reader). */
  #othersMayHear(identity: MqttIdentity): boolean {
    if ((this.#listeners.get('staff') ?? 0) > 0) return true;
    if (identity.kind !== 'reader') return true;
    return (
      (this.#listeners.get(`gateways:${identity.projectId}`) ?? 0) > 0 ||
      (this.#listeners.get(`reader:${identity.readerId}`) ?? 0) > 1
    );
  }

  #count(client: Client, identity: MqttIdentity, step: 1 | -1): void {
    if ((step === 1) === this.#counted.has(client)) return;
    if (step === 1) this.#counted.add(client);
    else this.#counted.delete(client);
    const key =
      identity.kind === 'staff'
        ? 'staff'
        : identity.kind === 'gateway'
          ? `gateways:${identity.projectId}`
          : `reader:${identity.readerId}`;
    const n = (this.#listeners.get(key) ?? 0) + step;
    if (n > 0) this.#listeners.set(key, n);
    else this.#listeners.delete(key);
  }
}

/** The answer deadlines' listener for MQTT: a scan let go closes its connection. */
const letGo = (waiter: ConnectionWaiter, waitingOn: WaitingOn, waitedMs: number) => waiter.close(waitingOn, waitedMs);

/** A connection waiting on its scans' answers: one past the bound closes it (logged once; each scan is counted). */
class ConnectionWaiter {
  constructor(
    private readonly client: Client,
    private readonly identity: MqttIdentity,
    private readonly log: Logger,
    private readonly timeoutMs: number,
  ) {}

  close(waitingOn: WaitingOn, waitedMs: number): void {
    if (this.client.closed) return;
    this.log.warn(
      {
        clientId: this.client.id,
        who: describeIdentity(this.identity),
        waitingOn,
        waitedMs,
        timeoutMs: this.timeoutMs,
      },
      'mqtt scan not answered within mqtt.answerTimeoutMs, closing the connection unacknowledged so it is sent again',
    );
    this.client.close();
  }
}
