import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { signedPoster } from '../helpers/signed-webhooks.js';

// spec: Resources, Incoming webhook log entry: id string, endpoint string, method string,
// status integer, source_ip string, received_at timestamp, response_time_ms integer (docs/rest.md).

describe('incoming webhook log', () => {
  let gh: TestAppliance;
  let token: string;
  beforeAll(async () => {
    gh = await startAppliance();
    token = await gh.token();
    const post = signedPoster(gh, token, 'gateway-status');
    await gh.request('POST', '/api/v1/projects/default/default/gateways', { token, body: { identifier: 'GW-LOG' } });
    expect((await post({ gateway_id: 'GW-LOG', status: 'online' })).status).toBe(200);
    expect(
      (await gh.request('POST', '/webhook/v1/mqtt-gateway-status', { body: { gateway_id: 'GW-LOG' } })).status,
    ).toBe(401);
  });
  afterAll(() => gh.destroy());

  const specTypes = (entry: Record<string, unknown>) => ({
    id: typeof entry.id === 'string' && /^[1-9]\d*$/.test(entry.id),
    endpoint: entry.endpoint,
    method: entry.method,
    status: Number.isInteger(entry.status),
    source_ip: typeof entry.source_ip,
    received_at: typeof entry.received_at === 'string' && !Number.isNaN(Date.parse(entry.received_at)),
    response_time_ms: Number.isInteger(entry.response_time_ms) && (entry.response_time_ms as number) >= 0,
  });
  const expected = {
    id: true,
    endpoint: '/webhook/v1/mqtt-gateway-status',
    method: 'POST',
    status: true,
    source_ip: 'string',
    received_at: true,
    response_time_ms: true,
  };

  it("answers every entry of the administrators' listing in the spec's field types: id a string, response_time_ms whole milliseconds", async () => {
    const res = await gh.request('GET', '/api/v1/incoming-webhooks', { token });
    expect(res.status).toBe(200);
    expect(res.body.data.map((e: Record<string, unknown>) => e.status)).toEqual([401, 200]);
    for (const entry of res.body.data) expect(specTypes(entry)).toEqual(expected);
    // Newest first: ids are strings, but still in the order of the requests.
    const [newer, older] = res.body.data.map((e: { id: string }) => Number(e.id));
    expect(newer).toBeGreaterThan(older);
  });

  it("answers the project's listing in the same types, and filters by status as before", async () => {
    const res = await gh.request('GET', '/api/v1/projects/default/default/incoming-webhooks?status=200', { token });
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(1);
    expect(specTypes(res.body.data[0])).toEqual(expected);
  });

  it("filters by the source that verified the request (the console's source filter), and refuses a source id that is not one", async () => {
    const other = signedPoster(gh, token, 'gateway-status', { name: 'second gateway source' });
    expect((await other({ gateway_id: 'GW-NOT-HERE', status: 'online' })).status).toBe(404);
    const { id } = await other.source();
    const mine = await gh.request('GET', `/api/v1/projects/default/default/incoming-webhooks?source_id=${id}`, {
      token,
    });
    expect(mine.status).toBe(200);
    expect(mine.body.data.map((e: { status: number; source_id: number }) => [e.status, e.source_id])).toEqual([
      [404, id],
    ]);
    const all = await gh.request('GET', '/api/v1/projects/default/default/incoming-webhooks', { token });
    expect(all.body.data.map((e: { status: number }) => e.status)).toEqual([404, 200]);
    expect((await gh.request('GET', '/api/v1/incoming-webhooks?source_id=zero', { token })).status).toBe(422);
  });
});
