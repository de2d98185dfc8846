import { sign } from '@octokit/webhooks-methods';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { createSource, ENDPOINTS, signedPost, type SourceKind } from '../helpers/signed-webhooks.js';
import { sign as ourSign } from '../../src/webhooks/signature.js';

// The incoming-webhook gate (docs/webhooks-incoming.md): every endpoint refuses what is not signed by
// one of its project's enabled sources, in the documented envelope, logs every request, and
// changes nothing when it refuses. Requests are signed with @octokit/webhooks-methods.

const A = '/api/v1/projects/default/default';

/** One valid body per endpoint, and what shows it was applied. */
const VALID: Record<SourceKind, unknown> = {
  'access-event': { reader_id: 'R-1', credential_value: 'TICKET-1', scan_type: 'barcode' },
  'gateway-status': { gateway_id: 'GW-1', status: 'online', readers: [] },
  'upload-finalized': {
    kind: 'storage#object',
    name: 'notes/readme.txt',
    bucket: 'other-bucket',
    contentType: 'text/plain',
    size: '12',
    timeCreated: '2026-11-23T10:00:00Z',
  },
  'registration-partner': {
    event_type: 'registration.created',
    event_id: 'evt-gate-1',
    data: {
      registration_id: 'reg-gate-1',
      attendee: { first_name: 'Grace', last_name: 'Hopper', email: 'grace@example.test' },
    },
    timestamp: '2026-11-23T10:00:00Z',
  },
  'attendee-sync': {
    project_slug: 'default',
    team_slug: 'default',
    sync_mode: 'upsert',
    attendees: [{ external_id: 'gate-1', first_name: 'Ada', last_name: 'Lovelace', email: 'ada@example.test' }],
  },
};
const KINDS = [
  'access-event',
  'gateway-status',
  'upload-finalized',
  'registration-partner',
  'attendee-sync',
] as const satisfies readonly SourceKind[];

describe('the incoming-webhook gate', () => {
  let gh: TestAppliance;
  let token: string;
  let api: ReturnType<typeof client>;
  let importDir: string;
  const secrets = {} as Record<SourceKind, string>;
  const now = () => Math.floor(Date.now() / 1000);
  /** What an endpoint has applied so far: events, gateway reports, uploads. */
  const applied = async () => ({
    events: (await api.get(`${A}/access-events`)).body.meta.total as number,
    gateway: (await api.get(`${A}/gateways`)).body.data[0].last_seen as string | null,
    uploads: (await api.get(`${A}/uploads`)).body.meta.total as number,
    attendees: (await api.get(`${A}/attendees?per_page=1`)).body.meta.total as number,
  });
  const log = async (query = '') => (await api.get(`${A}/incoming-webhooks?per_page=100${query}`)).body;
  const allLog = async (query = '') => (await api.get(`/api/v1/incoming-webhooks?per_page=100${query}`)).body;

  beforeAll(async () => {
    importDir = mkdtempSync(join(tmpdir(), 'gatehouse-imports-'));
    gh = await startAppliance({
      GATEHOUSE_HTTP_TRUST_PROXY: 'true',
      GATEHOUSE_INCOMING_WEBHOOKS_IMPORT_BUCKET: 'attendee-drops',
      GATEHOUSE_INCOMING_WEBHOOKS_IMPORT_DIR: importDir,
    });
    token = await gh.token();
    api = client(gh, token);
    const zone = (await api.post(`${A}/access-zones`, { name: 'Arena' })).body.data.id;
    const gate = (await api.post(`${A}/access-points`, { name: 'Gate', access_zone_id: zone, direction: 'both' })).body
      .data.id;
    await api.post(`${A}/readers`, { identifier: 'R-1', access_point_id: gate });
    await api.post(`${A}/attendees/import`, [
      { first_name: 'Ada', last_name: 'Lovelace', credential_value: 'TICKET-1' },
    ]);
    await api.post(`${A}/gateways`, { identifier: 'GW-1' });
    for (const kind of KINDS)
      secrets[kind] = (
        await createSource(gh, token, kind, { ip_allowlist: ['127.0.0.1', '10.1.0.0/16', '2001:db8::/32'] })
      ).secret;
  });
  afterAll(async () => {
    await gh.destroy();
    rmSync(importDir, { recursive: true, force: true });
  });

  it('signs the way docs/webhooks-incoming.md says (known vector), the same as octokit', async () => {
    expect(ourSign("It's a Secret to Everybody", 'Hello, World!')).toBe(
      'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17',
    );
    expect(await sign("It's a Secret to Everybody", 'Hello, World!')).toBe(
      'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17',
    );
  });

  for (const kind of KINDS) {
    it(`${kind}: admits a signed request, and refuses every bad one with its status and body, logged, applying nothing`, async () => {
      const path = ENDPOINTS[kind];
      const secret = secrets[kind];
      const header = kind === 'registration-partner' ? 'X-Partner-Signature' : 'X-Svc-Signature';
      const body = JSON.stringify(VALID[kind]);
      const ok = await signedPost(gh, path, body, secret, { timestamp: now() });
      expect(ok.status).toBe(200);
      const before = await applied();

      const refusals: [string, Promise<{ status: number; body: unknown }>, number, unknown][] = [
        [
          'wrong secret',
          signedPost(gh, path, body, 'whsec_not-the-secret'),
          401,
          {
            error: 'invalid_signature',
            message: 'The signature does not match any enabled webhook source of this endpoint.',
          },
        ],
        [
          'a byte changed after signing',
          signedPost(gh, path, body.replace(/"$|}$/, ' }'), secret, { signOver: body }),
          401,
          { error: 'invalid_signature', message: expect.any(String) },
        ],
        [
          'no signature',
          gh.request('POST', path, { rawBody: body, headers: { 'content-type': 'application/json' } }),
          401,
          { error: 'missing_signature', message: expect.stringContaining(header) },
        ],
        [
          'a malformed signature',
          signedPost(gh, path, body, secret, { headers: { [header]: 'sha1=abc' } }),
          401,
          { error: 'invalid_signature', message: expect.stringContaining('sha256=') },
        ],
        [
          'a stale timestamp',
          signedPost(gh, path, `${body} `, secret, { timestamp: now() - 301 }),
          401,
          { error: 'stale_timestamp', message: expect.stringMatching(/tolerance 300 s/) },
        ],
        [
          'a future timestamp',
          signedPost(gh, path, `${body}  `, secret, { timestamp: now() + 400 }),
          401,
          { error: 'stale_timestamp', message: expect.any(String) },
        ],
        [
          'a timestamp that is not an integer',
          signedPost(gh, path, `${body}   `, secret, { headers: { 'X-Svc-Timestamp': '1.7e9' } }),
          401,
          { error: 'stale_timestamp', message: 'The timestamp header must be an integer of Unix seconds.' },
        ],
        [
          'an address outside the allowlist',
          signedPost(gh, path, `${body}    `, secret, { headers: { 'X-Forwarded-For': '192.0.2.7' } }),
          403,
          {
            error: 'address_not_allowed',
            message: 'The address 192.0.2.7 is not in the allowlist of the webhook source.',
          },
        ],
        [
          'malformed JSON, signed',
          signedPost(gh, path, '{"oops": ', secret),
          400,
          { error: 'malformed_json', message: expect.any(String) },
        ],
        [
          'a validation failure, signed',
          signedPost(gh, path, '{}', secret),
          400,
          { error: 'validation_failed', message: expect.any(String), errors: expect.any(Object) },
        ],
        [
          'a form body',
          gh.request('POST', path, {
            rawBody: 'a=b',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
          }),
          415,
          { error: 'unsupported_media_type', message: expect.any(String) },
        ],
        [
          'a body over the limit',
          signedPost(
            gh,
            path,
            JSON.stringify({ pad: 'x'.repeat(kind === 'attendee-sync' ? 10_500_000 : 1_100_000) }),
            secret,
          ),
          413,
          { error: 'payload_too_large', message: expect.any(String) },
        ],
      ];
      for (const [what, response, status, expected] of refusals) {
        const res = await response;
        expect({ what, status: res.status, body: res.body }).toEqual({ what, status, body: expected });
      }
      expect(await applied()).toEqual(before);

      // The same signed request again (a sender's retry) gets the first answer, marked, and applies nothing.
      const again = await signedPost(gh, path, body, secret, { timestamp: now() });
      expect({ status: again.status, text: again.text, replayed: again.headers.get('x-svc-replayed') }).toEqual({
        status: 200,
        text: ok.text,
        replayed: 'true',
      });
      expect(ok.headers.get('x-svc-replayed')).toBeNull();
      expect(await applied()).toEqual(before);

      // Addresses inside the allowlist: an IPv4 range, and an IPv6 range.
      expect(
        (await signedPost(gh, path, `${body}\n`, secret, { headers: { 'X-Forwarded-For': '10.1.2.3' } })).status,
      ).toBe(200);
      expect(
        (await signedPost(gh, path, `${body}\n\n`, secret, { headers: { 'X-Forwarded-For': '2001:db8::42' } })).status,
      ).toBe(200);

      // Every request is in the log; refusals with their reason and the head of their body.
      const entries = (await allLog(`&endpoint=${encodeURIComponent(path)}`)).data as {
        status: number;
        reason: string | null;
        body_head: string | null;
        source_id: number | null;
        source_ip: string;
        response_time_ms: number;
      }[];
      expect(entries).toHaveLength(1 + refusals.length + 1 + 2);
      const accepted = entries.filter((e) => e.status === 200);
      expect(accepted.every((e) => e.body_head === null)).toBe(true);
      expect(accepted.map((e) => e.reason).sort()).toEqual([null, null, null, 'replayed']);
      const reasons = entries
        .filter((e) => e.status !== 200)
        .map((e) => e.reason)
        .sort();
      expect(reasons).toEqual(
        [
          'address_not_allowed',
          'invalid_signature',
          'invalid_signature',
          'invalid_signature',
          'malformed_json',
          'missing_signature',
          'payload_too_large',
          'stale_timestamp',
          'stale_timestamp',
          'stale_timestamp',
          'unsupported_media_type',
          'validation_failed',
        ].sort(),
      );
      const refused = entries.find((e) => e.reason === 'address_not_allowed')!;
      expect(refused).toMatchObject({
        source_ip: '192.0.2.7',
        source_id: expect.any(Number),
        body_head: expect.stringContaining('{'),
      });
      expect(entries.find((e) => e.reason === 'payload_too_large')!.body_head).toBeNull();
      // The project's own log holds what a source of the project verified.
      const mine = (await log(`&endpoint=${encodeURIComponent(path)}&result=success`)).data as unknown[];
      expect(mine).toHaveLength(4);
    });
  }

  it('keeps a rotated secret working during the grace period only, and ignores disabled sources', async () => {
    const { id, secret } = await createSource(gh, token, 'gateway-status', { name: 'rotating' });
    const body = (n: number) => JSON.stringify({ gateway_id: 'GW-1', status: 'online', n });
    const rotated = await api.post(`${A}/integrations/webhooks/${id}/rotate-secret`, { grace_minutes: 5 });
    expect(rotated.status).toBe(201);
    expect(rotated.body.data.previous_secret_expires_at).toEqual(expect.any(String));
    expect((await signedPost(gh, ENDPOINTS['gateway-status'], body(1), secret)).status).toBe(200);
    expect((await signedPost(gh, ENDPOINTS['gateway-status'], body(2), rotated.body.secret)).status).toBe(200);
    const cut = await api.post(`${A}/integrations/webhooks/${id}/rotate-secret`, { grace_minutes: 0 });
    expect((await signedPost(gh, ENDPOINTS['gateway-status'], body(3), rotated.body.secret)).status).toBe(401);
    expect((await signedPost(gh, ENDPOINTS['gateway-status'], body(4), cut.body.secret)).status).toBe(200);
    expect((await api.put(`${A}/integrations/webhooks/${id}`, { enabled: false })).body.data.enabled).toBe(false);
    expect((await signedPost(gh, ENDPOINTS['gateway-status'], body(5), cut.body.secret)).status).toBe(401);
    // A source of one kind does not sign for another endpoint.
    expect(
      (
        await signedPost(
          gh,
          ENDPOINTS['access-event'],
          JSON.stringify(VALID['access-event']),
          secrets['gateway-status'],
        )
      ).status,
    ).toBe(401);
    // Secrets are never listed.
    const listed = (await api.get(`${A}/integrations/webhooks`)).body.data;
    expect(JSON.stringify(listed)).not.toContain('whsec_');
    expect(listed.find((s: { id: number }) => s.id === id)).toMatchObject({
      kind: 'gateway-status',
      name: 'rotating',
      enabled: false,
      endpoint: '/webhook/v1/mqtt-gateway-status',
    });
  });

  it('validates sources: kind, allowlist entries, and only full tokens manage them', async () => {
    const bad = await api.post(`${A}/integrations/webhooks`, {
      kind: 'telepathy',
      name: 'x',
      ip_allowlist: ['10.0.0.0/33', 'not-an-ip', '::1/129'],
    });
    expect(bad.status).toBe(422);
    expect(Object.keys(bad.body.errors).sort()).toEqual(['ip_allowlist.0', 'ip_allowlist.1', 'ip_allowlist.2', 'kind']);
    const readOnly = await gh.token(['read']);
    expect(
      (
        await gh.request('POST', `${A}/integrations/webhooks`, {
          token: readOnly,
          body: { kind: 'access-event', name: 'x' },
        })
      ).status,
    ).toBe(401);
    expect((await gh.request('GET', `${A}/integrations/webhooks/999999`, { token })).status).toBe(404);
  });

  it('limits each source to its own rate with 429 {error, message, retry_after}', async () => {
    const { secret } = await createSource(gh, token, 'gateway-status', { name: 'slow', rate_limit_per_minute: 2 });
    const statuses: number[] = [];
    let last: { status: number; body: unknown; headers: Headers } | null = null;
    for (let i = 0; i < 3; i++) {
      last = await signedPost(
        gh,
        ENDPOINTS['gateway-status'],
        JSON.stringify({ gateway_id: 'GW-1', status: 'online', i }),
        secret,
      );
      statuses.push(last.status);
    }
    expect(statuses).toEqual([200, 200, 429]);
    expect(last!.body).toEqual({
      error: 'too_many_requests',
      message: 'Too Many Attempts.',
      retry_after: expect.any(Number),
    });
    expect(last!.headers.get('retry-after')).toMatch(/^\d+$/);
  });

  it('imports an attendee file named by large-upload-finalized from the import directory, and reports a missing one', async () => {
    const { secret } = await createSource(gh, token, 'upload-finalized', { name: 'drops' });
    writeFileSync(
      join(importDir, 'wave-1.csv'),
      'first_name,last_name,email,credential_value\nLin,Chen,lin@example.test,DROP-1\nBad,,x,DROP-2\n',
    );
    const notice = (name: string, contentType = 'text/csv') => ({
      kind: 'storage#object',
      name,
      bucket: 'attendee-drops',
      contentType,
      size: '80',
      timeCreated: '2026-11-23T10:00:00Z',
    });
    const res = await signedPost(gh, ENDPOINTS['upload-finalized'], notice('wave-1.csv'), secret);
    expect(res.body).toEqual({
      success: true,
      message: 'Upload recorded; attendee import queued.',
      upload_id: expect.any(Number),
      status: 'queued',
    });
    const missing = await signedPost(
      gh,
      ENDPOINTS['upload-finalized'],
      notice('nope.json', 'application/json'),
      secret,
    );
    const traversal = await signedPost(
      gh,
      ENDPOINTS['upload-finalized'],
      notice('../../etc/passwd', 'text/csv'),
      secret,
    );
    await gh.app.deps.uploads.drain();
    const uploads = (await api.get(`${A}/uploads`)).body.data as { id: number; status: string; report: any }[];
    const byId = (id: number) => uploads.find((u) => u.id === id)!;
    expect(byId(res.body.upload_id)).toMatchObject({ status: 'imported', report: { imported: 1, failed: 1 } });
    expect(byId(missing.body.upload_id)).toMatchObject({
      status: 'failed',
      report: { error: expect.stringContaining('ENOENT') },
    });
    expect(byId(traversal.body.upload_id)).toMatchObject({
      status: 'failed',
      report: { error: expect.stringContaining('leaves the import directory') },
    });
    expect((await api.get(`${A}/attendees?search=lin@example.test`)).body.data).toHaveLength(1);
  });
});
