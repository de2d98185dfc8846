import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startAppliance, type TestAppliance, type TestResponse } from '../helpers/appliance.js';
import { createSource, ENDPOINTS, signedPost } from '../helpers/signed-webhooks.js';

// Response headers every client meets (docs/security.md, attack 12): nosniff on every answer, no-store on
// every answer (those carrying tokens, secrets and one-time passwords are listed here one by
// one), and no framing by other sites. Raw HTTP against a real appliance.

const A = '/api/v1/projects/default/default';

describe('security headers', () => {
  let gh: TestAppliance;
  let token: string;
  let api: ReturnType<typeof client>;

  beforeAll(async () => {
    gh = await startAppliance({ GATEHOUSE_READERS_VERIFY_PER_MINUTE: '1000' });
    token = await gh.token();
    api = client(gh, token);
    const zone = (await api.post(`${A}/access-zones`, { name: 'Arena' })).body.data.id;
    const gate = (await api.post(`${A}/access-points`, { name: 'Gate', access_zone_id: zone })).body.data.id;
    expect((await api.post(`${A}/readers`, { identifier: 'R-1', access_point_id: gate })).status).toBe(201);
  });
  afterAll(() => gh.destroy());

  const expectHardened = (res: TestResponse, what: string) => {
    expect(res.headers.get('x-content-type-options'), what).toBe('nosniff');
    expect(res.headers.get('x-frame-options'), what).toBe('DENY');
    expect(res.headers.get('content-security-policy'), what).toContain("frame-ancestors 'none'");
  };
  const expectNoStore = (res: TestResponse, what: string) =>
    expect(res.headers.get('cache-control'), what).toBe('no-store');

  it('sends nosniff and refuses framing on every kind of answer: success, error, webhook, CSV, metrics, OPTIONS', async () => {
    const answers: [string, TestResponse][] = [
      ['health', await gh.request('GET', '/health')],
      ['metrics', await gh.request('GET', '/metrics')],
      ['openapi', await gh.request('GET', '/api/v1/openapi.json')],
      ['me', await api.get('/api/v1/me')],
      ['401', await gh.request('GET', '/api/v1/me')],
      ['404', await gh.request('GET', '/api/v1/nothing')],
      ['405', await gh.request('PATCH', '/api/v1/me', { token })],
      ['OPTIONS', await gh.request('OPTIONS', '/api/v1/users', { token })],
      ['422', await api.post('/api/v1/users', {})],
      [
        '400',
        await gh.request('POST', '/api/v1/users', {
          token,
          rawBody: '{',
          headers: { 'content-type': 'application/json' },
        }),
      ],
      ['webhook 401', await gh.request('POST', ENDPOINTS['access-event'], { body: {} })],
      ['csv', await api.get(`${A}/access-events?format=csv`)],
      ['csrf cookie', await gh.request('GET', '/sanctum/csrf-cookie')],
    ];
    for (const [what, res] of answers) expectHardened(res, what);
  });

  it('answers no-store with every token, secret and one-time password', async () => {
    const created = await gh.request('POST', '/api/v1/auth/token', {
      body: { email: 'admin@example.test', password: 'correct horse battery', device_name: 'd' },
    });
    expect(created.status).toBe(201);
    expectNoStore(created, 'token creation');

    const source = await api.post(`${A}/integrations/webhooks`, { kind: 'access-event', name: 'gw' });
    expect(source.body.secret).toMatch(/^whsec_/);
    expectNoStore(source, 'webhook source secret');
    const rotated = await api.post(`${A}/integrations/webhooks/${source.body.data.id}/rotate-secret`, {});
    expect(rotated.status).toBe(201);
    expectNoStore(rotated, 'rotate-secret');

    const gateway = await api.post(`${A}/gateways`, { identifier: 'GW-1' });
    expect(gateway.body.token).toBeTypeOf('string');
    expectNoStore(gateway, 'gateway token');
    const rotatedGateway = await api.post(`${A}/gateways/${gateway.body.data.id}/token`, {});
    expectNoStore(rotatedGateway, 'gateway token rotation');

    expect((await gh.request('POST', `${A}/readers/login`, { body: { reader_identifier: 'R-1' } })).status).toBe(202);
    const logins = await api.get(`${A}/readers/logins`);
    expectNoStore(logins, 'pending reader logins with their OTPs');
    const otp = logins.body.data[0].otp as string;
    const verified = await gh.request('POST', '/api/v1/reader-otp/verify', { body: { otp, reader_identifier: 'R-1' } });
    expect(verified.status).toBe(200);
    expectNoStore(verified, 'reader OTP verify');

    const auth = await gh.request('POST', '/broadcasting/auth', {
      token,
      rawBody: `socket_id=1.2&channel_name=private-dashboard.project.default.default.access`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(auth.status).toBe(200);
    expectNoStore(auth, 'channel auth signature');

    const signed = await signedPost(
      gh,
      ENDPOINTS['access-event'],
      { reader_id: 'R-1', credential_value: 'X' },
      (await createSource(gh, token, 'access-event')).secret,
    );
    expect(signed.status).toBe(200);
    expectNoStore(signed, 'webhook answer');
  });

  it('adds nosniff to the refusal of an upgrade to an unknown WebSocket path', async () => {
    const reply = await new Promise<string>((resolve, reject) => {
      const socket = connect(gh.app.httpPort, '127.0.0.1', () => {
        socket.write(
          'GET /nowhere HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
        );
      });
      let text = '';
      socket.on('data', (c) => (text += c.toString()));
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
    });
    expect(reply).toMatch(/^HTTP\/1\.1 404/);
    expect(reply.toLowerCase()).toContain('x-content-type-options: nosniff');
  });
});
