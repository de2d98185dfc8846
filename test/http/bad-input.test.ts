import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { webhookPoster } from '../helpers/webhooks.js';

/** Keys that name members of Object.prototype (docs/security.md, attack 6): a field-error map that is a
 * plain object answered 500 for them, before any login. */
const PROTO_KEYS = ['constructor', '__proto__', 'toString'] as const;
/** A JSON object with `key` as an own key: JSON.stringify({__proto__: ...}) would set the prototype instead. */
const withKey = (key: string, value: unknown, rest: Record<string, unknown> = {}) =>
  `{${JSON.stringify(key)}:${JSON.stringify(value)}${Object.keys(rest).length ? `,${JSON.stringify(rest).slice(1, -1)}` : ''}}`;

describe('bad input', () => {
  let gh: TestAppliance;
  let admin: string;
  const userCount = async () => (await gh.request('GET', '/api/v1/users', { token: admin })).body.meta.total;
  beforeAll(async () => {
    gh = await startAppliance({ GATEHOUSE_HTTP_BODY_LIMIT_BYTES: '4096' });
    admin = await gh.token();
  });
  afterAll(() => gh.destroy());

  it('answers 400 with a message to malformed JSON, and creates nothing', async () => {
    const before = await userCount();
    const res = await gh.request('POST', '/api/v1/users', {
      token: admin,
      rawBody: '{"name": "x", ',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/^The request body is not valid JSON/);
    expect(await userCount()).toBe(before);
  });

  it('answers 415 to a body that is not JSON', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
      const res = await gh.request('POST', '/api/v1/users', {
        token: admin,
        rawBody: 'name=x',
        headers: { 'content-type': type },
      });
      expect(res.status, type).toBe(415);
      expect(res.body.message).toContain('application/json');
    }
  });

  it('answers 413 to a body over the configured limit', async () => {
    const body = JSON.stringify({ name: 'x'.repeat(5000), email: 'big@example.test', password: 'long enough pw' });
    const res = await gh.request('POST', '/api/v1/users', {
      token: admin,
      rawBody: body,
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(413);
    expect(res.body).toEqual({ message: 'The request body exceeds the limit of 4096 bytes.' });
  });

  it('answers 413 to a chunked body that grows past the limit', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(
        `${gh.url}/api/v1/users`,
        { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${admin}` } },
        (res) => {
          res.resume();
          resolve(res.statusCode!);
        },
      );
      req.on('error', reject);
      req.write('{"name":"');
      req.write('y'.repeat(8000));
      req.end('"}');
    });
    expect(status).toBe(413);
  });

  it('answers 422 to a JSON body that is not an object', async () => {
    for (const raw of ['[1,2]', '"text"', 'null', '42']) {
      const res = await gh.request('POST', '/api/v1/users', {
        token: admin,
        rawBody: raw,
        headers: { 'content-type': 'application/json' },
      });
      expect(res.status, raw).toBe(422);
      expect(res.body.errors).toBeTypeOf('object');
    }
  });

  it('answers 404 to an unknown route and 405 with Allow to a wrong method', async () => {
    const missing = await gh.request('GET', '/api/v1/nothing-here', { token: admin });
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ message: 'The route /api/v1/nothing-here could not be found.' });
    const wrong = await gh.request('PATCH', '/api/v1/me', { token: admin });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('GET');
    expect(wrong.body.message).toContain('PATCH');
    const options = await gh.request('OPTIONS', '/api/v1/users', { token: admin });
    expect(options.status).toBe(204);
    expect(options.headers.get('allow')).toBe('GET, POST');
  });

  it('answers 404, not 405, to an item path with an empty id, also when written . (which clients resolve to it)', async () => {
    const P = '/api/v1/projects/default/default';
    for (const item of [
      '/api/v1/me/tokens/',
      `${P}/time-restrictions/`,
      `${P}/blocklist/`,
      `${P}/attendee-types/`,
      `${P}/credentials/`,
      `${P}/access-points/`,
    ]) {
      for (const id of ['', '.']) {
        for (const method of ['DELETE', 'PUT']) {
          const res = await gh.request(method, `${item}${id}`, {
            token: admin,
            ...(method === 'PUT' ? { body: {} } : {}),
          });
          expect(res.status, `${method} ${item}${id}`).toBe(404);
          expect(res.body.message, `${method} ${item}${id}`).toMatch(/^The route \/api\/v1\/.* could not be found\.$/);
        }
      }
    }
    // The collection path without the slash still answers its own methods, and refuses the others with 405.
    expect((await gh.request('GET', `${P}/blocklist/`, { token: admin })).status).toBe(200);
    expect((await gh.request('DELETE', `${P}/blocklist`, { token: admin })).status).toBe(405);
  });

  it("answers a path under /apps/ that names no route in the Pusher HTTP API's envelope", async () => {
    for (const [method, path] of [
      ['POST', '/apps//batch_events'],
      ['GET', '/apps/1/channels/no/such'],
      ['GET', '/apps//channels/news'],
    ] as const) {
      const res = await gh.request(method, path, method === 'POST' ? { body: { batch: [] } } : {});
      expect(res.status, path).toBe(404);
      expect(res.body, path).toEqual({ error: 'route_not_found', message: `The route ${path} could not be found.` });
    }
    const wrong = await gh.request('GET', '/apps/1/batch_events');
    expect([wrong.status, wrong.body.error]).toEqual([405, 'method_not_allowed']);
  });

  it('answers 401 to a garbage bearer header and never shows a stack trace', async () => {
    for (const header of [
      'Bearer',
      'Bearer ',
      'Bearer a b c',
      'Token 1|abc',
      '\u00e9\u00e9',
      'Bearer 99999999999999999999|x',
    ]) {
      const res = await gh.request('GET', '/api/v1/me', { headers: { authorization: header } });
      expect(res.status, header).toBe(401);
      expect(res.text).not.toMatch(/at .*\.ts:\d+/);
    }
  });

  it('answers keys named constructor, __proto__ or toString in a body with a 422 naming them, logged in or not', async () => {
    const A = '/api/v1/projects/default/default';
    const post = (path: string, raw: string, token?: string) =>
      gh.request('POST', path, {
        ...(token ? { token } : {}),
        rawBody: raw,
        headers: { 'content-type': 'application/json' },
      });
    for (const key of PROTO_KEYS) {
      // Anonymous routes with strict bodies: an unknown key is a field error.
      const login = await post(`${A}/readers/login`, withKey(key, 1, { reader_identifier: 'R-1' }));
      expect(login.status, key).toBe(422);
      expect(login.body, key).toEqual({
        message: `The ${key} field is not allowed.`,
        errors: { [key]: [`The ${key} field is not allowed.`] },
      });
      expect(Object.keys(login.body.errors)).toEqual([key]);
      const verify = await post(
        '/api/v1/reader-otp/verify',
        withKey(key, { [key]: 1 }, { otp: '123456', reader_identifier: 'R-1' }),
      );
      expect(verify.status, key).toBe(422);
      expect(verify.body.errors[key], key).toEqual([`The ${key} field is not allowed.`]);
      // A login body ignores unknown fields; the credentials decide.
      const token = await post(
        '/api/v1/auth/token',
        withKey(key, 'x', { email: 'nobody@example.test', password: 'wrong password', device_name: 'd' }),
      );
      expect(token.status, key).toBe(401);
      // A logged-in route, at the top level and nested.
      const user = await post(
        '/api/v1/users',
        withKey(key, 'x', { name: 'n', email: `${key.replace(/_/g, '')}@example.test`, password: 'long enough pw' }),
        admin,
      );
      expect(user.status, key).toBe(422);
      expect(Object.keys(user.body.errors), key).toEqual([key]);
      const nested = await post(
        `${A}/forms`,
        `{"name":"Survey","fields":[${withKey(key, 1, { name: 'size', label: 'Size', type: 'text' })}]}`,
        admin,
      );
      expect(nested.status, key).toBe(422);
      expect(nested.body.errors, key).toEqual({ [`fields.0.${key}`]: [`The fields.0.${key} field is not allowed.`] });
      const typed = await post(
        '/api/v1/users',
        `{"name":${withKey(key, 1)},"email":"typed@example.test","password":"long enough pw"}`,
        admin,
      );
      expect(typed.status, key).toBe(422);
      expect(Object.keys(typed.body.errors), key).toEqual(['name']);
      const inArray = await post(
        `${A}/attendees/import`,
        `{"attendees":[${withKey(key, 1, { first_name: 'Ada' })}],"mode":"all"}`,
        admin,
      );
      expect(inArray.status, key).not.toBe(500);
    }
  });

  it('answers keys named constructor, __proto__ or toString in a query string like any other parameter', async () => {
    for (const key of PROTO_KEYS) {
      const list = await gh.request('GET', `/api/v1/users?${encodeURIComponent(key)}=1&page=2`, { token: admin });
      expect(list.status, key).toBe(200);
      const bad = await gh.request('GET', `/api/v1/users?${encodeURIComponent(key)}=1&page=zero`, { token: admin });
      expect(bad.status, key).toBe(422);
      expect(Object.keys(bad.body.errors), key).toEqual(['page']);
      const anonymous = await gh.request(
        'GET',
        `/api/v1/broadcasting/config?${encodeURIComponent(key)}=${encodeURIComponent(key)}`,
      );
      expect(anonymous.status, key).not.toBe(500);
    }
  });

  it('answers keys named constructor, __proto__ or toString in signed incoming webhooks in the webhook envelope', async () => {
    const accessEvent = webhookPoster(gh, '/webhook/v1/access-event');
    const sync = webhookPoster(gh, '/webhook/v1/attendee-sync');
    const partner = webhookPoster(gh, '/webhook/v1/registration-partner');
    for (const key of PROTO_KEYS) {
      const top = await accessEvent.rawBody(
        withKey(key, { [key]: 1 }, { reader_id: 'NO-SUCH-READER', credential_value: 'X' }),
      );
      expect(top.status, key).toBe(404);
      expect(top.body, key).toEqual({
        error: 'unknown_reader',
        message: 'No reader has the identifier "NO-SUCH-READER".',
      });
      const typed = await accessEvent.rawBody(`{"reader_id":${withKey(key, 1)},"credential_value":"X"}`);
      expect(typed.status, key).toBe(400);
      expect(typed.body.errors, key).toEqual({ reader_id: [expect.any(String)] });
      const records = await sync.rawBody(
        `{"project_slug":"default","team_slug":"default","sync_mode":"upsert","attendees":[${withKey(key, 1, { external_id: `proto-${key}`, first_name: 'Ada' })}]}`,
      );
      expect(records.status, key).toBe(200);
      const nested = await partner.rawBody(
        `{"event_type":"registration.created","event_id":"evt-${key}","data":{"registration_id":"reg-${key}","attendee":${withKey(key, 1, { first_name: 'Grace' })}}}`,
      );
      expect(nested.status, key).not.toBe(500);
      expect(nested.body.error ?? nested.body.success, key).toBeDefined();
      const missing = await partner.rawBody(withKey(key, 1, { event_type: 'registration.created' }));
      expect(missing.status, key).toBe(400);
      expect(missing.body.error, key).toBe('validation_failed');
    }
  });

  it('keeps serving after every kind of bad request', async () => {
    expect((await gh.request('GET', '/health')).status).toBe(200);
    expect((await gh.request('GET', '/api/v1/me', { token: admin })).status).toBe(200);
  });
});
