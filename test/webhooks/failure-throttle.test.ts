import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { createSource, ENDPOINTS, signedPost } from '../helpers/signed-webhooks.js';

// Junk cannot flood the webhook endpoints or their log (docs/security.md).
// Requests no source vouched for (unsigned, forged, stale, from outside the allowlist) are
// counted per client address; past incomingWebhooks.failuresPerMinute the address is answered
// 429 with Retry-After before anything else, and no log row is written. Refused and replayed
// requests have their own row budget, so junk cannot prune the log of accepted ones. Client
// addresses come from X-Forwarded-For (http.trustProxy), as behind the venue's reverse proxy.

const A = '/api/v1/projects/default/default';
const ENV = {
  GATEHOUSE_HTTP_TRUST_PROXY: 'true',
  GATEHOUSE_INCOMING_WEBHOOKS_FAILURES_PER_MINUTE: '20',
  GATEHOUSE_INCOMING_WEBHOOKS_LOG_MAX_ROWS: '100',
  GATEHOUSE_INCOMING_WEBHOOKS_LOG_MAX_NOT_APPLIED_ROWS: '100',
};

const metric = async (gh: TestAppliance, name: string) =>
  Number(new RegExp(`^${name} (\\S+)$`, 'm').exec((await gh.request('GET', '/metrics')).text)?.[1] ?? NaN);

describe('failing webhook requests', () => {
  let gh: TestAppliance;
  let api: ReturnType<typeof client>;
  let secret: string;
  const report = (n: number | string) => JSON.stringify({ gateway_id: 'GW-1', status: 'online', n });
  const unsigned = (from: string, n: number) =>
    gh.request('POST', ENDPOINTS['gateway-status'], {
      rawBody: report(n),
      headers: { 'content-type': 'application/json', 'X-Forwarded-For': from },
    });
  const signed = (n: number | string, from: string) =>
    signedPost(gh, ENDPOINTS['gateway-status'], report(n), secret, { headers: { 'X-Forwarded-For': from } });
  const logged = async (query = '') =>
    (await api.get(`/api/v1/incoming-webhooks?per_page=100${query}`)).body.meta.total as number;

  beforeAll(async () => {
    gh = await startAppliance(ENV);
    const token = await gh.token();
    api = client(gh, token);
    await api.post(`${A}/gateways`, { identifier: 'GW-1' });
    secret = (await createSource(gh, token, 'gateway-status')).secret;
  });
  afterAll(() => gh.destroy());

  it('answers a flood of unsigned requests from one address 429 after its budget, writing no more log rows', async () => {
    const before = await logged();
    const statuses: number[] = [];
    let last = null as Awaited<ReturnType<typeof unsigned>> | null;
    for (let n = 0; n < 60; n++) {
      last = await unsigned('10.66.0.1', n);
      statuses.push(last.status);
      // A request from another address meanwhile is signed and goes through.
      if (n === 40) expect((await signed('during the flood', '10.77.0.1')).status).toBe(200);
    }
    expect(statuses.slice(0, 20)).toEqual(Array(20).fill(401));
    expect(statuses.slice(20)).toEqual(Array(40).fill(429));
    expect(last!.body).toEqual({
      error: 'too_many_failures',
      message: expect.stringContaining('10.66.0.1'),
      retry_after: expect.any(Number),
    });
    expect(Number(last!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await logged()).toBe(before + 20 + 1); // the 20 within the budget, and the signed one
    expect(await metric(gh, 'gatehouse_webhook_throttled_total')).toBe(40);
    // Forged signatures and a source's own address count alike; the throttle is per address.
    const forged = await signedPost(gh, ENDPOINTS['gateway-status'], report('forged'), 'whsec_wrong', {
      headers: { 'X-Forwarded-For': '10.66.0.1' },
    });
    expect(forged.status).toBe(429);
    expect((await unsigned('10.66.0.2', 0)).status).toBe(401);
  });

  it("does not count a verified source's refusals against its address", async () => {
    // A gateway whose reports name an unknown gateway is refused 404 by the endpoint, after the
    // signature verified: the project's to see in the log, never a reason to lock its doors out.
    for (let n = 0; n < 30; n++) {
      const res = await signedPost(
        gh,
        ENDPOINTS['gateway-status'],
        JSON.stringify({ gateway_id: 'GW-UNKNOWN', status: 'online', n }),
        secret,
        { headers: { 'X-Forwarded-For': '10.88.0.1' } },
      );
      expect(res.status).toBe(404);
    }
    expect((await signed('still fine', '10.88.0.1')).status).toBe(200);
  });

  it("keeps accepted requests' log rows through a junk flood from many addresses, and bounds the junk's", async () => {
    const accepted: number[] = [];
    for (let n = 0; n < 5; n++) accepted.push((await signed(`accepted ${n}`, '10.99.0.1')).status);
    expect(accepted).toEqual(Array(5).fill(200));
    const acceptedRows = await logged('&result=success');
    // 300 failures, 10 from each of 30 addresses: each address stays within its budget.
    for (let a = 0; a < 30; a++)
      for (let n = 0; n < 10; n++) expect((await unsigned(`10.55.0.${a + 1}`, n)).status).toBe(401);
    const failures = await logged('&result=failure');
    expect(failures).toBeGreaterThan(0);
    expect(failures).toBeLessThanOrEqual(100 + 10); // the budget, pruned every tenth of it
    expect(await logged('&result=success')).toBe(acceptedRows);

    // The prune at start leaves each budget as it is too.
    await gh.stop();
    const dataDir = gh.dataDir;
    gh = await startAppliance(ENV, { dataDir });
    api = client(gh, await gh.token());
    expect(await logged('&result=success')).toBe(acceptedRows);
    expect(await logged('&result=failure')).toBe(100);
    await gh.stop();
    rmSync(dataDir, { recursive: true, force: true });
    gh = await startAppliance(ENV); // for afterAll
  });
});
