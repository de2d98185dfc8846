import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from 'node:http';

// An HTTP proxy between an edge and its cloud that can hold back one answer (docs/sync.md: the
// edge's replica). Each request goes on to the cloud at once, so the cloud computes its answer
// then; the answer is read whole and, when a hold matches it, kept until the test releases it,
// while every other request and answer passes. So a page the cloud computed before a change can
// be delivered after it, deterministically, not by timing. It sits behind the edge's TcpProxy
// (sync-world.ts), which still cuts and black-holes the link.

export interface HeldAnswer {
  method: string;
  path: string;
  /** performance.now() when the request reached this hop: an answer to a request sent before a point can be told apart. */
  sentAt: number;
  status: number;
  body: string;
}

export interface Hold {
  /** Resolves with the first answer the hold matched, once it is held. */
  reached: Promise<HeldAnswer>;
  /** Sends the held answer on; a hold holds one answer only. */
  release(): void;
}

type Match = (answer: HeldAnswer) => boolean;

/** Hop-by-hop and framing headers: the held answer is sent again whole, with its own length. */
const DROPPED = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length']);

export class AnswerHold {
  #server: Server | null = null;
  readonly #holds: { match: Match; reached: (a: HeldAnswer) => void; released: Promise<void>; done: boolean }[] = [];

  constructor(public targetPort: number) {}

  async start(): Promise<number> {
    this.#server = createServer((req, res) => void this.#forward(req, res));
    await new Promise<void>((resolve) => this.#server!.listen(0, '127.0.0.1', resolve));
    return this.port;
  }

  get port(): number {
    const address = this.#server?.address();
    return typeof address === 'object' && address ? address.port : 0;
  }

  /** Holds the first answer `match` accepts (the answers of requests already under way included). */
  hold(match: Match): Hold {
    let reached!: (a: HeldAnswer) => void;
    let release!: () => void;
    const entry = {
      match,
      reached: (a: HeldAnswer) => reached(a),
      released: new Promise<void>((r) => (release = r)),
      done: false,
    };
    this.#holds.push(entry);
    return { reached: new Promise<HeldAnswer>((r) => (reached = r)), release };
  }

  async stop(): Promise<void> {
    this.#server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.#server ? this.#server.close(() => resolve()) : resolve()));
  }

  async #forward(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const sentAt = performance.now();
    try {
      const body = await read(req);
      const upstream = await new Promise<IncomingMessage>((resolve, reject) => {
        const out = request(
          { host: '127.0.0.1', port: this.targetPort, method: req.method, path: req.url, headers: req.headers },
          resolve,
        );
        out.on('error', reject);
        out.end(body);
      });
      const answer = await read(upstream);
      const seen: HeldAnswer = {
        sentAt,
        method: req.method ?? 'GET',
        path: req.url ?? '/',
        status: upstream.statusCode ?? 502,
        body: answer.toString('utf8'),
      };
      const hold = this.#holds.find((h) => !h.done && h.match(seen));
      if (hold) {
        hold.done = true;
        hold.reached(seen);
        await hold.released;
      }
      const headers = Object.fromEntries(Object.entries(upstream.headers).filter(([name]) => !DROPPED.has(name)));
      res.writeHead(seen.status, { ...headers, 'content-length': String(answer.length) });
      res.end(answer);
    } catch {
      res.destroy(); // the edge sees a failed request, as with a dropped link
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
