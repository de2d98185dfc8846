import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAppliance, type TestAppliance } from '../helpers/appliance.js';

// A body that stalls is answered 408 after http.bodyTimeoutMs and its connection closed
// (docs/security.md, attack 12: a slow body held a connection for Node's 300 s request timeout). Raw
// sockets, since no HTTP client sends half a body on purpose.

const TIMEOUT_MS = 2000;

interface RawExchange {
  /** Everything the server sent until it closed the connection. */
  text: string;
  status: number;
  body: any;
}

/** Sends `head` and `parts`, then waits (at most 20 s) for the server to close the connection. */
function rawExchange(port: number, head: string, parts: string[], pauseMs = 0): Promise<RawExchange> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the connection was still open after 20 s; received: ${JSON.stringify(text)}`));
    }, 20_000);
    socket.on('connect', async () => {
      socket.write(head);
      for (const part of parts) {
        if (pauseMs) await new Promise((r) => setTimeout(r, pauseMs));
        socket.write(part);
      }
    });
    socket.on('data', (chunk) => (text += chunk.toString('utf8')));
    socket.on('error', () => undefined); // a reset after the answer is a close too
    socket.on('close', () => {
      clearTimeout(timer);
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
      const raw = text.slice(text.indexOf('\r\n\r\n') + 4);
      let body: unknown;
      try {
        body = JSON.parse(raw);
      } catch {
        body = raw;
      }
      resolve({ text, status, body });
    });
  });
}

describe('request bodies', () => {
  let gh: TestAppliance;
  let token: string;

  beforeAll(async () => {
    gh = await startAppliance({ GATEHOUSE_HTTP_BODY_TIMEOUT_MS: String(TIMEOUT_MS) });
    token = await gh.token();
  });
  afterAll(() => gh.destroy());

  const head = (path: string, length: number | 'chunked', extra = '') =>
    `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${length === 'chunked' ? 'Transfer-Encoding: chunked' : `Content-Length: ${length}`}\r\n${extra}\r\n`;

  it('answers 408 in the envelope to a body that stops halfway, and closes the connection', async () => {
    const body = JSON.stringify({ name: 'Slow', email: 'slow@example.test', password: 'long enough pw' });
    const res = await rawExchange(
      gh.app.httpPort,
      head('/api/v1/users', body.length, `Authorization: Bearer ${token}\r\n`),
      [body.slice(0, 20)],
    );
    expect(res.status).toBe(408);
    expect(res.body).toEqual({ message: `The request body did not arrive within ${TIMEOUT_MS / 1000} s.` });
    expect(res.text.toLowerCase()).toContain('connection: close');
    const users = await gh.request('GET', '/api/v1/users', { token });
    expect(users.body.data.map((u: { email: string }) => u.email)).not.toContain('slow@example.test');
  });

  it('answers 408 to an anonymous webhook whose chunked body stalls, in the webhook envelope', async () => {
    const res = await rawExchange(gh.app.httpPort, head('/webhook/v1/access-event', 'chunked'), ['5\r\n{"rea\r\n']);
    expect(res.status).toBe(408);
    expect(res.body).toEqual({
      error: 'request_timeout',
      message: `The request body did not arrive within ${TIMEOUT_MS / 1000} s.`,
    });
  });

  it('closes the connection of a body nobody reads within seconds (the keep-alive timeout), not minutes', async () => {
    const res = await rawExchange(
      gh.app.httpPort,
      `GET /health HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n`,
      ['{"x":'],
    );
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok' });
  });

  it('takes a whole body that arrives in parts within the time', async () => {
    const body = JSON.stringify({ name: 'Parts', email: 'parts@example.test', password: 'long enough pw' });
    const res = await rawExchange(
      gh.app.httpPort,
      head('/api/v1/users', body.length, `Authorization: Bearer ${token}\r\nConnection: close\r\n`),
      [body.slice(0, 10), body.slice(10, 30), body.slice(30)],
      20,
    );
    expect(res.status).toBe(201);
    expect(res.body.data.email).toBe('parts@example.test');
  });

  it('keeps serving after stalled bodies', async () => {
    expect((await gh.request('GET', '/api/v1/me', { token })).status).toBe(200);
  });
});
