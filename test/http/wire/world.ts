import { createHash, createHmac } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { sign } from '@octokit/webhooks-methods';
import type { ErrorCode } from '../../../src/errors.js';
import type { AnyRoute } from '../../../src/http/route.js';
import { createUser, type TestAppliance, type TestResponse } from '../../helpers/appliance.js';
import { createSource, ENDPOINTS, type SourceKind } from '../../helpers/signed-webhooks.js';

// What the wire test talks through: one appliance, its tokens, and ways to send a request as
// each kind of client would (a token, a cookie session, a signed webhook, a signed Pusher call,
// a body that declares more bytes than any limit). Every helper answers the raw response.

export const A = '/api/v1/projects/default/default';
// A cloud (it does all a standalone box does, and serves the sync routes their whole table).
export const PUSHER_ENV = {
  GATEHOUSE_PUSHER_APP_ID: '4242',
  GATEHOUSE_PUSHER_KEY: 'wire-key',
  GATEHOUSE_PUSHER_SECRET: 'wire-secret',
  GATEHOUSE_ROLE: 'cloud',
};

export interface Req {
  method: string;
  path: string;
  token?: string;
  json?: unknown;
  raw?: string;
  type?: string;
  headers?: Record<string, string>;
}

export type Send = () => Promise<TestResponse>;

export interface SignOptions {
  /** The name of the source that signs (made on first use); default `main`. */
  source?: string;
  type?: string;
  headers?: Record<string, string>;
}

/** One request of the table: the status it must get, and why. */
export interface Case {
  op: string;
  status: number;
  why: string;
  send: Send;
  /** Headers the answer must carry besides those the document requires (each is judged against the document). */
  headers?: readonly string[];
  /** The error the answer must name (wire/check.ts namesError). */
  error?: ErrorCode;
}

export const kindOfRoute = (route: AnyRoute): SourceKind | null => (route.webhook ?? null) as SourceKind | null;

export class World {
  admin = '';
  /** Tokens that grant nothing a given route needs: forms:read, and attendees:read for forms:read routes. */
  weak = { forms: '', attendees: '' };
  /** A full token of an account that is not an administrator. */
  staff = '';
  /** A full token of a read-only account (docs/auth.md: read-only accounts). */
  viewer = '';
  readonly sources = new Map<string, { id: number; secret: string }>();
  /** The last request sent, for judging it against the document once it succeeded. */
  last: Req | null = null;
  /** Runs around every request sent (the store-busy test holds SQLite's write lock around some). */
  around: ((req: Req, send: () => Promise<TestResponse>) => Promise<TestResponse>) | null = null;
  #session: Promise<Record<string, string>> | null = null;

  constructor(readonly gh: TestAppliance) {}

  async init(): Promise<this> {
    this.admin = await this.gh.token();
    this.weak.forms = await this.gh.token(['forms:read']);
    this.weak.attendees = await this.gh.token(['attendees:read']);
    this.staff = (await createUser(this.gh, this.admin, 'staff@example.test', ['*'])).token;
    const viewer = await this.gh.request('POST', '/api/v1/users', {
      token: this.admin,
      body: { name: 'Viewer', email: 'viewer@example.test', password: 'a long enough password', read_only: true },
    });
    if (viewer.status !== 201) throw new Error(`read-only user: ${viewer.status} ${viewer.text}`);
    this.viewer = await this.gh.token(undefined, 'viewer@example.test', 'a long enough password'); // all it holds: read
    return this;
  }

  #sync: Promise<string> | null = null;

  /** A sync token of an edge of the default project (the appliance is a cloud). */
  syncToken(): Promise<string> {
    this.#sync ??= (async () => {
      const res = await this.gh.request('POST', `${A}/sync/edges`, { token: this.admin, body: { name: 'wire edge' } });
      if (res.status !== 201) throw new Error(`sync edge: ${res.status} ${res.text}`);
      return res.body.data.token as string;
    })();
    return this.#sync;
  }

  send(req: Req): Promise<TestResponse> {
    this.last = req;
    const headers = { ...(req.type ? { 'content-type': req.type } : {}), ...req.headers };
    const send = () =>
      this.gh.request(req.method, req.path, {
        ...(req.token ? { token: req.token } : {}),
        ...(req.json !== undefined ? { body: req.json } : {}),
        ...(req.raw !== undefined ? { rawBody: req.raw } : {}),
        headers,
      });
    return this.around ? this.around(req, send) : send();
  }

  /** An administrator's JSON request. */
  api(method: string, path: string, json?: unknown): Promise<TestResponse> {
    return this.send({ method, path, token: this.admin, json });
  }

  /** The id of a created resource (fails loudly when it was not created). */
  async create(path: string, json: unknown): Promise<number> {
    const res = await this.api('POST', path, json);
    if (res.status !== 201) throw new Error(`POST ${path}: ${res.status} ${res.text}`);
    return res.body.data.id as number;
  }

  /** A browser's session headers: GET /sanctum/csrf-cookie, then, with `login`, logged in as the administrator. */
  async browser(login: boolean): Promise<Record<string, string>> {
    const cookies = new Map<string, string>();
    const take = (res: TestResponse) => {
      for (const line of res.headers.getSetCookie()) {
        const [pair] = line.split(';');
        const eq = pair!.indexOf('=');
        cookies.set(pair!.slice(0, eq), pair!.slice(eq + 1));
      }
    };
    const headers = () => ({
      cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; '),
      'x-xsrf-token': cookies.get('XSRF-TOKEN') ?? '',
    });
    take(await this.gh.request('GET', '/sanctum/csrf-cookie'));
    if (login)
      take(
        await this.send({
          method: 'POST',
          path: '/api/v1/auth/session',
          json: { email: 'admin@example.test', password: 'correct horse battery' },
          headers: headers(),
        }),
      );
    return headers();
  }

  /** An anonymous CSRF session, made once. */
  csrf(): Promise<Record<string, string>> {
    return (this.#session ??= this.browser(false));
  }

  /** A webhook source of this kind in the default project, made once per name. */
  async source(
    kind: SourceKind,
    name = 'main',
    options: { ip_allowlist?: string[]; rate_limit_per_minute?: number } = {},
  ) {
    const key = `${kind}:${name}`;
    if (!this.sources.has(key))
      this.sources.set(key, await createSource(this.gh, this.admin, kind, { name: `${kind} ${name}`, ...options }));
    return this.sources.get(key)!;
  }

  /** The raw body signed by a source (@octokit/webhooks-methods, not our code), posted to its kind's endpoint. */
  signed(kind: SourceKind, raw: string, options: SignOptions = {}): Send {
    return async () => this.send(await this.signedRequest(kind, raw, options));
  }

  /** The request signed() sends. */
  async signedRequest(kind: SourceKind, raw: string, options: SignOptions = {}): Promise<Req> {
    const { secret } = await this.source(kind, options.source);
    const header = kind === 'registration-partner' ? 'X-Partner-Signature' : 'X-Svc-Signature';
    return {
      method: 'POST',
      path: ENDPOINTS[kind],
      raw,
      type: options.type ?? 'application/json',
      headers: { [header]: await sign(secret, raw), ...options.headers },
    };
  }

  /** A Pusher HTTP API request signed as the Pusher server libraries sign it (auth_* query parameters). */
  pusher(
    method: string,
    path: string,
    query: Record<string, string> = {},
    body?: string,
    appId = PUSHER_ENV.GATEHOUSE_PUSHER_APP_ID,
  ): Promise<TestResponse> {
    const full = `/apps/${appId}${path}`;
    const params: Record<string, string> = {
      ...query,
      auth_key: PUSHER_ENV.GATEHOUSE_PUSHER_KEY,
      auth_timestamp: String(Math.floor(Date.now() / 1000)),
      auth_version: '1.0',
    };
    if (body !== undefined) params.body_md5 = createHash('md5').update(body).digest('hex');
    const qs = Object.keys(params)
      .sort()
      .map((k) => `${k}=${params[k]}`)
      .join('&');
    const signature = createHmac('sha256', PUSHER_ENV.GATEHOUSE_PUSHER_SECRET)
      .update(`${method}\n${full}\n${qs}`)
      .digest('hex');
    return this.send({
      method,
      path: `${full}?${qs}&auth_signature=${signature}`,
      ...(body !== undefined ? { raw: body, type: 'application/json' } : {}),
    });
  }

  /** A request whose Content-Length declares more bytes than any body limit (only a few are sent). */
  oversized(method: string, path: string, headers: Record<string, string>): Promise<TestResponse> {
    return new Promise((resolve, reject) => {
      const req = httpRequest(
        `${this.gh.url}${path}`,
        {
          method,
          headers: { 'content-type': 'application/json', 'content-length': String(200 * 1024 * 1024), ...headers },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            req.destroy();
            const text = Buffer.concat(chunks).toString('utf8');
            const entries = Object.entries(res.headers).flatMap(([k, v]) =>
              Array.isArray(v)
                ? v.map((x): [string, string] => [k, x])
                : v === undefined
                  ? []
                  : [[k, String(v)] as [string, string]],
            );
            resolve({
              status: res.statusCode!,
              headers: new Headers(entries),
              text,
              body: text ? JSON.parse(text) : undefined,
            });
          });
        },
      );
      req.on('error', reject);
      req.write('{');
    });
  }
}
