import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { Aedes, type AedesPublishPacket, type Client, type PublishPacket } from 'aedes';
import type { ScanDeadlines } from '../access/scan-deadlines.js';
import type { Logger } from '../logger.js';
import { mayPublish, mayReceive, maySubscribe, type AclDeps } from './acl.js';
import { DirectReplies, type MqttReply } from './direct-replies.js';
import { checkAedesShape, connackSent, parserOf, subscriptionsOf } from './aedes-internals.js';
import { ConnectedClients } from './connected-clients.js';
import { ReaderFrames } from './reader-frames.js';
import { ClientSessions, type ConnectionLimits } from './client-sessions.js';
import { ConnackCode, describeIdentity, identify, type IdentityDeps, type MqttIdentity } from './identities.js';
import { connectionHolds } from './staff-access.js';
import { type ListenerOptions, MqttListeners } from './listeners.js';

// The embedded broker (docs/mqtt.md): aedes, fed the connections listeners.ts takes (TCP,
// optionally TLS, and MQTT over WebSocket at /mqtt on the HTTP port). It knows who each client is (its
// identity, from the password: identities.ts) and what each may do (acl.ts); what a publish
// means is the business of the handlers given to it (scans, gateway status: mqtt/service.ts).
// A publish the box answers (a scan) is acknowledged only once its answer is ready, and the
// PUBACK and the answer go back in one write on the connection it came in on; a reader's scans
// take a shorter way in than aedes' pipeline (direct-replies.ts).
// One frozen client cannot stall the rest: aedes' drainTimeout closes a client whose socket
// does not drain (aedes issue #1060), and a packet over maxPacketBytes closes its connection as
// soon as its header arrives, before its body is buffered.

export interface BrokerOptions extends ListenerOptions {
  drainTimeoutMs: number;
  connectTimeoutMs: number;
  maxConnections: number;
  /** Open connections per reader, gateway and staff user (client-sessions.ts). */
  maxConnectionsPerIdentity: ConnectionLimits;
  maxPacketBytes: number;
  /** How often connections' credentials are checked again (API tokens revoked elsewhere, expiry). */
  recheckIntervalMs: number;
}

export type { MqttReply };

export interface BrokerHooks {
  /**
   * A publish the box answers (a scan), once it passed the ACL: the answer when it is durable, or
   * null for none. The publish is acknowledged then, with the answer; a rejection closes the
   * connection unacknowledged, so the client sends it again. Null: not a publish the box answers.
   * `deadline`: its ticket in the answer deadlines (0: none), for the scan service.
   */
  reply(identity: MqttIdentity, packet: PublishPacket, deadline: number): Promise<MqttReply | null> | null;
  /** A publish that went through aedes' pipeline and passed the ACL (gateway status; a gateway's scans too, already
   * answered). A reader's own scans never come here (direct-replies.ts). */
  published(identity: MqttIdentity, packet: AedesPublishPacket): void;
  connected(identity: MqttIdentity): void;
  disconnected(identity: MqttIdentity): void;
  /** Refusals and protocol trouble, counted in /metrics by kind. */
  refused(kind: 'connect' | 'publish' | 'subscribe' | 'oversize'): void;
}

export interface BrokerStats {
  clients: number;
  readers: number;
  gateways: number;
  staff: number;
}

export class MqttBroker {
  readonly aedes: Aedes;
  readonly #identities = new WeakMap<Client, MqttIdentity>();
  readonly #listeners: MqttListeners;
  readonly #replies: DirectReplies;
  #recheck: NodeJS.Timeout | null = null;
  /** Client ids in each identity's own space, persistent sessions and their owners, connections per identity. */
  readonly #sessions: ClientSessions;
  readonly #connectedClients: ConnectedClients;
  /** What the hooks were told of a connection: 'up' once connected, 'down' once disconnected too. */
  readonly #announced = new WeakMap<Client, 'up' | 'down'>();

  constructor(
    private readonly options: BrokerOptions,
    private readonly deps: IdentityDeps & AclDeps,
    private readonly hooks: BrokerHooks,
    private readonly log: Logger,
    /** A scan not answered within its bound closes its connection (docs/mqtt.md: answered in bounded time). */
    deadlines: ScanDeadlines | null = null,
  ) {
    this.#listeners = new MqttListeners(options, (stream, req) => this.#handle(stream, req), log);
    this.#replies = new DirectReplies(hooks.reply, (topic, payload) => this.#publish(topic, payload), deadlines, log);
    this.aedes = new Aedes({
      drainTimeout: options.drainTimeoutMs,
      connectTimeout: options.connectTimeoutMs,
      maxClientsIdLength: 128,
      heartbeatInterval: 60_000,
      preConnect: (client, _packet, done) => {
        if (this.aedes.connectedClients >= options.maxConnections) {
          this.log.warn(
            { clientId: client.id, max: options.maxConnections },
            'mqtt connection refused: over mqtt.maxConnections',
          );
          hooks.refused('connect');
          return done(new Error('over mqtt.maxConnections'), false);
        }
        done(null, true);
      },
      authenticate: (client, username, password, done) => {
        const outcome = identify(deps, username, password);
        if ('refused' in outcome) {
          this.log.warn(
            { clientId: client.id, username, reason: outcome.reason, address: this.#address(client) },
            'mqtt connection refused',
          );
          hooks.refused('connect');
          return done(Object.assign(new Error(outcome.reason), { returnCode: outcome.refused }), false);
        }
        const admitted = this.#sessions.admit(client, outcome.identity);
        if (!admitted.ok) {
          this.log.warn(
            {
              clientId: client.id,
              who: describeIdentity(outcome.identity),
              reason: admitted.reason,
              address: this.#address(client),
            },
            'mqtt connection refused: over the connections of its identity',
          );
          hooks.refused('connect');
          return done(Object.assign(new Error(admitted.reason), { returnCode: ConnackCode.serverUnavailable }), false);
        }
        this.#identities.set(client, outcome.identity);
        done(null, true);
      },
      authorizePublish: (client, packet, done) => {
        const identity = client ? this.#identities.get(client) : undefined;
        if (!client || !identity) return done(new Error('no identity'));
        const verdict = mayPublish(deps, identity, packet.topic);
        if (verdict.ok) {
          if (!this.#replies.replyToPublish(client, identity, packet, done)) done(null);
          return;
        }
        this.log.warn(
          {
            clientId: client.id,
            who: describeIdentity(identity),
            topic: packet.topic.slice(0, 200),
            reason: verdict.reason,
          },
          'mqtt publish refused, disconnecting',
        );
        hooks.refused('publish');
        done(new Error(verdict.reason));
      },
      authorizeSubscribe: (client, subscription, done) => {
        const identity = this.#identities.get(client);
        const verdict = identity
          ? maySubscribe(deps, identity, subscription.topic)
          : { ok: false as const, reason: 'no identity' };
        if (verdict.ok) return done(null, subscription);
        this.log.warn(
          {
            clientId: client.id,
            who: identity && describeIdentity(identity),
            topic: subscription.topic.slice(0, 200),
            reason: verdict.reason,
          },
          'mqtt subscription refused',
        );
        hooks.refused('subscribe');
        done(null, null); // SUBACK 0x80 for this filter; the connection stays
      },
      authorizeForward: (client, packet) => {
        if (!this.#replies.mayForward(client, packet.payload as Buffer)) return null;
        return mayReceive(deps, this.#identities.get(client), packet.topic) ? packet : null;
      },
    });
    this.#connectedClients = new ConnectedClients(this.aedes);
    this.#sessions = new ClientSessions(this.aedes, this.#connectedClients, options.maxConnectionsPerIdentity, log);
    // A client thrown out right after CONNACK (a PUBLISH the ACL refuses) is disconnected before
    // aedes has finished its connect, so clientDisconnect can come before clientReady
    // (docs/security.md, attack 9). The hooks are told connected, then disconnected, once each, in that order.
    this.aedes.on('clientReady', (client) => {
      const identity = this.#identities.get(client);
      if (!identity) return;
      this.#sessions.ready(client, identity);
      // Closed already: either clientDisconnect came first and told both, or the client closed
      // before aedes registered it and there is nothing to tell.
      if (client.closed || this.#announced.has(client)) return;
      this.#connected(client, identity);
    });
    this.aedes.on('clientDisconnect', (client) => {
      const identity = this.#identities.get(client);
      if (!identity) return;
      this.#sessions.closed(client, identity);
      if (!this.#announced.has(client)) this.#connected(client, identity);
      if (this.#announced.get(client) !== 'up') return;
      this.#announced.set(client, 'down');
      this.#replies.disconnected(client, identity);
      this.log.info({ clientId: client.id, who: describeIdentity(identity) }, 'mqtt client disconnected');
      hooks.disconnected(identity);
    });
    this.aedes.on('clientError', (client, err) =>
      this.log.debug({ clientId: client.id, err: err.message }, 'mqtt client error'),
    );
    this.aedes.on('connectionError', (client, err) =>
      this.log.debug({ clientId: client.id, err: err.message }, 'mqtt connection error'),
    );
    this.aedes.on('keepaliveTimeout', (client) => this.log.info({ clientId: client.id }, 'mqtt keepalive timeout'));
    this.aedes.on('publish', (packet, client) => {
      const identity = client ? this.#identities.get(client) : undefined;
      if (identity) hooks.published(identity, packet);
    });
  }

  #connected(client: Client, identity: MqttIdentity): void {
    this.#announced.set(client, 'up');
    this.#replies.connected(client, identity);
    this.log.info(
      { clientId: client.id, who: describeIdentity(identity), address: this.#address(client) },
      'mqtt client connected',
    );
    this.hooks.connected(identity);
  }

  /** The clients aedes has registered (followed from its public events). */
  get connectedClients(): ConnectedClients {
    return this.#connectedClients;
  }

  get stats(): BrokerStats {
    const stats = { clients: 0, readers: 0, gateways: 0, staff: 0 };
    for (const client of this.#clients()) {
      const identity = this.#identities.get(client);
      if (!identity || !client.connected) continue;
      stats.clients++;
      if (identity.kind === 'reader') stats.readers++;
      else if (identity.kind === 'gateway') stats.gateways++;
      else stats.staff++;
    }
    return stats;
  }

  /** The ports listened on: TCP first, then TLS when configured. */
  get ports(): { tcp: number; tls: number | null } {
    return this.#listeners.ports;
  }

  async start(): Promise<void> {
    await this.aedes.listen();
    checkAedesShape(this.aedes); // refuses to start on an aedes whose private fields moved (aedes-internals.ts)
    const { options } = this;
    await this.#listeners.listen();
    this.log.info({ port: this.ports.tcp, tlsPort: this.ports.tls ?? undefined, wsPath: '/mqtt' }, 'mqtt listening');
    // Revocations and access changes made here disconnect at once (MqttService); this is the
    // backstop for the rest: tokens expiring with time, changes made by the CLI in another process.
    this.#recheck = setInterval(() => this.recheck(null, 'periodic'), options.recheckIntervalMs);
    this.#recheck.unref();
  }

  /** MQTT over WebSocket: the HTTP server's upgrades to /mqtt (http/upgrade.ts). */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.#listeners.upgrade(req, socket, head);
  }

  /** Publishes from the box at QoS 1, through aedes to every subscriber. */
  publish(topic: string, payload: unknown): void {
    this.#publish(topic, Buffer.from(JSON.stringify(payload)));
  }

  #publish(topic: string, payload: Buffer): void {
    const packet: PublishPacket = { cmd: 'publish', topic, payload, qos: 1, retain: false, dup: false };
    this.aedes.publish(packet, (err) => {
      if (err) this.log.warn({ err: err.message, topic }, 'mqtt publish failed');
    });
  }

  /** Closes every connection of this reader or gateway (credentials
   * revoked, device deleted), and drops its persistent sessions. */
  disconnect(kind: 'reader' | 'gateway', deviceId: number): number {
    const ofDevice = (who: MqttIdentity) =>
      kind === 'reader'
        ? who.kind === 'reader' && who.readerId === deviceId
        : who.kind === 'gateway' && who.gatewayId === deviceId;
    let closed = 0;
    for (const client of this.#clients()) {
      const who = this.#identities.get(client);
      if (!who || !ofDevice(who)) continue;
      this.log.info(
        { clientId: client.id, who: describeIdentity(who) },
        'mqtt client disconnected: credentials revoked',
      );
      client.close();
      closed++;
    }
    // The next holder of a credential for this device (a re-provisioned reader, a reader made in
    // a deleted one's row id) starts afresh: nothing queued for the old one (docs/security.md, attack 4).
    for (const [clientId] of this.#sessions.persistent(ofDevice)) void this.#sessions.drop(clientId);
    return closed;
  }

  /**
   * Closes the connections whose access no longer holds (staff-access.ts): this user's staff
   * connections, or every connection for null. A persistent session's subscriptions go with it,
   * so nothing is queued for it and a reconnect starts without them (docs/security.md, attack 1).
   */
  recheck(userId: number | null, reason: string): number {
    let closed = 0;
    for (const client of this.#clients()) {
      const who = this.#identities.get(client);
      if (!who || (userId !== null && (who.kind !== 'staff' || who.userId !== userId))) continue;
      const filters = Object.keys(subscriptionsOf(client));
      const verdict = connectionHolds(this.deps, who, filters);
      if (verdict.ok) continue;
      this.log.info(
        { clientId: client.id, who: describeIdentity(who), reason, why: verdict.reason },
        'mqtt client disconnected: its access ended',
      );
      if (!client.clean) void this.#sessions.drop(client.id);
      client.close();
      closed++;
    }
    this.#recheckAway(userId, reason);
    return closed;
  }

  /** The persistent sessions of staff who are not connected: dropped when
   * their access no longer holds, so nothing more is queued for them. */
  #recheckAway(userId: number | null, reason: string): void {
    const theirs = (who: MqttIdentity) => who.kind === 'staff' && (userId === null || who.userId === userId);
    this.#sessions.recheckAway(theirs, (who, filters) => connectionHolds(this.deps, who, filters), reason);
  }

  async stop(): Promise<void> {
    if (this.#recheck) clearInterval(this.#recheck);
    this.#listeners.close();
    for (const client of this.#clients()) client.close();
    await new Promise<void>((resolve) => this.aedes.close(() => resolve()));
  }

  #clients(): Client[] {
    return this.#connectedClients.all();
  }

  #address(client: Client): string | undefined {
    return (client.conn as Socket).remoteAddress ?? client.req?.socket.remoteAddress;
  }

  /**
   * Hands a connection to aedes, with the packet-size guard on its parser; once a reader is
   * connected, its bytes are split into frames here and its scans taken before aedes (direct-replies.ts).
   */
  #handle(stream: Duplex, req?: IncomingMessage): void {
    const client = req ? this.aedes.handle(stream, req) : this.aedes.handle(stream);
    const parser = parserOf(client);
    const parse = parser.parse.bind(parser);
    const limit = this.options.maxPacketBytes;
    const oversize = (length: number) => {
      this.log.warn(
        { clientId: client.id || undefined, length, limit },
        'mqtt packet over mqtt.maxPacketBytes, closing the connection',
      );
      this.hooks.refused('oversize');
      stream.destroy();
    };
    const guarded = (buf: Buffer) => {
      const left = parse(buf);
      if (parser.packet.length <= limit) return left;
      oversize(parser.packet.length);
      return 0;
    };
    let frames: ReaderFrames | null | false = null; // false: not a reader, mqtt-packet throughout
    parser.parse = (buf: Buffer) => {
      if (frames === null && connackSent(client) && parser._list.length === 0) {
        const identity = this.#identities.get(client);
        frames =
          identity?.kind === 'reader'
            ? new ReaderFrames(
                this.#replies.frameTaker(client, identity),
                guarded,
                limit,
                oversize,
                () => client.closed || stream.destroyed,
              )
            : false;
      }
      if (!frames) return guarded(buf);
      frames.feed(buf);
      return 0;
    };
  }
}
