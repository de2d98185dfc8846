import { connect } from 'node:net';
import type { TestResponse } from '../../helpers/appliance.js';
import type { Req } from './world.js';

// Requests written on one connection in one write (HTTP/1.1 pipelining). The appliance reads them
// in one go, and Node's HTTP server starts handling each as soon as it is parsed, before any is
// answered: every later one meets the earlier ones still in flight, however loaded the machine
// is (no timing involved). The answers come back in order on the connection.

/** The request's bytes, as a client would write them. */
function encode(req: Req, host: string): string {
  const body = req.json !== undefined ? JSON.stringify(req.json) : (req.raw ?? '');
  const headers: Record<string, string> = {
    Host: host,
    Accept: 'application/json',
    ...(req.json !== undefined ? { 'Content-Type': 'application/json' } : req.type ? { 'Content-Type': req.type } : {}),
    ...(req.token ? { Authorization: `Bearer ${req.token}` } : {}),
    ...req.headers,
    'Content-Length': String(Buffer.byteLength(body)),
  };
  return [
    `${req.method} ${req.path} HTTP/1.1`,
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
    '',
    body,
  ].join('\r\n');
}

/** One response off the front of `buffered`, or null until all of it is there (Content-Length framed). */
function take(buffered: Buffer): { response: TestResponse; rest: Buffer } | null {
  const end = buffered.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const [statusLine, ...lines] = buffered.subarray(0, end).toString('latin1').split('\r\n');
  const headers = new Headers();
  for (const line of lines) headers.append(line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trim());
  if (headers.has('transfer-encoding')) throw new Error(`a chunked answer: ${statusLine}`);
  const length = Number(headers.get('content-length') ?? 0);
  if (buffered.length < end + 4 + length) return null;
  const text = buffered.subarray(end + 4, end + 4 + length).toString('utf8');
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  return {
    response: { status: Number(statusLine!.split(' ')[1]), headers, text, body },
    rest: buffered.subarray(end + 4 + length),
  };
}

/** Writes every request on one new connection in one write; answers their responses in order. */
export function pipelined(url: string, reqs: readonly Req[]): Promise<TestResponse[]> {
  const { hostname, port, host } = new URL(url);
  return new Promise((resolve, reject) => {
    const responses: TestResponse[] = [];
    let buffered: Buffer = Buffer.alloc(0);
    const socket = connect(Number(port), hostname, () => socket.write(reqs.map((r) => encode(r, host)).join('')));
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      try {
        for (let next = take(buffered); next; next = take(buffered)) {
          responses.push(next.response);
          buffered = next.rest;
        }
      } catch (err) {
        socket.destroy();
        reject(err);
        return;
      }
      if (responses.length === reqs.length) {
        socket.destroy();
        resolve(responses);
      }
    });
    socket.once('error', reject);
    socket.once('close', () =>
      reject(new Error(`the connection closed after ${responses.length} of ${reqs.length} answers`)),
    );
  });
}

/** Sends the request's headers and only half of its body, then waits: the answer the appliance
 * gives a body that stops arriving (408 once http.bodyTimeoutMs has passed). */
export function stalled(url: string, req: Req): Promise<TestResponse> {
  const { hostname, port, host } = new URL(url);
  const whole = encode(req, host);
  const bodyAt = whole.indexOf('\r\n\r\n') + 4;
  const sent = whole.slice(0, bodyAt + Math.floor((whole.length - bodyAt) / 2));
  return new Promise((resolve, reject) => {
    let buffered: Buffer = Buffer.alloc(0);
    const socket = connect(Number(port), hostname, () => socket.write(sent));
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      const next = take(buffered);
      if (!next) return;
      socket.destroy();
      resolve(next.response);
    });
    socket.once('error', reject);
    socket.once('close', () => reject(new Error('the connection closed without an answer')));
  });
}
