import { isIP } from 'node:net';
import { Agent, request } from 'undici';
import type { ReceiverPolicy } from './receiver-policy.js';

// One HTTP attempt of a delivery (docs/webhooks-outgoing.md): POST with keep-alive connections
// (undici, which Node's fetch is built on), a timeout over the whole exchange, the answer read
// up to a bound and the rest dropped, no redirect followed, and every connection's address
// checked by the receiver policy as it is resolved (receiver-policy.ts).

export interface SendOptions {
  timeoutMs: number;
  maxResponseBytes: number;
}

export interface SendResult {
  statusCode: number | null;
  durationMs: number;
  /** Why the attempt failed, when it did; null on a 2xx. */
  error: string | null;
  /** The first maxResponseBytes of the answer. */
  body: string;
}

export class Sender {
  readonly #agent: Agent;

  constructor(
    private readonly policy: ReceiverPolicy,
    private readonly options: SendOptions,
  ) {
    this.#agent = new Agent({
      connect: { lookup: policy.lookup as never, timeout: options.timeoutMs },
      keepAliveTimeout: 10_000,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
    });
  }

  async send(url: string, headers: Record<string, string>, body: string): Promise<SendResult> {
    const started = performance.now();
    const took = () => Math.round(performance.now() - started);
    const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
    // An address in the URL itself is never looked up: checked here.
    const problem = isIP(host) ? this.policy.addressProblem(host) : null;
    if (problem)
      return {
        statusCode: null,
        durationMs: 0,
        error: `receiver address ${host} is ${problem}, not allowed`,
        body: '',
      };
    try {
      const response = await request(url, {
        method: 'POST',
        dispatcher: this.#agent,
        headers: { 'content-type': 'application/json', 'user-agent': 'Gatehouse-Webhooks/1', ...headers },
        body,
        signal: AbortSignal.timeout(this.options.timeoutMs),
      });
      const text = await readBounded(response.body, this.options.maxResponseBytes);
      const ok = response.statusCode >= 200 && response.statusCode < 300;
      const error = ok
        ? null
        : response.statusCode >= 300 && response.statusCode < 400
          ? `redirect (${response.statusCode}) not followed`
          : `receiver answered ${response.statusCode}`;
      return { statusCode: response.statusCode, durationMs: took(), error, body: text };
    } catch (err) {
      const e = err as Error & { code?: string; cause?: Error & { code?: string } };
      const reason =
        e.name === 'TimeoutError' || e.name === 'AbortError'
          ? `no answer within ${this.options.timeoutMs} ms`
          : (e.cause?.message ?? e.message);
      return { statusCode: null, durationMs: took(), error: reason, body: '' };
    }
  }

  async close(): Promise<void> {
    await this.#agent.close();
  }
}

/** The answer's first `max` bytes; past them the body is dropped (and its connection with it). */
async function readBounded(body: AsyncIterable<Buffer> & { destroy(): void }, max: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    if (size < max) chunks.push(chunk.subarray(0, max - size));
    size += chunk.length;
    if (size > max) {
      body.destroy();
      break;
    }
  }
  return Buffer.concat(chunks).toString('utf8');
}
