import { readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { createServer as createTlsServer } from 'node:tls';
import { createWebSocketStream, WebSocketServer } from 'ws';
import { listen } from '../listen.js';
import type { Logger } from '../logger.js';

// Where MQTT connections come in (docs/mqtt.md): TCP (TCP_NODELAY: a decision goes out at once),
// TLS when a certificate and key are set, and MQTT over WebSocket at /mqtt on the HTTP port. Each
// connection's stream is handed to the broker (broker.ts), which knows nothing of how it came.

export interface ListenerOptions {
  host: string;
  port: number;
  tls: { port: number; certFile: string | null; keyFile: string | null };
}

/** Takes one connection's byte stream (with the upgrade request for a WebSocket). */
export type ConnectionHandler = (stream: Duplex, req?: IncomingMessage) => void;

export class MqttListeners {
  readonly #servers: Server[] = [];
  readonly #ws = new WebSocketServer({ noServer: true, perMessageDeflate: false });

  constructor(
    private readonly options: ListenerOptions,
    private readonly handle: ConnectionHandler,
    private readonly log: Logger,
  ) {}

  get ports(): { tcp: number; tls: number | null } {
    const port = (s: Server | undefined) => (s?.address() as AddressInfo | null)?.port ?? 0;
    return { tcp: port(this.#servers[0]), tls: this.#servers[1] ? port(this.#servers[1]) : null };
  }

  async listen(): Promise<void> {
    const { options } = this;
    this.#servers.push(createServer({ noDelay: true }, (socket) => this.handle(socket)));
    if (options.tls.certFile && options.tls.keyFile) {
      const tls = createTlsServer(
        { cert: readFileSync(options.tls.certFile), key: readFileSync(options.tls.keyFile) },
        (socket) => this.handle(socket),
      );
      tls.on('secureConnection', (socket) => socket.setNoDelay(true));
      tls.on('tlsClientError', (err) => this.log.debug({ err: err.message }, 'mqtt tls handshake failed'));
      this.#servers.push(tls);
    }
    await Promise.all(
      this.#servers.map((server, i) =>
        i === 0
          ? listen(server, options.port, options.host, 'mqtt.port')
          : listen(server, options.tls.port, options.host, 'mqtt.tls.port'),
      ),
    );
  }

  /** MQTT over WebSocket: the HTTP server's upgrades to /mqtt (http/upgrade.ts). */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.#ws.handleUpgrade(req, socket, head, (ws) => {
      (socket as Socket).setNoDelay?.(true);
      const stream = createWebSocketStream(ws);
      stream.on('error', () => ws.terminate());
      this.handle(stream, req);
    });
  }

  /** Stops taking connections (the ones open stay: the broker closes them). */
  close(): void {
    for (const server of this.#servers.splice(0)) server.close();
    this.#ws.close();
  }
}
