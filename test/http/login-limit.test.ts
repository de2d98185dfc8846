import { afterEach, describe, expect, it } from 'vitest';
import { ADMIN_EMAIL, ADMIN_PASSWORD, createUser, startAppliance, type TestAppliance } from '../helpers/appliance.js';

// Failed logins are limited per account, apart from the per-address budget (docs/security.md, attack 11):
// one client guessing at an account is stopped at 5 failures a minute, that account only, from
// every address, while other accounts log in from the same address. Addresses are told apart by
// X-Forwarded-For (the appliance trusts one proxy hop here).

const B_EMAIL = 'neighbour@example.test';
const B_PASSWORD = 'a long enough password';

describe('per-account login limit', () => {
  let gh: TestAppliance | undefined;
  afterEach(async () => {
    await gh?.destroy();
    gh = undefined;
  });

  const start = async (env: Record<string, string> = {}) => {
    gh = await startAppliance({ GATEHOUSE_HTTP_TRUST_PROXY: 'true', GATEHOUSE_RATE_LIMIT_STANDARD: '60', ...env });
    await createUser(gh, await gh.token(), B_EMAIL);
    return gh;
  };
  const tokenLogin = (email: string, password: string, ip: string) =>
    gh!.request('POST', '/api/v1/auth/token', {
      body: { email, password, device_name: 'laptop' },
      headers: { 'x-forwarded-for': ip },
    });
  /** A cookie-session login as a browser makes it: CSRF cookie first, then the login with X-XSRF-TOKEN. */
  const sessionLogin = async (email: string, password: string, ip: string) => {
    const csrf = await fetch(`${gh!.url}/sanctum/csrf-cookie`, { headers: { 'x-forwarded-for': ip } });
    const cookies = csrf.headers.getSetCookie().map((c) => c.split(';')[0]!);
    const xsrf = decodeURIComponent(cookies.find((c) => c.startsWith('XSRF-TOKEN='))!.slice('XSRF-TOKEN='.length));
    return gh!.request('POST', '/api/v1/auth/session', {
      body: { email, password },
      headers: { cookie: cookies.join('; '), 'x-xsrf-token': xsrf, 'x-forwarded-for': ip },
    });
  };

  it('refuses the sixth login to an account in a minute with 429 and Retry-After, even with the right password', async () => {
    await start();
    for (let i = 0; i < 5; i++) expect((await tokenLogin(ADMIN_EMAIL, `wrong ${i}`, '10.0.0.1')).status).toBe(401);
    const locked = await tokenLogin(ADMIN_EMAIL, ADMIN_PASSWORD, '10.0.0.1');
    expect(locked.status).toBe(429);
    const retryAfter = Number(locked.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(locked.body).toEqual({
      message: `Too many failed logins for this account: try again in ${retryAfter} s.`,
      retry_after: retryAfter,
    });
    // The account is locked from every address, and for cookie sessions too.
    expect((await tokenLogin(ADMIN_EMAIL, ADMIN_PASSWORD, '10.0.0.2')).status).toBe(429);
    expect((await sessionLogin(ADMIN_EMAIL, ADMIN_PASSWORD, '10.0.0.3')).status).toBe(429);
  });

  it('lets another account log in from the same address and from others while one is locked', async () => {
    await start();
    for (let i = 0; i < 7; i++) await tokenLogin(ADMIN_EMAIL, `wrong ${i}`, '10.0.0.1');
    expect((await tokenLogin(ADMIN_EMAIL, ADMIN_PASSWORD, '10.0.0.1')).status).toBe(429);
    expect((await tokenLogin(B_EMAIL, B_PASSWORD, '10.0.0.1')).status).toBe(201);
    expect((await tokenLogin(B_EMAIL, B_PASSWORD, '10.0.0.9')).status).toBe(201);
    expect((await sessionLogin(B_EMAIL, B_PASSWORD, '10.0.0.1')).status).toBe(200);
  });

  it('counts failed cookie-session logins against the same account budget', async () => {
    await start();
    for (let i = 0; i < 3; i++) expect((await sessionLogin(B_EMAIL, `wrong ${i}`, `10.0.1.${i}`)).status).toBe(401);
    for (let i = 0; i < 2; i++) expect((await tokenLogin(B_EMAIL, `wrong ${i}`, `10.0.2.${i}`)).status).toBe(401);
    expect((await tokenLogin(B_EMAIL, B_PASSWORD, '10.0.3.1')).status).toBe(429);
  });

  it('locks an unknown email the same way, so the lock tells nothing about which accounts exist', async () => {
    await start();
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await tokenLogin('nobody@example.test', 'guess', '10.0.0.1')).status);
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429]);
  });

  it('forgets the failures of an account after a successful login', async () => {
    await start();
    for (let i = 0; i < 4; i++) expect((await tokenLogin(B_EMAIL, `wrong ${i}`, '10.0.0.1')).status).toBe(401);
    expect((await tokenLogin(B_EMAIL, B_PASSWORD, '10.0.0.1')).status).toBe(201);
    for (let i = 0; i < 4; i++) expect((await tokenLogin(B_EMAIL, `wrong ${i}`, '10.0.0.1')).status).toBe(401);
    expect((await tokenLogin(B_EMAIL, B_PASSWORD, '10.0.0.1')).status).toBe(201);
  });

  it('does not forget them for the right password without a device name (no oracle)', async () => {
    await start();
    for (let i = 0; i < 4; i++) expect((await tokenLogin(B_EMAIL, `wrong ${i}`, '10.0.0.1')).status).toBe(401);
    const noDevice = await gh!.request('POST', '/api/v1/auth/token', {
      body: { email: B_EMAIL, password: B_PASSWORD },
    });
    expect(noDevice.status).toBe(401);
    expect((await tokenLogin(B_EMAIL, B_PASSWORD, '10.0.0.1')).status).toBe(429);
  });

  it('serves the account again once Retry-After has passed, and follows its configuration', async () => {
    await start({ GATEHOUSE_AUTH_LOGIN_FAILURES_PER_ACCOUNT: '2', GATEHOUSE_AUTH_LOGIN_FAILURE_WINDOW_SECONDS: '2' });
    for (let i = 0; i < 2; i++) expect((await tokenLogin(B_EMAIL, 'wrong', '10.0.0.1')).status).toBe(401);
    const locked = await tokenLogin(B_EMAIL, B_PASSWORD, '10.0.0.1');
    expect(locked.status).toBe(429);
    const retryAfter = Number(locked.headers.get('retry-after'));
    expect(retryAfter).toBeLessThanOrEqual(2);
    await new Promise((r) => setTimeout(r, retryAfter * 1000 + 100));
    expect((await tokenLogin(B_EMAIL, B_PASSWORD, '10.0.0.1')).status).toBe(201);
  });

  it('turns the per-account limit off with 0, leaving the per-address budget', async () => {
    await start({ GATEHOUSE_AUTH_LOGIN_FAILURES_PER_ACCOUNT: '0', GATEHOUSE_RATE_LIMIT_STANDARD: '12' });
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) statuses.push((await tokenLogin(B_EMAIL, 'wrong', '10.0.0.7')).status);
    expect(statuses.every((s) => s === 401)).toBe(true);
    expect((await tokenLogin(B_EMAIL, B_PASSWORD, '10.0.0.7')).status).toBe(201);
    expect((await tokenLogin(B_EMAIL, B_PASSWORD, '10.0.0.7')).status).toBe(201);
    expect((await tokenLogin(B_EMAIL, B_PASSWORD, '10.0.0.7')).status).toBe(429); // the 13th from that address
  });
});
