import { createServer, type Server, type Socket, connect } from 'node:net';

// A TCP proxy between an edge and its cloud, inside the test (docs/sync.md: tests with a link that
// can be cut, black-holed and restored):
// - pass: bytes flow both ways (optionally each chunk from the target delayed);
// - cut: every open connection is reset and new ones are reset at once (a dead link);
// - blackhole: connections are accepted and bytes read, but nothing is forwarded or answered
//   (a link that hangs: only timeouts notice);
// - drop-answers: requests reach the target, its answers are dropped (sent, never acknowledged).

export type ProxyMode = 'pass' | 'cut' | 'blackhole' | 'drop-answers';

export class TcpProxy {
  #server: Server | null = null;
  #mode: ProxyMode = 'pass';
  readonly #sockets = new Set<Socket>();
  /** Milliseconds each chunk from the target waits before it is passed on. */
  delayMs = 0;
  connections = 0;

  constructor(public targetPort: number) {}

  async start(): Promise<number> {
    this.#server = createServer((client) => this.#accept(client));
    await new Promise<void>((resolve) => this.#server!.listen(0, '127.0.0.1', resolve));
    return this.port;
  }

  get port(): number {
    const address = this.#server?.address();
    return typeof address === 'object' && address ? address.port : 0;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get mode(): ProxyMode {
    return this.#mode;
  }

  /** Cuts or black-holes the link: open connections go at once (reset), later ones meet the mode. */
  set(mode: ProxyMode): void {
    this.#mode = mode;
    if (mode === 'cut' || mode === 'blackhole') for (const s of this.#sockets) s.resetAndDestroy();
  }

  async stop(): Promise<void> {
    for (const s of this.#sockets) s.destroy();
    await new Promise<void>((resolve) => (this.#server ? this.#server.close(() => resolve()) : resolve()));
  }

  #accept(client: Socket): void {
    this.connections++;
    this.#sockets.add(client);
    client.on('close', () => this.#sockets.delete(client));
    client.on('error', () => {});
    if (this.#mode === 'cut') {
      client.resetAndDestroy();
      return;
    }
    if (this.#mode === 'blackhole') {
      client.on('data', () => {}); // read and drop: the other side waits for an answer that never comes
      return;
    }
    const upstream = connect(this.targetPort, '127.0.0.1');
    this.#sockets.add(upstream);
    upstream.on('close', () => {
      this.#sockets.delete(upstream);
      client.destroy();
    });
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    client.on('data', (chunk) => {
      if (this.#mode === 'pass' || this.#mode === 'drop-answers') upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (this.#mode !== 'pass') return;
      if (this.delayMs > 0) {
        upstream.pause();
        setTimeout(() => {
          if (this.#mode === 'pass' && !client.destroyed) client.write(chunk);
          upstream.resume();
        }, this.delayMs);
      } else client.write(chunk);
    });
  }
}
