import { readFileSync } from 'node:fs';
import { rootCertificates } from 'node:tls';
import { Agent, request } from 'undici';
import type { ClockOffset } from '../clock-offset.js';
import { parseJson, SYNC_JSON_DEPTH } from '../json-depth.js';
import { type CloudState, PROTOCOL_HEADER, PROTOCOL_VERSION, SENT_AT_HEADER } from './protocol.js';

// The edge's HTTP client to its cloud (issue 26 items 2, 10). Every request carries the
// protocol version and the edge's clock, and is given up after sync.requestTimeoutMs (a long
// poll: after its wait plus that), so a black-holed link (connections accepted, nothing
// answered) is offline, not waited on. TLS trusts the system's CAs plus cloud.caFile. Every
// answer's server_time measures the clock offset (src/clock-offset.ts), long polls included: a
// plain request's at the round trip's middle, a long poll's at its arrival less half the
// latency of the last plain request (the cloud wrote its time when it answered, not when asked).

export class LinkError extends Error {
  constructor(
    message: string,
    /** network: no answer (refused, reset, timed out); http: an answer with this status. */
    readonly kind: 'network' | 'http',
    readonly status: number | null = null,
    readonly body: Record<string, unknown> | null = null,
  ) {
    super(message);
  }
}

export interface LinkOptions {
  url: string;
  token: string;
  caFile: string | null;
  timeoutMs: number;
  appVersion: string;
  /** This box's clock (the one its scans are stamped with): the offset is measured against it. */
  now: () => number;
  /** Takes every measurement of the cloud's clock. */
  offset: ClockOffset;
  /** Told the cloud's run and high-water mark each answer carries (docs/sync.md: a cloud restored from a backup). */
  onCloud?: (cloud: CloudState) => void;
}

export class CloudLink {
  readonly #agent: Agent;
  readonly #base: string;
  lastLatencyMs: number | null = null;
  /** performance.now() of the last answer received (any status but a failure to connect). */
  lastAnswerAt = -1;

  constructor(private readonly options: LinkOptions) {
    this.#base = options.url.replace(/\/+$/, '');
    const ca = options.caFile ? [...rootCertificates, readFileSync(options.caFile, 'utf8')] : undefined;
    this.#agent = new Agent({ connect: { ...(ca ? { ca } : {}), timeout: options.timeoutMs }, keepAliveTimeout: 30_000, headersTimeout: 0, bodyTimeout: 0 });
  }

  async close(): Promise<void> {
    await this.#agent.destroy();
  }

  /** JSON request; resolves to the answer's `data`; throws LinkError. `waitMs`: a long poll's hold. */
  async call<T>(method: 'GET' | 'POST', path: string, options: { body?: unknown; waitMs?: number; signal?: AbortSignal } = {}): Promise<T> {
    const started = this.options.now();
    const monoStarted = performance.now();
    const timeout = AbortSignal.timeout(this.options.timeoutMs + (options.waitMs ?? 0));
    const signal = options.signal ? AbortSignal.any([timeout, options.signal]) : timeout;
    let status: number;
    let text: string;
    try {
      const res = await request(`${this.#base}${path}`, {
        method,
        dispatcher: this.#agent,
        signal,
        headers: {
          authorization: `Bearer ${this.options.token}`,
          accept: 'application/json',
          'user-agent': `gatehouse-edge/${this.options.appVersion}`,
          [PROTOCOL_HEADER]: String(PROTOCOL_VERSION),
          [SENT_AT_HEADER]: String(started),
          ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
      });
      status = res.statusCode;
      text = await res.body.text();
    } catch (err) {
      const e = err as Error & { code?: string };
      const what = timeout.aborted ? `no answer within ${this.options.timeoutMs + (options.waitMs ?? 0)} ms` : (e.code ?? e.message);
      throw new LinkError(`${method} ${path}: ${what}`, 'network');
    }
    const monoFinished = performance.now();
    this.lastAnswerAt = monoFinished;
    let parsed: Record<string, unknown> | null = null;
    try {
      parsed = text ? (parseJson(text, SYNC_JSON_DEPTH) as Record<string, unknown>) : null;
    } catch {
      parsed = null;
    }
    if (status < 200 || status >= 300) {
      const message = typeof parsed?.message === 'string' ? parsed.message : `HTTP ${status}`;
      throw new LinkError(`${method} ${path}: ${status} ${message}`, 'http', status, parsed);
    }
    const data = (parsed?.data ?? null) as (T & { server_time?: string; cloud?: CloudState }) | null;
    if (data === null) throw new LinkError(`${method} ${path}: the answer has no data`, 'http', status, parsed);
    if (data.cloud && typeof data.cloud.incarnation === 'string') this.options.onCloud?.(data.cloud);
    const server = typeof data.server_time === 'string' ? Date.parse(data.server_time) : Number.NaN;
    if (Number.isFinite(server)) {
      if (options.waitMs) this.options.offset.measured(server, monoFinished - (this.lastLatencyMs ?? 0) / 2);
      else {
        this.options.offset.measured(server, (monoStarted + monoFinished) / 2);
        this.lastLatencyMs = Math.round(monoFinished - monoStarted);
      }
    }
    return data;
  }
}
