import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAppliance, type TestAppliance } from '../helpers/appliance.js';

describe('operations endpoints', () => {
  let gh: TestAppliance;
  beforeAll(async () => {
    gh = await startAppliance();
  });
  afterAll(() => gh.destroy());

  it('answers liveness at /health and readiness with its checks at /ready', async () => {
    expect((await gh.request('GET', '/health')).body).toEqual({ status: 'ok' });
    const ready = await gh.request('GET', '/ready');
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ status: 'ready', checks: { store: true, modules: true } });
  });

  it('exposes Prometheus metrics: requests by route and status, a latency histogram, process metrics', async () => {
    const token = await gh.token();
    await gh.request('GET', '/api/v1/me', { token });
    await gh.request('GET', '/api/v1/me');
    await gh.request('GET', '/api/no/such/route'); // outside /api it would be a console page
    const res = await fetch(`${gh.url}/metrics`);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await res.text();
    expect(text).toMatch(/gatehouse_http_requests_total\{method="GET",route="\/api\/v1\/me",status="200"\} 1\b/);
    expect(text).toMatch(/gatehouse_http_requests_total\{method="GET",route="\/api\/v1\/me",status="401"\} 1\b/);
    expect(text).toMatch(/gatehouse_http_requests_total\{method="GET",route="unmatched",status="404"\} 1\b/);
    expect(text).toMatch(
      /gatehouse_http_request_duration_seconds_bucket\{le="0\.005",method="GET",route="\/api\/v1\/me"\} \d+/,
    );
    expect(text).toContain('gatehouse_process_resident_memory_bytes');
    expect(text).toContain('gatehouse_nodejs_eventloop_lag_seconds');
  });

  it('shows the access-event journal and its ingest into SQLite', async () => {
    const token = await gh.token();
    const A = '/api/v1/projects/default/default';
    const zone = (await gh.request('POST', `${A}/access-zones`, { token, body: { name: 'Metrics hall' } })).body.data
      .id;
    const gate = (
      await gh.request('POST', `${A}/access-points`, { token, body: { name: 'Metrics door', access_zone_id: zone } })
    ).body.data.id;
    for (const value of ['NOBODY-1', 'NOBODY-2', 'NOBODY-3']) {
      expect(
        (await gh.request('POST', `${A}/access-points/${gate}/scan`, { token, body: { credential_value: value } })).body
          .access_granted,
      ).toBe(false);
    }
    await gh.app.deps.scans.settled();
    const text = await (await fetch(`${gh.url}/metrics`)).text();
    const value = (name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1]);
    expect(value('gatehouse_access_event_journal_writes_total')).toBeGreaterThanOrEqual(3);
    expect(value('gatehouse_access_event_journal_bytes_total')).toBeGreaterThan(3 * 100);
    expect(value('gatehouse_access_event_journal_slow_writes_total')).toBe(gh.app.deps.scans.journalStats.slowWrites);
    expect(value('gatehouse_access_events_ingested_total')).toBeGreaterThanOrEqual(3);
    expect(value('gatehouse_access_event_ingest_transactions_total')).toBeGreaterThanOrEqual(1);
    expect(value('gatehouse_access_event_ingest_failures_total')).toBe(0);
    expect(value('gatehouse_access_event_journal_lagging')).toBe(0);
  });

  it('answers every response with a request id', async () => {
    const res = await gh.request('GET', '/health', { headers: { 'x-request-id': 'abc-123' } });
    expect(res.headers.get('x-request-id')).toBe('abc-123');
    expect((await gh.request('GET', '/health')).headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });
});
