import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

// A real HTTP receiver on a free loopback port for outgoing-webhook tests: it records every
// request (raw body bytes and headers) and answers as the test says, by default 200.

export interface Received {
  headers: IncomingMessage['headers'];
  raw: string;
  body: { id: string; event: string; timestamp: string; project_id: number; data: Record<string, any> };
  at: number;
}

export type Responder = (req: Received, res: ServerResponse) => void | Promise<void>;

export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** What the receiver does with the next requests (default: 200 ok). */
  respond(responder: Responder): void;
  /** Resolves once `n` requests have arrived (of `event`, when given). */
  waitFor(n: number, event?: string, timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
}

export async function startReceiver(path = '/hook', port = 0): Promise<Receiver> {
  const received: Received[] = [];
  let responder: Responder = (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('ok');
  };
  const waiters: (() => void)[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: Received['body'];
      try {
        body = JSON.parse(raw);
      } catch {
        body = { id: '', event: '', timestamp: '', project_id: 0, data: {} };
      }
      const entry = { headers: req.headers, raw, body, at: Date.now() };
      received.push(entry);
      for (const w of waiters.splice(0)) w();
      void responder(entry, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${bound}${path}`,
    port: bound,
    received,
    respond(r) {
      responder = r;
    },
    async waitFor(n, event, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      const matching = () => received.filter((r) => event === undefined || r.body.event === event);
      while (matching().length < n) {
        const left = deadline - Date.now();
        if (left <= 0)
          throw new Error(`receiver: ${matching().length} of ${n} ${event ?? 'requests'} within ${timeoutMs} ms`);
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, left);
          waiters.push(() => {
            clearTimeout(t);
            resolve();
          });
        });
      }
      return matching();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
