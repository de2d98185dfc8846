import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, ManualClock, startAppliance, type TestAppliance, type TestResponse } from '../helpers/appliance.js';
import { createSource, ENDPOINTS, signedPost, type SourceKind } from '../helpers/signed-webhooks.js';

// A captured webhook cannot be replayed later (docs/security.md). The
// spec signs the body only, so a captured body sent again with a fresh X-Svc-Timestamp verifies;
// accepted bodies are remembered durably (webhook_receipts) for each endpoint's window, past the
// in-memory retry window and across restarts. Requests are signed with @octokit/webhooks-methods.

const A = '/api/v1/projects/default/default';
const NOW = Date.parse('2026-11-23T12:00:00Z');
const DAY = 86_400_000;

const metric = async (gh: TestAppliance, name: string) =>
  Number(new RegExp(`^${name} (\\S+)$`, 'm').exec((await gh.request('GET', '/metrics')).text)?.[1] ?? NaN);

describe('captured webhooks sent again later', () => {
  const clock = new ManualClock(NOW);
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-receipts-'));
  const secrets = {} as Record<SourceKind, string>;
  let gh: TestAppliance;
  let api: ReturnType<typeof client>;
  /** Sent as an attacker resends a captured body: the same bytes, a fresh timestamp. */
  const post = (kind: SourceKind, body: unknown) =>
    signedPost(gh, ENDPOINTS[kind], body, secrets[kind], { timestamp: Math.floor(clock.now() / 1000) });
  const total = async (path: string) => (await api.get(`${A}/${path}`)).body.meta.total as number;
  const shape = (r: TestResponse) => ({ status: r.status, text: r.text, replayed: r.headers.get('x-svc-replayed') });
  const restart = async () => {
    await gh.stop();
    gh = await startAppliance({}, { clock, dataDir });
    api = client(gh, await gh.token());
  };
  const scanAt = (credential: string, at = clock.now()) => ({
    reader_id: 'R-1',
    credential_value: credential,
    scan_type: 'barcode',
    timestamp: new Date(at).toISOString(),
  });

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
      [1, 2, 3, 4, 5].map((n) => ({ first_name: `Guest ${n}`, credential_value: `TICKET-${n}` })),
    );
    await api.post(`${A}/gateways`, { identifier: 'GW-1' });
    for (const kind of Object.keys(ENDPOINTS) as SourceKind[])
      secrets[kind] = (await createSource(gh, token, kind)).secret;
  });
  afterAll(async () => {
    await gh.destroy();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('answers an access-event body replayed after the in-memory window with its first answer, making no second access event', async () => {
    const body = scanAt('TICKET-1');
    const first = await post('access-event', body);
    expect(first.body).toMatchObject({ success: true, access_granted: true });
    const events = await total('access-events');
    clock.advance(301_000); // past timestampToleranceSeconds: the in-memory window has forgotten it
    const replay = await post('access-event', body);
    expect(shape(replay)).toEqual({ status: 200, text: first.text, replayed: 'true' });
    clock.advance(3 * DAY);
    expect(shape(await post('access-event', body))).toEqual({ status: 200, text: first.text, replayed: 'true' });
    expect(await total('access-events')).toBe(events);
    // The request log shows them as replays.
    const log = (
      await api.get(`${A}/incoming-webhooks?endpoint=${encodeURIComponent(ENDPOINTS['access-event'])}&per_page=3`)
    ).body.data;
    expect(log.map((e: { status: number; reason: string | null }) => [e.status, e.reason])).toEqual([
      [200, 'replayed'],
      [200, 'replayed'],
      [200, null],
    ]);
    expect(await metric(gh, 'gatehouse_webhook_receipt_replays_total')).toBe(2);
  });

  it('answers bodies replayed after a restart of the appliance with their first answers, applying none again', async () => {
    const scan = scanAt('TICKET-2');
    const noTimestamp = { reader_id: 'R-1', credential_value: 'TICKET-3' }; // nothing in it bounds a replay: remembered all the same
    const report = { gateway_id: 'GW-1', status: 'online', readers: [{ reader_id: 'R-1', status: 'online' }] };
    const sync = {
      team_slug: 'default',
      project_slug: 'default',
      sync_mode: 'upsert',
      attendees: [{ external_id: 'CRM-1', first_name: 'Ada', email: 'ada@example.test' }],
    };
    const notice = {
      kind: 'storage#object',
      name: 'notes.txt',
      bucket: 'other',
      contentType: 'text/plain',
      size: '3',
      timeCreated: '2026-11-23T10:00:00Z',
    };
    const partner = {
      event_type: 'registration.created',
      event_id: 'evt-r-1',
      data: { registration_id: 'REG-R1', attendee: { first_name: 'Hedy' } },
    };
    const sent = [
      ['access-event', scan],
      ['access-event', noTimestamp],
      ['gateway-status', report],
      ['attendee-sync', sync],
      ['upload-finalized', notice],
      ['registration-partner', partner],
    ] as const;
    const firsts: TestResponse[] = [];
    for (const [kind, body] of sent) firsts.push(await post(kind, body));
    expect(firsts.map((r) => r.status)).toEqual(Array(sent.length).fill(200));
    const gatewaySeen = (await api.get(`${A}/gateways`)).body.data[0].last_seen as string;
    // The CRM changes the attendee afterwards; the captured sync would undo it.
    const attendee = (await api.get(`${A}/attendees?search=CRM-1`)).body.data[0];
    expect((await api.put(`${A}/attendees/${attendee.id}`, { email: 'ada@new.example.test' })).status).toBe(200);
    const before = {
      events: await total('access-events'),
      attendees: await total('attendees'),
      uploads: await total('uploads'),
    };

    await restart();
    clock.advance(DAY);
    for (const [i, [kind, body]] of sent.entries())
      expect(shape(await post(kind, body)), kind).toEqual({ status: 200, text: firsts[i]!.text, replayed: 'true' });
    expect({
      events: await total('access-events'),
      attendees: await total('attendees'),
      uploads: await total('uploads'),
    }).toEqual(before);
    expect((await api.get(`${A}/attendees/${attendee.id}`)).body.data.email).toBe('ada@new.example.test');
    expect((await api.get(`${A}/gateways`)).body.data[0].last_seen).toBe(gatewaySeen);
  });

  it('still applies a body that differs (a new scan), and one answered with an error before', async () => {
    const events = await total('access-events');
    const refused = {
      reader_id: 'R-NEW',
      credential_value: 'TICKET-4',
      timestamp: new Date(clock.now()).toISOString(),
    };
    expect((await post('access-event', refused)).status).toBe(404);
    await api.post(`${A}/readers`, {
      identifier: 'R-NEW',
      access_point_id: (await api.get(`${A}/readers`)).body.data[0].access_point_id,
    });
    clock.advance(301_000);
    const applied = await post('access-event', refused);
    expect([applied.status, applied.headers.get('x-svc-replayed'), applied.body.access_granted]).toEqual([
      200,
      null,
      true,
    ]);
    const next = await post('access-event', scanAt('TICKET-4', clock.now() + 1000));
    expect([next.status, next.headers.get('x-svc-replayed')]).toEqual([200, null]);
    expect(await total('access-events')).toBe(events + 2);
  });

  it('forgets a receipt once its window is over, when the engine refuses the replay itself as too old', async () => {
    const body = scanAt('TICKET-5');
    expect((await post('access-event', body)).status).toBe(200);
    const events = await total('access-events');
    clock.advance(7 * DAY + 6 * 60_000); // past the scan-age limit and the receipt window of access events
    await restart(); // prunes at start
    const late = await post('access-event', body);
    expect([late.status, late.body.error, late.headers.get('x-svc-replayed')]).toEqual([
      400,
      'validation_failed',
      null,
    ]);
    expect(await total('access-events')).toBe(events);
    // Left: attendee-sync's and large-upload-finalized's (30 days: nothing in their bodies dates
    // them); access-event's (7 days 5 min), registration-partner's (7 days) and gateway-status's
    // (2 days) are past their windows.
    expect(await metric(gh, 'gatehouse_webhook_receipts')).toBe(2);
  });
});

describe('the receipt store bound', () => {
  it('keeps at most receiptMaxRows receipts, the oldest given up first and counted', async () => {
    const gh = await startAppliance({ GATEHOUSE_INCOMING_WEBHOOKS_RECEIPT_MAX_ROWS: '100' });
    try {
      const token = await gh.token();
      await gh.request('POST', `${A}/gateways`, { token, body: { identifier: 'GW-1' } });
      const { secret } = await createSource(gh, token, 'gateway-status');
      const since = Math.floor(Date.now() / 1000) - 1000;
      const report = (n: number) => ({ gateway_id: 'GW-1', status: 'online', timestamp: since + n });
      for (let n = 0; n < 130; n++)
        expect((await signedPost(gh, ENDPOINTS['gateway-status'], report(n), secret)).status).toBe(200);
      expect(await metric(gh, 'gatehouse_webhook_receipts')).toBe(100);
      expect(await metric(gh, 'gatehouse_webhook_receipt_evictions_total')).toBe(30);
      // The newest are kept (answered from memory too within the window: so check the store alone after a restart).
      await gh.stop();
      const again = await startAppliance(
        { GATEHOUSE_INCOMING_WEBHOOKS_RECEIPT_MAX_ROWS: '100' },
        { dataDir: gh.dataDir },
      );
      try {
        const newest = await signedPost(again, ENDPOINTS['gateway-status'], report(129), secret);
        const oldest = await signedPost(again, ENDPOINTS['gateway-status'], report(0), secret);
        expect([newest.headers.get('x-svc-replayed'), oldest.headers.get('x-svc-replayed')]).toEqual(['true', null]);
      } finally {
        await again.stop();
      }
    } finally {
      rmSync(gh.dataDir, { recursive: true, force: true });
    }
  });
});
