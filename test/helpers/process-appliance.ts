import { sign } from '@octokit/webhooks-methods';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requester, type RequestOptions, type TestResponse } from './appliance.js';
import { runGatehouse, type RunningProcess } from './process.js';

// The built appliance in its own process (as `npm start` runs it), with an HTTP client: for
// tests that must meet it from outside, where the test's own clients and the appliance do not
// share an event loop (a client storm would otherwise slow the server it measures).

export const PROCESS_ADMIN = { email: 'admin@example.test', password: 'process appliance password' };

export interface ProcessAppliance {
  proc: RunningProcess;
  url: string;
  dataDir: string;
  request(method: string, path: string, options?: RequestOptions): Promise<TestResponse>;
  /** A new administrator token. */
  token(): Promise<string>;
  /** Posts `body` signed with `secret` as a webhook sender does (X-Svc-Signature, @octokit/webhooks-methods). */
  signedPost(path: string, body: unknown, secret: string): Promise<TestResponse>;
  /** Stops the process and removes the data directory. */
  destroy(): Promise<void>;
}

/** Starts dist/main.js on free ports with a fresh data directory; `env` adds GATEHOUSE_* variables. */
export async function startProcessAppliance(env: Record<string, string> = {}): Promise<ProcessAppliance> {
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-proc-'));
  const proc = runGatehouse([], {
    GATEHOUSE_DATA_DIR: dataDir,
    GATEHOUSE_ADMIN_EMAIL: PROCESS_ADMIN.email,
    GATEHOUSE_ADMIN_PASSWORD: PROCESS_ADMIN.password,
    GATEHOUSE_RATE_LIMIT_STANDARD: '0',
    GATEHOUSE_RATE_LIMIT_BULK: '0',
    GATEHOUSE_RATE_LIMIT_SEARCH: '0',
    ...env,
  });
  let url: string;
  try {
    [, url] = (await proc.waitFor(/Gatehouse ready at (http:\/\/\S+?)"/, 60_000)) as unknown as [string, string];
  } catch (err) {
    await proc.stop('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }

  const request = requester(url);

  const token = async () => {
    const res = await request('POST', '/api/v1/auth/token', {
      body: { ...PROCESS_ADMIN, device_name: 'process test' },
    });
    if (res.status !== 201) throw new Error(`token creation failed: ${res.status} ${res.text}`);
    return res.body.token as string;
  };

  const signedPost = async (path: string, body: unknown, secret: string) => {
    const raw = JSON.stringify(body);
    return request('POST', path, {
      rawBody: raw,
      headers: { 'content-type': 'application/json', 'X-Svc-Signature': await sign(secret, raw) },
    });
  };

  const destroy = async () => {
    await proc.stop();
    rmSync(dataDir, { recursive: true, force: true });
  };
  return { proc, url, dataDir, request, token, signedPost, destroy };
}
