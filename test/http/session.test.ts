import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { cookieBrowser } from '../helpers/cookie-session.js';

describe('cookie sessions for same-domain single-page apps', () => {
  let gh: TestAppliance;
  beforeAll(async () => {
    gh = await startAppliance();
  });
  afterAll(() => gh.destroy());

  const browser = async () => cookieBrowser(gh);

  it('sets XSRF-TOKEN (readable) and an HttpOnly session cookie at /sanctum/csrf-cookie', async () => {
    const res = await fetch(`${gh.url}/sanctum/csrf-cookie`);
    expect(res.status).toBe(204);
    const cookies = res.headers.getSetCookie();
    const xsrf = cookies.find((c) => c.startsWith('XSRF-TOKEN='))!;
    const session = cookies.find((c) => c.startsWith('gatehouse_session='))!;
    expect(xsrf).toBeDefined();
    expect(xsrf.toLowerCase()).not.toContain('httponly');
    expect(session.toLowerCase()).toContain('httponly');
    expect(session.toLowerCase()).toContain('samesite=lax');
  });

  it("answers 419 'Token Mismatch' to a login without the CSRF cookie or header", async () => {
    const { send } = await browser();
    const noCookie = await send('POST', '/api/v1/auth/session', {
      body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD },
    });
    expect(noCookie.status).toBe(419);
    expect(noCookie.body).toEqual({ message: 'Token Mismatch' });

    const b = await browser();
    await b.send('GET', '/sanctum/csrf-cookie');
    const noHeader = await b.send('POST', '/api/v1/auth/session', {
      body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD },
    });
    expect(noHeader.status).toBe(419);
    const wrongHeader = await b.send('POST', '/api/v1/auth/session', {
      body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD },
      csrf: 'forged',
    });
    expect(wrongHeader.status).toBe(419);
  });

  it('logs in, serves the API on the cookie, checks CSRF on writes and logs out', async () => {
    const { jar, send } = await browser();
    await send('GET', '/sanctum/csrf-cookie');
    const anonymousSession = jar.cookies.get('gatehouse_session');
    const login = await send('POST', '/api/v1/auth/session', {
      body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD },
      csrf: true,
    });
    expect(login.status).toBe(200);
    expect(login.body.data.email).toBe(ADMIN_EMAIL);
    // A fresh session id on login (no fixation); the CSRF token carries over.
    expect(jar.cookies.get('gatehouse_session')).not.toBe(anonymousSession);

    const me = await send('GET', '/api/v1/me');
    expect(me.status).toBe(200);
    expect(me.body.data.current_token).toMatchObject({ name: 'session', abilities: ['*'] });

    const body = { name: 'Session made', email: 'session-made@example.test', password: 'long enough pw' };
    const withoutCsrf = await send('POST', '/api/v1/users', { body });
    expect(withoutCsrf.status).toBe(419);
    expect(withoutCsrf.body.message).toBe('Token Mismatch');
    const withCsrf = await send('POST', '/api/v1/users', { body, csrf: true });
    expect(withCsrf.status).toBe(201);

    const logout = await send('DELETE', '/api/v1/auth/session', { csrf: true });
    expect(logout.status).toBe(204);
    expect(jar.cookies.has('gatehouse_session')).toBe(false);
    expect((await send('GET', '/api/v1/me')).status).toBe(401);
  });

  it("answers 'Unable to authenticate' to a session login with a wrong password", async () => {
    const { send } = await browser();
    await send('GET', '/sanctum/csrf-cookie');
    const res = await send('POST', '/api/v1/auth/session', {
      body: { email: ADMIN_EMAIL, password: 'nope nope' },
      csrf: true,
    });
    expect(res.status).toBe(401);
    expect(res.body.message).toBe('Unable to authenticate');
  });

  it('does not let a bearer token log out a session, nor a session revoke a token', async () => {
    const token = await gh.token();
    expect((await gh.request('DELETE', '/api/v1/auth/session', { token })).status).toBe(400);
    const { send } = await browser();
    await send('GET', '/sanctum/csrf-cookie');
    await send('POST', '/api/v1/auth/session', { body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD }, csrf: true });
    expect((await send('DELETE', '/api/v1/auth/token', { csrf: true })).status).toBe(400);
  });
});
