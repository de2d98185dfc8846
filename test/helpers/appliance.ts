import { storeEnv } from './test-store.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Logger, pino } from 'pino';
import { Gatehouse } from '../../src/app.js';
import type { Clock } from '../../src/clock.js';
import { loadConfig } from '../../src/config/load.js';
import type { ServiceOverrides } from '../../src/services.js';

export const ADMIN_EMAIL = 'admin@example.test';
export const ADMIN_PASSWORD = 'correct horse battery';

/** A clock tests can move forward. */
export class ManualClock implements Clock {
  constructor(private ms = Date.now()) {}
  now(): number {
    return this.ms;
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}

export interface TestAppliance {
  app: Gatehouse;
  url: string;
  dataDir: string;
  request(method: string, path: string, options?: RequestOptions): Promise<TestResponse>;
  token(scopes?: string[], email?: string, password?: string): Promise<string>;
  stop(): Promise<void>;
  /** Stops and removes the data directory. */
  destroy(): Promise<void>;
}

export interface RequestOptions {
  token?: string;
  body?: unknown;
  rawBody?: string | Buffer;
  headers?: Record<string, string>;
}

export interface TestResponse {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

/** A real appliance on a free loopback port with a real SQLite file in a temp dir.
 * `env` entries are GATEHOUSE_* variables, so tests go through the real config overlay. */
export async function startAppliance(
  env: Record<string, string> = {},
  options: {
    clock?: Clock;
    dataDir?: string;
    overrides?: ServiceOverrides;
    configFile?: string;
    /** The appliance's logger (a test that reads the log); by default silent, or TEST_LOG_LEVEL. */
    log?: Logger;
  } = {},
): Promise<TestAppliance> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'gatehouse-test-'));
  const config = loadConfig({
    ...(options.configFile ? { file: options.configFile, fileRequired: true } : {}),
    env: {
      GATEHOUSE_DATA_DIR: dataDir,
      GATEHOUSE_HTTP_HOST: '127.0.0.1',
      GATEHOUSE_HTTP_PORT: '0',
      GATEHOUSE_MQTT_PORT: '0',
      GATEHOUSE_ADMIN_EMAIL: ADMIN_EMAIL,
      GATEHOUSE_ADMIN_PASSWORD: ADMIN_PASSWORD,
      GATEHOUSE_RATE_LIMIT_STANDARD: '0',
      GATEHOUSE_RATE_LIMIT_BULK: '0',
      GATEHOUSE_RATE_LIMIT_SEARCH: '0',
      ...env,
      ...storeEnv(env),
    },
  });
  const app = new Gatehouse(config, {
    log: options.log ?? pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.overrides ? { overrides: options.overrides } : {}),
  });
  try {
    await app.start();
  } catch (err) {
    await app.stop(); // what did start, stopped, as main.ts does
    if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
  const url = `http://127.0.0.1:${app.httpPort}`;

  const request = requester(url);

  const token = async (scopes?: string[], email = ADMIN_EMAIL, password = ADMIN_PASSWORD) => {
    const res = await request('POST', '/api/v1/auth/token', {
      body: { email, password, device_name: 'test', ...(scopes ? { scopes } : {}) },
    });
    if (res.status !== 201) throw new Error(`token creation failed: ${res.status} ${res.text}`);
    return res.body.token as string;
  };

  const stop = () => app.stop();
  const destroy = async () => {
    await app.stop();
    if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true });
  };
  return { app, url, dataDir, request, token, stop, destroy };
}

/** Creates a non-admin user through the REST API and answers a token of theirs. */
export async function createUser(
  gh: TestAppliance,
  adminToken: string,
  email: string,
  scopes?: string[],
): Promise<{ id: number; token: string }> {
  const password = 'a long enough password';
  const res = await gh.request('POST', '/api/v1/users', { token: adminToken, body: { name: email, email, password } });
  if (res.status !== 201) throw new Error(`user creation failed: ${res.status} ${res.text}`);
  return { id: res.body.data.id, token: await gh.token(scopes, email, password) };
}

/** Short verbs for a test that talks to one appliance with one token. */
export function client(gh: TestAppliance, token: string) {
  return {
    post: (path: string, body: unknown) => gh.request('POST', path, { token, body }),
    put: (path: string, body: unknown) => gh.request('PUT', path, { token, body }),
    get: (path: string) => gh.request('GET', path, { token }),
    del: (path: string) => gh.request('DELETE', path, { token }),
  };
}

/** A JSON HTTP client of the appliance at `url`, as its tests talk to it (also test/helpers/process-appliance.ts). */
export function requester(url: string) {
  return async (method: string, path: string, o: RequestOptions = {}): Promise<TestResponse> => {
    const headers: Record<string, string> = { accept: 'application/json', ...o.headers };
    if (o.token) headers.authorization = `Bearer ${o.token}`;
    let body: string | Buffer | undefined = o.rawBody;
    if (o.body !== undefined) {
      body = JSON.stringify(o.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await fetch(url + path, {
      method,
      headers,
      body: typeof body === 'string' || body === undefined ? body : new Uint8Array(body),
    });
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    return { status: res.status, headers: res.headers, body: parsed, text };
  };
}
