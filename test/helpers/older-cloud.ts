import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from 'node:http';

// A cloud of an older build, played by an HTTP hop in front of a real one (docs/sync.md: protocol
// versions): a request naming a sync protocol version outside `served` is answered 409
// sync_protocol_unsupported with the versions served, as the older build's pipeline answers it;
// the others go on to the real cloud, whose hello is made to name `served` too. The real cloud
// answers a request of version 1 as a cloud of that version does (no public keys; an upload with
// the later version's fields refused). Setting `served` to more versions is the cloud updated.
// It sits behind the edge's TcpProxy (sync-world.ts) like AnswerHold.

const DROPPED = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length']);

export class OlderCloud {
  #server: Server | null = null;
  /** The protocol version each request named, in order. */
  readonly spoken: number[] = [];
  /** The bodies of the uploads passed on. */
  readonly uploads: { items: Record<string, unknown>[] }[] = [];

  constructor(
    public served: number[],
    public targetPort = 0,
  ) {}

  async start(): Promise<number> {
    this.#server = createServer((req, res) => void this.#forward(req, res));
    await new Promise<void>((resolve) => this.#server!.listen(0, '127.0.0.1', resolve));
    return this.port;
  }

  get port(): number {
    const address = this.#server?.address();
    return typeof address === 'object' && address ? address.port : 0;
  }

  async stop(): Promise<void> {
    this.#server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.#server ? this.#server.close(() => resolve()) : resolve()));
  }

  async #forward(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      const body = await read(req);
      const version = Number(req.headers['gatehouse-sync-protocol']);
      this.spoken.push(version);
      if (!this.served.includes(version)) {
        const refusal = Buffer.from(
          JSON.stringify({
            message: `This cloud speaks sync protocol ${this.served.join(', ')}.`,
            code: 'sync_protocol_unsupported',
            supported_protocols: this.served,
          }),
        );
        res.writeHead(409, { 'content-type': 'application/json', 'content-length': String(refusal.length) });
        res.end(refusal);
        return;
      }
      if (req.url?.endsWith('/sync/upload')) this.uploads.push(JSON.parse(body.toString('utf8')));
      const upstream = await new Promise<IncomingMessage>((resolve, reject) => {
        const out = request(
          { host: '127.0.0.1', port: this.targetPort, method: req.method, path: req.url, headers: req.headers },
          resolve,
        );
        out.on('error', reject);
        out.end(body);
      });
      let answer = await read(upstream);
      if (req.url?.startsWith('/api/v1/sync/hello') && upstream.statusCode === 200) {
        const hello = JSON.parse(answer.toString('utf8'));
        hello.data.supported_protocols = this.served;
        answer = Buffer.from(JSON.stringify(hello));
      }
      const headers = Object.fromEntries(Object.entries(upstream.headers).filter(([name]) => !DROPPED.has(name)));
      res.writeHead(upstream.statusCode ?? 502, { ...headers, 'content-length': String(answer.length) });
      res.end(answer);
    } catch {
      res.destroy();
    }
  }
}

function read(stream: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', reject);
  });
}
