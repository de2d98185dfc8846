import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, ManualClock, startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { signedPoster } from '../helpers/signed-webhooks.js';

// POST /webhook/v1/access-event: the gateway's way in (docs/engine.md).

const A = '/api/v1/projects/default/default';
const NOW = Date.parse('2026-11-23T12:00:00Z');

describe('the access-event webhook', () => {
  let gh: TestAppliance;
  let api: ReturnType<typeof client>;
  let gate: number;
  let post: ReturnType<typeof signedPoster>;

  beforeAll(async () => {
    gh = await startAppliance({}, { clock: new ManualClock(NOW) });
    const token = await gh.token();
    api = client(gh, token);
    post = signedPoster(gh, token, 'access-event');
    const zone = (await api.post(`${A}/access-zones`, { name: 'Arena' })).body.data.id;
    gate = (await api.post(`${A}/access-points`, { name: 'North gate', access_zone_id: zone })).body.data.id;
    expect(
      (await api.post(`${A}/readers`, { identifier: 'GW1-R1', type: 'barcode', access_point_id: gate })).status,
    ).toBe(201);
    expect((await api.post(`${A}/readers`, { identifier: 'GW1-SPARE' })).status).toBe(201);
    await api.post(`${A}/attendees/import`, [
      { first_name: 'Ada', last_name: 'Lovelace', credential_value: 'TICKET-1' },
    ]);
  });
  afterAll(() => gh.destroy());

  it('decides a scan at the reader, answers in the spec shape and records a webhook event for that reader', async () => {
    const res = await post({
      reader_id: 'GW1-R1',
      credential_value: 'TICKET-1',
      scan_type: 'barcode',
      timestamp: '2026-11-23T11:59:58Z',
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      access_granted: true,
      attendee: { id: expect.any(Number), first_name: 'Ada', last_name: 'Lovelace' },
      event_id: expect.any(String),
    });
    const denied = await post({
      reader_id: 'GW1-R1',
      credential_value: 'NOPE',
      scan_type: 'barcode',
      timestamp: Math.floor(NOW / 1000),
    });
    expect(denied.body).toEqual({
      success: true,
      access_granted: false,
      reason: 'invalid_credential',
      reason_detail: null,
      attendee: null,
      event_id: expect.any(String),
    });
    const events = (await api.get(`${A}/access-events`)).body.data;
    expect(events[1]).toMatchObject({
      source: 'webhook',
      access_point_id: gate,
      reader_id: expect.any(Number),
      credential_value: 'TICKET-1',
      scanned_at: '2026-11-23T11:59:58.000Z',
      granted: true,
    });
    expect(events[0]).toMatchObject({
      source: 'webhook',
      scanned_at: '2026-11-23T12:00:00.000Z',
      reason: 'invalid_credential',
    });
    // The reader's state shows the scan, as for MQTT readers.
    const reader = (await api.get(`${A}/readers`)).body.data.find(
      (r: { identifier: string }) => r.identifier === 'GW1-R1',
    );
    expect(reader.status).toMatchObject({
      last_scan: '2026-11-23T12:00:00.000Z',
      last_seen: '2026-11-23T12:00:00.000Z',
    });
  });

  it('answers bad payloads with 400 {error, message, errors}', async () => {
    const missing = await post({ reader_id: 'GW1-R1', scan_type: 'barcode' });
    expect(missing.status).toBe(400);
    expect(missing.body).toEqual({
      error: 'validation_failed',
      message: 'The credential_value field is required.',
      errors: { credential_value: ['The credential_value field is required.'] },
    });
    // One credential_value limit for every reader transport (access/reader-scan.ts): 4,096 characters, as over MQTT.
    const long = await post({ reader_id: 'GW1-R1', credential_value: 'x'.repeat(4097) });
    expect([long.status, long.body.error, Object.keys(long.body.errors)]).toEqual([
      400,
      'validation_failed',
      ['credential_value'],
    ]);
    const empty = await post({ reader_id: 'GW1-R1', credential_value: '' });
    expect([empty.status, Object.keys(empty.body.errors)]).toEqual([400, ['credential_value']]);
    const old = await post({ reader_id: 'GW1-R1', credential_value: 'TICKET-1', timestamp: '2026-11-01T00:00:00Z' });
    expect(old.status).toBe(400);
    expect(old.body.errors).toEqual({ timestamp: ['The timestamp is more than 7 days in the past.'] });
    const badTime = await post({ reader_id: 'GW1-R1', credential_value: 'TICKET-1', timestamp: 'yesterday' });
    expect(badTime.status).toBe(400);
    expect(Object.keys(badTime.body.errors)).toEqual(['timestamp']);
    const json = await post('{"reader_id": ');
    expect(json.status).toBe(400);
    expect(json.body).toMatchObject({ error: 'malformed_json', message: expect.stringContaining('not valid JSON') });
    const form = await post('reader_id=GW1-R1', { headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(form.status).toBe(415);
    expect(form.body).toEqual({ error: 'unsupported_media_type', message: expect.any(String) });
    const count = (await api.get(`${A}/access-events`)).body.meta.total;
    expect(count).toBe(2); // none of these wrote an event
  });

  it('refuses scans it cannot place (unknown reader 404, unassigned reader 409), and decides one at an inactive door', async () => {
    const unknown = await post({ reader_id: 'NO-SUCH', credential_value: 'TICKET-1' });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ error: 'unknown_reader', message: 'No reader has the identifier "NO-SUCH".' });
    const spare = await post({ reader_id: 'GW1-SPARE', credential_value: 'TICKET-1' });
    expect(spare.status).toBe(409);
    expect(spare.body.error).toBe('reader_unassigned');
    expect((await api.get(`${A}/access-events`)).body.meta.total).toBe(2);
    // Every scan at a door is decided (docs/engine.md): at an inactive one, a denial naming the cause.
    await api.put(`${A}/access-points/${gate}`, { is_active: false });
    const inactive = await post({ reader_id: 'GW1-R1', credential_value: 'TICKET-1' });
    expect(inactive.status).toBe(200);
    expect(inactive.body).toMatchObject({
      access_granted: false,
      reason: 'not_authorized',
      reason_detail: 'access_point_inactive',
    });
    await api.put(`${A}/access-points/${gate}`, { is_active: true });
    expect((await api.get(`${A}/access-events`)).body.meta.total).toBe(3);
  });

  it("finds the reader in the signing source's project when another project has the same identifier", async () => {
    expect((await api.post('/api/v1/projects', { name: 'Other venue', slug: 'other' })).status).toBe(201);
    const O = '/api/v1/projects/default/other';
    const zone = (await api.post(`${O}/access-zones`, { name: 'Hall' })).body.data.id;
    const point = (await api.post(`${O}/access-points`, { name: 'Door', access_zone_id: zone })).body.data.id;
    await api.post(`${O}/readers`, { identifier: 'GW1-R1', access_point_id: point });
    const res = await post({ reader_id: 'GW1-R1', credential_value: 'TICKET-1', request_id: 'two-projects' });
    expect(res.status).toBe(200);
    const events = (await api.get(`${A}/access-events`)).body.data;
    expect(events[0]).toMatchObject({ access_point_id: gate, credential_value: 'TICKET-1' });
    expect((await api.get(`${O}/access-events`)).body.meta.total).toBe(0);
  });
});
