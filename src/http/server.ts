import { listen } from '../listen.js';
import { readFileSync } from 'node:fs';
import { createServer as createHttp, type Server } from 'node:http';
import { createServer as createHttps } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Config } from '../config/schema.js';
import type { Logger } from '../logger.js';
import type { UpgradeHandler } from './upgrade.js';

// The listening side: one plain HTTP server (WebSocket upgrades share it: http/upgrade.ts) and an
// optional HTTPS one, both serving the same request handler. stop() stops accepting, lets
// in-flight requests finish (up to the grace period), then closes what is left.

type Handler = Parameters<typeof createHttp>[1];

export class HttpServer {
  readonly servers: Server[] = [];
  #inFlight = 0;

  constructor(
    private readonly config: Pick<Config, 'http' | 'https'>,
    private readonly handler: NonNullable<Handler>,
    private readonly log: Logger,
    private readonly upgrade: UpgradeHandler | null = null,
  ) {}

  get httpServer(): Server {
    const server = this.servers[0];
    if (!server) throw new Error('http server not started');
    return server;
  }

  port(index = 0): number {
    return (this.servers[index]?.address() as AddressInfo | null)?.port ?? 0;
  }

  async start(): Promise<void> {
    const counted: NonNullable<Handler> = (req, res) => {
      this.#inFlight++;
      res.once('close', () => this.#inFlight--);
      this.handler(req, res);
    };
    const { http, https } = this.config;
    this.servers.push(createHttp({ keepAliveTimeout: 5000 }, counted));
    if (https.certFile && https.keyFile) {
      this.servers.push(createHttps({ cert: readFileSync(https.certFile), key: readFileSync(https.keyFile) }, counted));
    }
    if (this.upgrade) for (const server of this.servers) server.on('upgrade', this.upgrade);
    await Promise.all(
      this.servers.map((server, i) =>
        i === 0
          ? listen(server, http.port, http.host, 'http.port')
          : listen(server, https.port, http.host, 'https.port'),
      ),
    );
    this.log.info({ port: this.port(0), httpsPort: this.servers[1] ? this.port(1) : undefined }, 'http listening');
  }

  async stop(graceMs: number): Promise<void> {
    // Listening stops here; the servers' 'close' waits for every socket, and the upgraded ones
    // (WebSocket, MQTT over WebSocket) belong to the realtime and MQTT modules, which close them
    // when they stop, after this one (the reverse of the start order): not waited for here.
    const closed = this.servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve())));
    void Promise.all(closed).then(() => this.log.info('http closed'));
    for (const server of this.servers) server.closeIdleConnections();
    const deadline = Date.now() + graceMs;
    while (this.#inFlight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    if (this.#inFlight > 0) this.log.warn({ inFlight: this.#inFlight }, 'grace period over, closing connections');
    for (const server of this.servers) server.closeAllConnections();
  }
}
