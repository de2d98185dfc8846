import type { MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { closedBy, connectReader } from '../helpers/mqtt.js';
import { authorizeChannel, rawClient, subscribeAs, wsUrl, type RawClient } from '../helpers/pusher.js';

// One-time passwords only for those who may provision readers (docs/mqtt.md:
// "Reader login"): an OTP is a reader credential in waiting, so it is shown only with
// access:write (or *), never to read or access:read, and never on a channel: the devices channel
// says a login was asked for, without the OTP. Provisioning a reader over a live token (which
// the new one replaces) is announced on the devices channel, so staff notice a takeover.

const A = '/api/v1/projects/default/default';
const DEVICES = 'private-console.project.default.devices';

describe('reader one-time passwords', () => {
  let gh: TestAppliance;
  let admin: string;
  let api: ReturnType<typeof client>;
  let readerIds: Record<string, number>;
  const sockets: RawClient[] = [];
  const open: MqttClient[] = [];

  const askLogin = async (identifier: string) =>
    expect((await gh.request('POST', `${A}/readers/login`, { body: { reader_identifier: identifier } })).status).toBe(
      202,
    );
  const otpOf = async (identifier: string, token = admin) => {
    const res = await gh.request('GET', `${A}/readers/logins`, { token });
    expect(res.status).toBe(200);
    return (res.body.data as { reader_identifier: string; otp: string }[]).find(
      (l) => l.reader_identifier === identifier,
    )!.otp;
  };
  const verify = async (identifier: string, otp: string) => {
    const res = await gh.request('POST', '/api/v1/reader-otp/verify', { body: { otp, reader_identifier: identifier } });
    expect(res.status).toBe(200);
    return res.body.data;
  };
  /** A socket on the devices channel, authorized with a token of these scopes. */
  const devicesSocket = async (scopes: string[]) => {
    const c = await rawClient(wsUrl(gh));
    sockets.push(c);
    expect((await subscribeAs(gh, c, { token: await gh.token(scopes) }, DEVICES)).event).toBe(
      'pusher_internal:subscription_succeeded',
    );
    return c;
  };

  beforeAll(async () => {
    gh = await startAppliance();
    admin = await gh.token();
    api = client(gh, admin);
    const zone = (await api.post(`${A}/access-zones`, { name: 'Arena' })).body.data.id;
    const gate = (await api.post(`${A}/access-points`, { name: 'Gate', access_zone_id: zone })).body.data.id;
    readerIds = {};
    for (const identifier of ['R-1', 'R-2', 'R-3'])
      readerIds[identifier] = (await api.post(`${A}/readers`, { identifier, access_point_id: gate })).body.data.id;
  });
  afterAll(async () => {
    for (const c of sockets) c.ws.close();
    for (const c of open) c.end(true);
    await gh.destroy();
  });

  it('lists one-time passwords only for tokens with access:write or *; read and access:read get 401 (the token lacks the ability)', async () => {
    await askLogin('R-1');
    for (const scopes of [['read'], ['access:read'], ['read', 'access:read', 'attendees:write']]) {
      const res = await gh.request('GET', `${A}/readers/logins`, { token: await gh.token(scopes) });
      expect(res.status, scopes.join(',')).toBe(401);
      expect(res.text).not.toMatch(/"otp"/);
    }
    expect(await otpOf('R-1', await gh.token(['access:write']))).toMatch(/^\d{6}$/);
    expect(await otpOf('R-1', admin)).toMatch(/^\d{6}$/);
    // The OpenAPI description says so too.
    const spec = (await gh.request('GET', '/api/v1/openapi.json', { token: admin })).body;
    expect(JSON.stringify(spec.paths['/api/v1/projects/{teamSlug}/{projectSlug}/readers/logins'].get)).toMatch(
      /access:write/,
    );
  });

  it('announces a reader login on the devices channel without its one-time password, to read-only and full accounts alike', async () => {
    const readOnly = await devicesSocket(['access:read']);
    const full = await devicesSocket(['*']);
    await askLogin('R-2');
    for (const c of [readOnly, full]) {
      const { data } = await c.next('ReaderLoginRequested');
      expect(data).toEqual({ reader_id: readerIds['R-2'], reader_identifier: 'R-2', expires_at: expect.any(String) });
    }
    // Nor on the encrypted form of the channel (a read-only account may join that too).
    const sealed = await rawClient(wsUrl(gh));
    sockets.push(sealed);
    const auth = await authorizeChannel(
      gh,
      { token: await gh.token(['read']) },
      sealed.socketId,
      `private-encrypted-console.project.default.devices`,
    );
    expect(auth.status).toBe(200);
    await sealed.subscribe('private-encrypted-console.project.default.devices', auth.body.auth);
    await askLogin('R-2');
    const nacl = (await import('tweetnacl')).default;
    const { data } = await sealed.next('ReaderLoginRequested');
    const opened = nacl.secretbox.open(
      Buffer.from(data.ciphertext, 'base64'),
      Buffer.from(data.nonce, 'base64'),
      Buffer.from(auth.body.shared_secret!, 'base64'),
    );
    expect(Object.keys(JSON.parse(Buffer.from(opened!).toString()))).not.toContain('otp');
  });

  it('announces a reader provisioned over its live token (a takeover to notice), and not a first provisioning', async () => {
    const watch = await devicesSocket(['access:read']);
    await askLogin('R-3');
    await watch.next('ReaderLoginRequested');
    const first = await verify('R-3', await otpOf('R-3'));
    const { client: connected } = await connectReader(gh, first);
    open.push(connected);
    const closed = closedBy(connected, 5000);

    await askLogin('R-3');
    // Frames come in order: a replacement announced by the first verify would be here before this.
    await watch.next('ReaderLoginRequested');
    expect(watch.frames.some((f) => f.event === 'ReaderTokenReplaced')).toBe(false);
    const second = await verify('R-3', await otpOf('R-3'));
    const { data } = await watch.next('ReaderTokenReplaced');
    expect(data).toEqual({
      reader_id: readerIds['R-3'],
      reader_identifier: 'R-3',
      replaced_token_created_at: expect.any(String),
      requested_ip: expect.any(String),
      timestamp: expect.any(String),
    });
    expect(Date.parse(data.replaced_token_created_at)).toBeLessThanOrEqual(Date.parse(data.timestamp));
    // The earlier token's connection is closed, and the new token works.
    await closed;
    const { client: again } = await connectReader(gh, second);
    open.push(again);
  });
});
