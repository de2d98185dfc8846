import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCatalogue, formatMessage, AppError, validationError } from '../../src/errors.js';
import { startAppliance, type TestAppliance } from '../helpers/appliance.js';

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
    const res = await gh.request('POST', '/api/v1/users', { token: admin, rawBody: '{"name": "x", ', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/^The request body is not valid JSON/);
    expect(await userCount()).toBe(before);
  });

  it('answers 415 to a body that is not JSON', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
      const res = await gh.request('POST', '/api/v1/users', { token: admin, rawBody: 'name=x', headers: { 'content-type': type } });
      expect(res.status, type).toBe(415);
      expect(res.body.message).toContain('application/json');
    }
  });

  it('answers 413 to a body over the configured limit', async () => {
    const body = JSON.stringify({ name: 'x'.repeat(5000), email: 'big@example.test', password: 'long enough pw' });
    const res = await gh.request('POST', '/api/v1/users', { token: admin, rawBody: body, headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(413);
    expect(res.body).toEqual({ message: 'The request body exceeds the limit of 4096 bytes.' });
  });

  it('answers 413 to a chunked body that grows past the limit', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(`${gh.url}/api/v1/users`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${admin}` } }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      });
      req.on('error', reject);
      req.write('{"name":"');
      req.write('y'.repeat(8000));
      req.end('"}');
    });
    expect(status).toBe(413);
  });

  it('answers 422 to a JSON body that is not an object', async () => {
    for (const raw of ['[1,2]', '"text"', 'null', '42']) {
      const res = await gh.request('POST', '/api/v1/users', { token: admin, rawBody: raw, headers: { 'content-type': 'application/json' } });
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

  it('answers 401 to a garbage bearer header and never shows a stack trace', async () => {
    for (const header of ['Bearer', 'Bearer ', 'Bearer a b c', 'Token 1|abc', '\u00e9\u00e9', 'Bearer 99999999999999999999|x']) {
      const res = await gh.request('GET', '/api/v1/me', { headers: { authorization: header } });
      expect(res.status, header).toBe(401);
      expect(res.text).not.toMatch(/at .*\.ts:\d+/);
    }
  });

  it('keeps serving after every kind of bad request', async () => {
    expect((await gh.request('GET', '/health')).status).toBe(200);
    expect((await gh.request('GET', '/api/v1/me', { token: admin })).status).toBe(200);
  });
});

describe('error catalogue', () => {
  it('gives each entry a 4xx or 5xx status, a message and the JSON envelope', () => {
    for (const [code, entry] of Object.entries(errorCatalogue)) {
      expect(entry.status, code).toBeGreaterThanOrEqual(400);
      expect(entry.status, code).toBeLessThan(600);
      const err = new AppError(code as keyof typeof errorCatalogue, { path: '/x', resource: 'Thing', method: 'GET', allowed: 'POST', limit: 1, type: 't', expected: 'e', detail: 'd', identifier: 'R1', appId: '1', header: 'X-Svc-Signature', address: '10.0.0.9', seconds: 300 });
      expect(err.body.message, code).toBe(err.message);
      expect(err.message, code).not.toMatch(/\{\w+\}/);
    }
    expect(formatMessage('{resource} not found.', { resource: 'User' })).toBe('User not found.');
  });

  it("builds Laravel's 422 message: the first error and how many more", () => {
    expect(validationError({ a: ['A is bad.'] }).body.message).toBe('A is bad.');
    expect(validationError({ a: ['A is bad.', 'A again.'], b: ['B is bad.'] }).body.message).toBe('A is bad. (and 2 more errors)');
    expect(validationError({ a: ['A is bad.'], b: ['B is bad.'] }).body.message).toBe('A is bad. (and 1 more error)');
  });
});
