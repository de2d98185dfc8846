import { createHash } from 'node:crypto';
import BetterSqlite3 from 'better-sqlite3';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ADMIN_EMAIL,
  ADMIN_PASSWORD,
  ManualClock,
  createUser,
  startAppliance,
  type TestAppliance,
} from '../helpers/appliance.js';

describe('token authentication', () => {
  let gh: TestAppliance;
  const clock = new ManualClock();
  beforeAll(async () => {
    gh = await startAppliance({}, { clock });
  });
  afterAll(() => gh.destroy());

  it('issues a Bearer token of the form <id>|<random> with no expiry by default', async () => {
    const res = await gh.request('POST', '/api/v1/auth/token', {
      body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD, device_name: 'laptop', scopes: ['read'] },
    });
    expect(res.status).toBe(201);
    expect(res.body.token_type).toBe('Bearer');
    expect(res.body.expires_at).toBeNull();
    expect(res.body.token).toMatch(/^\d+\|[A-Za-z0-9_-]{40}$/);
  });

  it.each([
    ['a wrong password', { email: ADMIN_EMAIL, password: 'wrong password', device_name: 'x' }],
    ['an unknown email', { email: 'nobody@example.test', password: ADMIN_PASSWORD, device_name: 'x' }],
    ['a missing device name', { email: ADMIN_EMAIL, password: ADMIN_PASSWORD }],
    ['a blank device name', { email: ADMIN_EMAIL, password: ADMIN_PASSWORD, device_name: '  ' }],
    ['a missing password', { email: ADMIN_EMAIL, device_name: 'x' }],
    ['no body at all', undefined],
  ])("answers 'Unable to authenticate' for %s", async (_label, body) => {
    const res = await gh.request('POST', '/api/v1/auth/token', body === undefined ? {} : { body });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ message: 'Unable to authenticate' });
  });

  it('rejects wrong field types and unknown scopes with 422 and field errors', async () => {
    const wrongType = await gh.request('POST', '/api/v1/auth/token', {
      body: { email: 5, password: ADMIN_PASSWORD, device_name: 'x' },
    });
    expect(wrongType.status).toBe(422);
    expect(Object.keys(wrongType.body.errors)).toEqual(['email']);
    const badScope = await gh.request('POST', '/api/v1/auth/token', {
      body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD, device_name: 'x', scopes: ['everything'] },
    });
    expect(badScope.status).toBe(422);
    expect(badScope.body.errors['scopes.0']).toHaveLength(1);
  });

  it('describes the current user and token at /me', async () => {
    const token = await gh.token(['attendees:read', 'forms:read']);
    const res = await gh.request('GET', '/api/v1/me', { token });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ email: ADMIN_EMAIL, name: 'Administrator' });
    expect(res.body.data.current_token).toEqual({
      name: 'test',
      abilities: ['attendees:read', 'forms:read'],
      expires_at: null,
      last_used_at: new Date(clock.now()).toISOString(),
    });
  });

  it('stores only the SHA-256 of the token, never the token itself', async () => {
    const token = await gh.token();
    const secret = token.split('|')[1]!;
    const db = new BetterSqlite3(join(gh.dataDir, 'gatehouse.db'), { readonly: true });
    const rows = db.prepare('SELECT token_hash FROM personal_access_tokens').all() as { token_hash: Buffer }[];
    db.close();
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.some((r) => r.token_hash.toString('hex') === createHash('sha256').update(secret).digest('hex'))).toBe(
      true,
    );
    expect(rows.every((r) => !r.token_hash.toString('latin1').includes(secret))).toBe(true);
  });

  it('refuses a token whose secret part is wrong, even with a valid id', async () => {
    const token = await gh.token();
    const [id] = token.split('|');
    for (const bad of [`${id}|${'x'.repeat(40)}`, `${id}|`, 'garbage', `${id}`, '|abc', 'Basic abc']) {
      const res = await gh.request('GET', '/api/v1/me', { headers: { authorization: `Bearer ${bad}` } });
      expect(res.status, bad).toBe(401);
      expect(res.body).toEqual({ message: 'Unauthenticated.' });
    }
    const notBearer = await gh.request('GET', '/api/v1/me', { headers: { authorization: `Basic ${token}` } });
    expect(notBearer.status).toBe(401);
  });

  it('revokes only the current token, which stops working on the very next request', async () => {
    const a = await gh.token();
    const b = await gh.token();
    const res = await gh.request('DELETE', '/api/v1/auth/token', { token: a });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: { revoked: 1 } });
    expect((await gh.request('GET', '/api/v1/me', { token: a })).status).toBe(401);
    expect((await gh.request('GET', '/api/v1/me', { token: b })).status).toBe(200);
  });

  it("revokes all of the user's tokens and spares other users'", async () => {
    const admin = await gh.token();
    const other = await createUser(gh, admin, 'other@example.test');
    const mine = [await gh.token(), await gh.token()];
    const res = await gh.request('DELETE', '/api/v1/auth/tokens', { token: mine[0] });
    expect(res.status).toBe(200);
    expect(res.body.data.revoked).toBeGreaterThanOrEqual(3);
    for (const t of [admin, ...mine]) expect((await gh.request('GET', '/api/v1/me', { token: t })).status).toBe(401);
    expect((await gh.request('GET', '/api/v1/me', { token: other.token })).status).toBe(200);
  });

  it('refuses an expired token once an administrator configures expiry', async () => {
    const admin = await gh.token();
    const set = await gh.request('PUT', '/api/v1/settings', { token: admin, body: { token_expiry_minutes: 60 } });
    expect(set.status).toBe(200);
    expect(set.body.data.token_expiry_minutes).toBe(60);
    const res = await gh.request('POST', '/api/v1/auth/token', {
      body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD, device_name: 'expiring' },
    });
    expect(Date.parse(res.body.expires_at)).toBe(clock.now() + 60 * 60_000);
    const token = res.body.token as string;
    const me = await gh.request('GET', '/api/v1/me', { token });
    expect(me.body.data.current_token.expires_at).toBe(res.body.expires_at);
    clock.advance(59 * 60_000);
    expect((await gh.request('GET', '/api/v1/me', { token })).status).toBe(200);
    clock.advance(61_000);
    expect((await gh.request('GET', '/api/v1/me', { token })).status).toBe(401);
    // Turning expiry off again restores tokens that only the setting expired.
    const fresh = await gh.token();
    await gh.request('PUT', '/api/v1/settings', { token: fresh, body: { token_expiry_minutes: null } });
    expect((await gh.request('GET', '/api/v1/me', { token: fresh })).body.data.current_token.expires_at).toBeNull();
  });

  it('keeps last_used_at current without a database write on every request', async () => {
    const token = await gh.token();
    const id = Number(token.split('|')[0]);
    const stored = () => {
      const db = new BetterSqlite3(join(gh.dataDir, 'gatehouse.db'), { readonly: true });
      const row = db.prepare('SELECT last_used_at FROM personal_access_tokens WHERE id = ?').get(id) as {
        last_used_at: string | null;
      };
      db.close();
      return row.last_used_at;
    };
    await gh.request('GET', '/api/v1/me', { token });
    const first = stored();
    expect(first).toBe(new Date(clock.now()).toISOString());
    clock.advance(20_000);
    const me = await gh.request('GET', '/api/v1/me', { token });
    expect(me.body.data.current_token.last_used_at).toBe(new Date(clock.now()).toISOString());
    expect(stored()).toBe(first); // not written again within the minute
    clock.advance(45_000);
    await gh.request('GET', '/api/v1/me', { token });
    expect(stored()).toBe(new Date(clock.now()).toISOString());
  });
});
