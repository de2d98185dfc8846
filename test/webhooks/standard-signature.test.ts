import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, ManualClock, startAppliance, type TestAppliance, type TestResponse } from '../helpers/appliance.js';
import { createSource, ENDPOINTS, signedPost } from '../helpers/signed-webhooks.js';

// Standard Webhooks signatures (docs/webhooks-incoming.md): `webhook-signature:
// v1,<base64 HMAC-SHA256 over "id.timestamp.body">` with `webhook-id` and `webhook-timestamp`, so
// the timestamp is signed and a captured request goes stale. Every request here is signed with
// the `standardwebhooks` library (an independent implementation), with the source's own secret.

const A = '/api/v1/projects/default/default';
const NOW = Date.parse('2026-11-23T12:00:00Z');
const PATH = ENDPOINTS['access-event'];

describe('Standard Webhooks signatures', () => {
  const clock = new ManualClock(NOW);
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-stdwh-'));
  let gh: TestAppliance;
  let api: ReturnType<typeof client>;
  let secret: string;
  const seconds = () => Math.floor(clock.now() / 1000);
  /** Signs `raw` as a Standard Webhooks sender does; `headers` override what is sent. */
  const send = (raw: string, id: string, timestamp = seconds(), headers: Record<string, string> = {}) => {
    const signature = new Webhook(secret).sign(id, new Date(timestamp * 1000), raw);
    return gh.request('POST', PATH, {
      rawBody: raw,
      headers: {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signature,
        ...headers,
      },
    });
  };
  const events = async () => (await api.get(`${A}/access-events`)).body.meta.total as number;
  const scan = (credential: string) =>
    JSON.stringify({ reader_id: 'R-1', credential_value: credential, scan_type: 'qr' });
  const shape = (r: TestResponse) => ({ status: r.status, text: r.text, replayed: r.headers.get('x-svc-replayed') });

  beforeAll(async () => {
    gh = await startAppliance({}, { clock, dataDir });
    const token = await gh.token();
    api = client(gh, token);
    const zone = (await api.post(`${A}/access-zones`, { name: 'Arena' })).body.data.id;
    const door = (await api.post(`${A}/access-points`, { name: 'Gate', access_zone_id: zone, direction: 'both' })).body
      .data.id;
    await api.post(`${A}/readers`, { identifier: 'R-1', access_point_id: door });
    await api.post(
      `${A}/attendees/import`,
      [1, 2, 3].map((n) => ({ first_name: `Guest ${n}`, credential_value: `TICKET-${n}` })),
    );
    secret = (await createSource(gh, token, 'access-event')).secret;
  });
  afterAll(async () => {
    await gh.destroy();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('admits a request signed with the standardwebhooks library, and the same body again under a new webhook-id as a new scan', async () => {
    const before = await events();
    const first = await send(scan('TICKET-1'), 'msg_1');
    expect([first.status, first.headers.get('x-svc-replayed')]).toEqual([200, null]);
    expect(first.body).toMatchObject({ success: true, access_granted: true });
    // The id tells deliveries apart: the same card scanned again is another message.
    const again = await send(scan('TICKET-1'), 'msg_2');
    expect([again.status, again.headers.get('x-svc-replayed')]).toEqual([200, null]);
    expect(await events()).toBe(before + 2);
  });

  it('recognises a replayed webhook-id, within the window, after it and after a restart, whatever body it carries', async () => {
    const first = await send(scan('TICKET-2'), 'msg_replayed');
    expect(first.status).toBe(200);
    const before = await events();
    // A sender's retry re-signs the same id with a fresh timestamp: the first answer, not applied.
    clock.advance(60_000);
    expect(shape(await send(scan('TICKET-2'), 'msg_replayed'))).toEqual({
      status: 200,
      text: first.text,
      replayed: 'true',
    });
    clock.advance(301_000);
    expect(shape(await send(scan('TICKET-2'), 'msg_replayed'))).toEqual({
      status: 200,
      text: first.text,
      replayed: 'true',
    });
    await gh.stop();
    gh = await startAppliance({}, { clock, dataDir });
    api = client(gh, await gh.token());
    clock.advance(3_600_000);
    expect(shape(await send(scan('TICKET-3'), 'msg_replayed'))).toEqual({
      status: 200,
      text: first.text,
      replayed: 'true',
    });
    expect(await events()).toBe(before);
  });

  it('refuses a stale or future webhook-timestamp, a tampered timestamp or body, and incomplete headers, applying nothing', async () => {
    const before = await events();
    const raw = scan('TICKET-3');
    const stale = await send(raw, 'msg_stale', seconds() - 301);
    expect([stale.status, stale.body]).toEqual([
      401,
      { error: 'stale_timestamp', message: expect.stringMatching(/tolerance 300 s/) },
    ]);
    const future = await send(raw, 'msg_future', seconds() + 301);
    expect([future.status, future.body.error]).toEqual([401, 'stale_timestamp']);
    // A captured request with its timestamp moved forward: the signature covers the timestamp.
    const signedLongAgo = new Webhook(secret).sign('msg_old', new Date((seconds() - 3600) * 1000), raw);
    const tampered = await send(raw, 'msg_old', seconds(), { 'webhook-signature': signedLongAgo });
    expect([tampered.status, tampered.body.error]).toEqual([401, 'invalid_signature']);
    const otherBody = await send(raw, 'msg_body', seconds(), {
      'webhook-signature': new Webhook(secret).sign('msg_body', new Date(clock.now()), scan('TICKET-1')),
    });
    expect([otherBody.status, otherBody.body.error]).toEqual([401, 'invalid_signature']);
    const otherId = await send(raw, 'msg_id', seconds(), { 'webhook-id': 'msg_other' });
    expect([otherId.status, otherId.body.error]).toEqual([401, 'invalid_signature']);
    const noId = await send(raw, 'msg_noid', seconds(), { 'webhook-id': '' });
    expect([noId.status, noId.body]).toEqual([
      401,
      { error: 'invalid_signature', message: expect.stringContaining('webhook-id') },
    ]);
    const noTimestamp = await send(raw, 'msg_nots', seconds(), { 'webhook-timestamp': '' });
    expect([noTimestamp.status, noTimestamp.body.error]).toEqual([401, 'stale_timestamp']);
    const notV1 = await send(raw, 'msg_v2', seconds(), { 'webhook-signature': 'v1a,abc v2,def' });
    expect([notV1.status, notV1.body.error]).toEqual([401, 'invalid_signature']);
    const wrongSecret = await gh.request('POST', PATH, {
      rawBody: raw,
      headers: {
        'content-type': 'application/json',
        'webhook-id': 'msg_w',
        'webhook-timestamp': String(seconds()),
        'webhook-signature': new Webhook(`whsec_${Buffer.alloc(32, 7).toString('base64')}`).sign(
          'msg_w',
          new Date(clock.now()),
          raw,
        ),
      },
    });
    expect([wrongSecret.status, wrongSecret.body.error]).toEqual([401, 'invalid_signature']);
    expect(await events()).toBe(before);
    // None of them was remembered as accepted: the id signed properly is admitted.
    expect((await send(raw, 'msg_stale')).status).toBe(200);
  });

  it("takes one of several signatures (a sender rotating its secret signs with both), and keeps the spec's own scheme working", async () => {
    const raw = scan('TICKET-1');
    const ours = new Webhook(secret).sign('msg_multi', new Date(clock.now()), raw);
    const foreign = new Webhook(`whsec_${Buffer.alloc(32, 9).toString('base64')}`).sign(
      'msg_multi',
      new Date(clock.now()),
      raw,
    );
    expect((await send(raw, 'msg_multi', seconds(), { 'webhook-signature': `${foreign} ${ours}` })).status).toBe(200);
    const spec = await signedPost(gh, PATH, `${raw} `, secret, { timestamp: seconds() });
    expect([spec.status, spec.body.success]).toEqual([200, true]);
  });
});
