import { readFileSync } from 'node:fs';
import { rootCertificates } from 'node:tls';
import { Agent, type Dispatcher, request } from 'undici';
import { z } from 'zod';
import type { ClockOffset } from '../src/clock-offset.js';
import { parseJson, SYNC_JSON_DEPTH } from '../src/json-depth.js';
import { PROTOCOL_HEADER, PROTOCOL_VERSION } from '../src/http/sync-protocol-version.js';
import { CloudUrls, type UrlSwitch } from './cloud-urls.js';
import { cloudStateSchema, type CloudState, SENT_AT_HEADER } from './protocol.js';

// The edge's HTTP client to its cloud (docs/sync.md), at one of its URLs (cloud-urls.ts). Every
// request carries the protocol version agreed at the hello and the edge's clock, and is given up
// after sync.requestTimeoutMs (a long poll: after its wait plus that), so a black-holed link
// (connections accepted, nothing answered) is offline, not waited on. TLS trusts the system's
// CAs plus cloud.caFile. Every answer's server_time measures the clock offset
// (src/clock-offset.ts), long polls included: a plain request's at the round trip's middle, a
// long poll's at its arrival less half the latency of the last plain request (the cloud wrote its
// time when it answered, not when asked).
//
// The edge does not trust what answers (docs/sync.md: what the edge takes from its cloud): an
// answer is read up to sync.maxAnswerBytes and no further (a declared length over it is refused
// before a byte is read; the connection is closed), and it is taken only when it follows the
// protocol's schema for the request; anything else is a LinkError saying what was wrong. A 429
// or 503 says when to come back (Retry-After): the loops wait that long (edge-sync.ts).

/** What went wrong: no answer (refused, reset, timed out); an answer with an error status; an
 * answer larger than this edge reads; an answer that is not JSON or not the protocol's shape. */
export type LinkErrorKind = 'network' | 'http' | 'too_large' | 'malformed';

export class LinkError extends Error {
  constructor(
    message: string,
    readonly kind: LinkErrorKind,
    readonly status: number | null = null,
    readonly body: Record<string, unknown> | null = null,
    /** A 429 or 503 that said when to come back (Retry-After), in ms. */
    readonly retryAfterMs: number | null = null,
  ) {
    super(message);
  }
}

/** No answer from the cloud itself, so another of its URLs may do (docs/sync.md: several cloud URLs): nothing came
 * back (refused, reset, timed out), or a 5xx, from what stands in front of it or from an instance in trouble. A 503
 * that says when to come back is the cloud's own (busy: the loops wait that long); a 4xx is the cloud's answer. */
export function unanswered(err: LinkError): boolean {
  if (err.kind === 'network') return true;
  if (err.kind !== 'http' || err.status === null || err.status < 500) return false;
  return !(err.status === 503 && err.retryAfterMs !== null);
}

/** The last URL's failure, saying that every other one failed too. */
function noneAnswered(err: LinkError): LinkError {
  const message = `${err.message} (no other cloud URL answered either)`;
  return new LinkError(message, err.kind, err.status, err.body, err.retryAfterMs);
}

/** A plain-http cloud URL outside this box (loopback is this box): the sync token and all that
 * syncs travel readable, and changeable, by anything on the path. */
export function inClear(url: string): boolean {
  const u = new URL(url);
  if (u.protocol !== 'http:') return false;
  const host = u.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const loopback =
    host === 'localhost' ||
    host.endsWith('.localhost') ||
    /^127\./.test(host) ||
    host === '::1' ||
    /^::ffff:7f[0-9a-f]{2}:/.test(host);
  return !loopback;
}

/** The most of a cloud's own words (an error's message) an error of the edge repeats: they reach its status and log. */
const QUOTED = 300;
export const quote = (text: string) => (text.length > QUOTED ? `${text.slice(0, QUOTED)}…` : text);

/** Every answer's run of the cloud and its time, when they are well
 * formed (an answer's own schema says whether it must carry them). */
const answerMeta = z.object({ cloud: cloudStateSchema.optional(), server_time: z.string().optional() });

/** `value` as `schema` takes it, or a LinkError naming the first thing wrong ("changes.0.entity: …"). */
export function followingProtocol<S extends z.ZodType>(schema: S, value: unknown, what: string): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const [first, ...more] = result.error.issues;
  const where = first && first.path.length > 0 ? `${first.path.join('.')}: ` : '';
  const detail = `${where}${first?.message ?? 'invalid'}${more.length > 0 ? ` (and ${more.length} more)` : ''}`;
  throw new LinkError(`${what}: the answer does not follow the sync protocol: ${quote(detail)}`, 'malformed');
}

export interface LinkOptions {
  /** The cloud's URLs, one or several instances on one database, in the order they are tried (docs/sync.md). */
  urls: readonly string[];
  token: string;
  caFile: string | null;
  timeoutMs: number;
  /** The largest answer read (sync.maxAnswerBytes). */
  maxAnswerBytes: number;
  appVersion: string;
  /** This box's clock (the one its scans are stamped with): the offset is measured against it. */
  now: () => number;
  /** Takes every measurement of the cloud's clock. */
  offset: ClockOffset;
  /** Told the cloud's run and high-water mark each answer carries (docs/sync.md: a cloud restored from a backup). */
  onCloud?: (cloud: CloudState) => void;
  /** Told when the link moves to another of the cloud's URLs, the one in use having stopped answering. */
  onSwitch?: (switched: UrlSwitch) => void;
}

interface CallOptions {
  body?: unknown;
  waitMs?: number;
  signal?: AbortSignal;
}

export class CloudLink {
  readonly #agent: Agent;
  /** The cloud's URLs and which one is in use (cloud-urls.ts). */
  readonly urls: CloudUrls;
  lastLatencyMs: number | null = null;
  /** performance.now() of the last answer received (any status but a failure to connect). */
  lastAnswerAt = -1;
  /** The protocol version every request names: this build's, or the older one agreed at the hello
   * with an older cloud (edge-hello.ts; docs/sync.md: protocol versions). */
  protocol = PROTOCOL_VERSION;

  constructor(private readonly options: LinkOptions) {
    this.urls = new CloudUrls(options.urls, (switched) => options.onSwitch?.(switched));
    const ca = options.caFile ? [...rootCertificates, readFileSync(options.caFile, 'utf8')] : undefined;
    this.#agent = new Agent({
      connect: { ...(ca ? { ca } : {}), timeout: options.timeoutMs },
      keepAliveTimeout: 30_000,
      headersTimeout: 0,
      bodyTimeout: 0,
    });
  }

  async close(): Promise<void> {
    await this.#agent.destroy();
  }

  /** JSON request; resolves to the answer's `data` as `schema` takes it; throws LinkError. `waitMs`: a long poll's
   * hold. Made to the cloud URL in use; when that one does not answer, to the next at once, each URL once at most. */
  async call<S extends z.ZodType>(
    method: 'GET' | 'POST',
    path: string,
    schema: S,
    options: CallOptions = {},
  ): Promise<z.output<S>> {
    const tried = new Set<number>();
    for (;;) {
      const at = this.urls.index;
      tried.add(at);
      try {
        const data = await this.#callAt(this.urls.base(at), method, path, schema, options);
        this.urls.answered(at);
        return data;
      } catch (err) {
        // Aborted by the edge (a stop, a new generation of its loops): no failure of that URL.
        if (!(err instanceof LinkError) || options.signal?.aborted) throw err;
        if (!unanswered(err)) {
          this.urls.answered(at);
          throw err;
        }
        this.urls.unanswered(at, err.message);
        if (tried.has(this.urls.index)) throw this.urls.size > 1 ? noneAnswered(err) : err;
      }
    }
  }

  async #callAt<S extends z.ZodType>(
    base: string,
    method: 'GET' | 'POST',
    path: string,
    schema: S,
    options: CallOptions,
  ): Promise<z.output<S>> {
    const what = `${method} ${path}`;
    const started = this.options.now();
    const monoStarted = performance.now();
    const timeout = AbortSignal.timeout(this.options.timeoutMs + (options.waitMs ?? 0));
    const signal = options.signal ? AbortSignal.any([timeout, options.signal]) : timeout;
    let status: number;
    let headers: Dispatcher.ResponseData['headers'];
    let text: string;
    try {
      const res = await request(`${base}${path}`, {
        method,
        dispatcher: this.#agent,
        signal,
        headers: {
          authorization: `Bearer ${this.options.token}`,
          accept: 'application/json',
          'user-agent': `gatehouse-edge/${this.options.appVersion}`,
          [PROTOCOL_HEADER]: String(this.protocol),
          [SENT_AT_HEADER]: String(started),
          ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
      });
      status = res.statusCode;
      headers = res.headers;
      text = await bodyWithin(res, this.options.maxAnswerBytes, what);
    } catch (err) {
      if (err instanceof LinkError) throw err;
      const e = err as Error & { code?: string };
      const reason = timeout.aborted
        ? `no answer within ${this.options.timeoutMs + (options.waitMs ?? 0)} ms`
        : (e.code ?? e.message);
      throw new LinkError(`${what}: ${reason}`, 'network');
    }
    const monoFinished = performance.now();
    this.lastAnswerAt = monoFinished;
    let parsed: unknown;
    try {
      parsed = text ? parseJson(text, SYNC_JSON_DEPTH) : undefined;
    } catch (err) {
      parsed = undefined;
      if (status >= 200 && status < 300)
        throw new LinkError(`${what}: the answer is not JSON (${quote((err as Error).message)})`, 'malformed', status);
    }
    const record =
      typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
        ? (parsed as Record<string, unknown>)
        : null;
    if (status < 200 || status >= 300) {
      const message = typeof record?.message === 'string' ? quote(record.message) : `HTTP ${status}`;
      const retryAfterMs = status === 429 || status === 503 ? retryAfter(headers['retry-after']) : null;
      throw new LinkError(`${what}: ${status} ${message}`, 'http', status, record, retryAfterMs);
    }
    if (record?.data === undefined) throw new LinkError(`${what}: the answer has no data`, 'malformed', status);
    const data = followingProtocol(schema, record.data, what);
    const meta = answerMeta.safeParse(record.data);
    if (meta.success && meta.data.cloud) this.options.onCloud?.(meta.data.cloud);
    const server = meta.success && meta.data.server_time !== undefined ? Date.parse(meta.data.server_time) : Number.NaN;
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

/** The answer's body as text, read no further than `cap` bytes: a declared length over it is
 * refused before a byte is read, a longer stream as soon as it passes it, and the body is
 * destroyed, which closes the connection (nothing more of it arrives or is kept). */
async function bodyWithin(res: Dispatcher.ResponseData, cap: number, what: string): Promise<string> {
  const tooLarge = () => {
    res.body.destroy();
    return new LinkError(
      `${what}: the answer is larger than ${cap} bytes (sync.maxAnswerBytes): not read`,
      'too_large',
      res.statusCode,
    );
  };
  if (Number(res.headers['content-length']) > cap) throw tooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res.body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > cap) throw tooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Retry-After in ms: delay-seconds or an HTTP date (RFC 9110 10.2.3); null when absent or neither. */
function retryAfter(header: string | string[] | undefined): number | null {
  const value = (Array.isArray(header) ? header[0] : header)?.trim();
  if (!value) return null;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isFinite(at) ? Math.max(0, at - Date.now()) : null;
}
