import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Logger } from '../logger.js';
import { LocalAdapter, type ChannelAdapter } from './adapter.js';
import { ChannelRegistry } from './channels.js';
import { Connection, type ConnectionOptions } from './connection.js';
import { useWsSend } from './fan-out.js';
import type { ChannelGrants } from './grants.js';
import { CloseCode, errorFrame, frame, newSocketId } from './protocol.js';
import { hasShape, WS_WRITTEN_AGAINST, wsVersion } from './ws-internals.js';
import type { Module } from '../lifecycle.js';

// A Pusher Channels server (protocol 7) on the `ws` package, sharing the HTTP port: the HTTP
// server hands it upgrades for /app/{key} (http/upgrade.ts). Unmodified pusher-js and
// laravel-echo connect to it (docs/realtime.md). Activity: a client idle for
// activityTimeout is sent pusher:ping and closed with 4201 when nothing comes back within
// pongTimeout; any frame from the client, WebSocket ping/pong control frames included, counts.

export interface PusherServerOptions extends Omit<ConnectionOptions, 'key' | 'secret'> {
  appId: string;
  key: string;
  secret: string;
  activityTimeoutSeconds: number;
  pongTimeoutSeconds: number;
  maxConnections: number;
  maxMessageBytes: number;
}

export interface RealtimeStats {
  connections: number;
  channels: number;
  subscriptions: number;
  messagesIn: number;
  messagesOut: number;
}

export class PusherServer implements Module {
  readonly name = 'websocket';
  readonly #connections = new Map<WebSocket, Connection>();
  readonly #bySocketId = new Map<string, Connection>();
  readonly #wss: WebSocketServer;
  #sweep: NodeJS.Timeout | null = null;
  #messagesIn = 0;
  #messagesOut = 0;

  constructor(
    readonly options: PusherServerOptions,
    private readonly log: Logger,
    /** What /broadcasting/auth authorized each socket for; checked at subscribe (docs/security.md). */
    readonly grants: ChannelGrants,
    /** This process's subscribers. */
    readonly registry = new ChannelRegistry(),
    /** Where the other instances' subscribers are reached: nowhere (one process) or through Redis (adapter.ts). */
    readonly adapter: ChannelAdapter = new LocalAdapter(registry),
  ) {
    // No compression: frames are small, and a deflate context per socket costs memory (ws docs).
    this.#wss = new WebSocketServer({
      noServer: true,
      clientTracking: false,
      perMessageDeflate: false,
      maxPayload: options.maxMessageBytes,
    });
  }

  get stats(): RealtimeStats {
    return {
      connections: this.#connections.size,
      channels: this.registry.channelCount,
      subscriptions: this.registry.subscriptionCount,
      messagesIn: this.#messagesIn,
      messagesOut: this.#messagesOut,
    };
  }

  start(): void {
    const everyMs = Math.max(200, Math.min(this.options.activityTimeoutSeconds, this.options.pongTimeoutSeconds) * 250);
    this.#sweep = setInterval(() => this.#checkActivity(), everyMs).unref();
  }

  /** The upgrade of a request to /app/{key}?protocol=7... */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.#wss.handleUpgrade(req, socket, head, (ws) => {
      this.#checkShape(ws, socket);
      this.#accept(ws, req);
    });
  }

  #shapeChecked = false;
  /** Once, on the first connection: does ws keep the socket where the fan-out
   * writes (ws-internals.ts)? If not, every socket goes through ws.send. */
  #checkShape(ws: WebSocket, socket: Duplex): void {
    if (this.#shapeChecked) return;
    this.#shapeChecked = true;
    if (hasShape(ws, socket)) return;
    useWsSend();
    this.log.error(
      { ws: wsVersion(), writtenAgainst: `${WS_WRITTEN_AGAINST}.x` },
      'ws does not keep its socket where Gatehouse was written to find it: broadcasts go through ws.send (slower). Update src/realtime/ws-internals.ts (docs/mqtt.md: taking a patch release)',
    );
  }

  #accept(ws: WebSocket, req: IncomingMessage): void {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const key = decodeURIComponent(url.pathname.slice('/app/'.length));
    const protocol = Number(url.searchParams.get('protocol') ?? '0');
    // Refusals are sent as pusher:error before the close, as Pusher does, so clients log why.
    const refuse = (code: number, message: string) => {
      ws.send(errorFrame(code, message));
      ws.close(code, message);
    };
    if (key !== this.options.key) {
      refuse(CloseCode.unknownAppKey, `App key ${key.slice(0, 64)} not in this server`);
      return;
    }
    if (!(protocol >= 7)) {
      refuse(CloseCode.unsupportedProtocol, 'Unsupported protocol version: use 7');
      return;
    }
    if (this.#connections.size >= this.options.maxConnections) {
      refuse(CloseCode.overQuota, 'Over connection quota');
      return;
    }

    const socketId = newSocketId();
    const connection = new Connection(socketId, ws, this.registry, this.adapter, this.options, {
      messageIn: () => this.#messagesIn++,
      messagesOut: (n) => (this.#messagesOut += n),
      log: (fields, message) => this.log.info(fields, message),
      admit: (channel) => this.grants.admit(socketId, channel),
      left: (channel) => this.grants.left(socketId, channel),
    });
    this.#connections.set(ws, connection);
    this.#bySocketId.set(connection.socketId, connection);
    this.grants.opened(connection.socketId);
    ws.on('message', (data, isBinary) => {
      if (isBinary) return connection.send(errorFrame(null, 'Binary frames are not part of the protocol'));
      connection.onMessage(data.toString());
    });
    ws.on('ping', () => connection.touch());
    ws.on('pong', () => connection.touch());
    ws.on('error', (err) => this.log.debug({ err, socketId: connection.socketId }, 'websocket error'));
    ws.on('close', () => {
      connection.leaveAll();
      this.#connections.delete(ws);
      this.#bySocketId.delete(connection.socketId);
      this.grants.closed(connection.socketId);
    });
    connection.send(
      frame('pusher:connection_established', {
        socket_id: connection.socketId,
        activity_timeout: this.options.activityTimeoutSeconds,
      }),
    );
  }

  /** Publishes one event to channels, on every instance (adapter.ts); `except` skips the socket that
   * caused it (Pusher's socket_id), `projectId` skips channels bound to another project. */
  publish(channels: readonly string[], event: string, data: unknown, except?: string, projectId?: number): void {
    const payload = typeof data === 'string' ? data : JSON.stringify(data);
    for (const channel of channels) this.adapter.send(channel, frame(event, payload, channel), except, projectId);
  }

  /** Whether the channel has a subscriber here or on another instance; with `projectId`, one bound to that project. */
  occupied(channel: string, projectId?: number): boolean {
    const here =
      this.registry.subscriberCount(channel) > 0 &&
      (projectId === undefined || this.registry.boundProject(channel) === projectId);
    return here || this.adapter.occupiedElsewhere(channel, projectId);
  }

  /** Ends a connection whose access ended: it leaves its channels now, is told why (pusher:error)
   * and closed with the code (docs/realtime.md: "When access ends"). */
  end(socketId: string, code: number, message: string): void {
    const connection = this.#bySocketId.get(socketId);
    if (!connection) return;
    connection.leaveAll(); // before anything else is published: nothing more reaches it
    connection.send(errorFrame(code, message));
    connection.close(code, message, true);
  }

  #checkActivity(): void {
    const now = Date.now();
    const idleMs = this.options.activityTimeoutSeconds * 1000;
    const pongMs = this.options.pongTimeoutSeconds * 1000;
    for (const connection of this.#connections.values()) {
      if (connection.pingSentAt !== null) {
        if (now - connection.pingSentAt > pongMs)
          connection.close(CloseCode.pongTimeout, 'Pong reply not received in time', true);
      } else if (now - connection.lastActivity > idleMs) {
        connection.send(frame('pusher:ping', {}));
        connection.pingSentAt = now;
      }
    }
  }

  /** Closes every connection with 4200 (clients reconnect at once, to the next server up). */
  async stop(): Promise<void> {
    if (this.#sweep) clearInterval(this.#sweep);
    const closed = [...this.#connections.keys()].map(
      (ws) => new Promise<void>((resolve) => ws.once('close', () => resolve())),
    );
    for (const connection of this.#connections.values())
      connection.close(CloseCode.shuttingDown, 'Server shutting down', true);
    await Promise.race([Promise.all(closed), new Promise((resolve) => setTimeout(resolve, 1500).unref())]);
    this.#wss.close();
  }
}
