import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ADMIN_EMAIL,
  ADMIN_PASSWORD,
  client,
  createUser,
  startAppliance,
  type TestAppliance,
} from '../helpers/appliance.js';
import { signedInBrowser } from '../helpers/cookie-session.js';

// Settings → API tokens (spec: Token lifecycle, "token creation in the dashboard"):
// GET/POST /api/v1/me/tokens and DELETE /api/v1/me/tokens/{id}, from a cookie session as the console
// calls them.

const A = '/api/v1/projects/default/default';

describe('the signed-in user’s API tokens', () => {
  let gh: TestAppliance;
  beforeAll(async () => {
    gh = await startAppliance();
  });
  afterAll(() => gh.destroy());

  it('creates a token with chosen abilities (value shown once), lists it with its last use, and revokes it', async () => {
    const b = await signedInBrowser(gh, ADMIN_EMAIL, ADMIN_PASSWORD);
    const made = await b.send('POST', '/api/v1/me/tokens', {
      body: { name: 'door display', abilities: ['access:read'] },
      csrf: true,
    });
    expect(made.status).toBe(201);
    expect(made.body.data).toMatchObject({ name: 'door display', abilities: ['access:read'], last_used_at: null });
    const value: string = made.body.data.token;
    expect(value).toMatch(new RegExp(`^${made.body.data.id}\\|`));

    const api = client(gh, value);
    expect((await api.get(`${A}/access-zones`)).status).toBe(200);
    const refused = await api.post(`${A}/access-zones`, { name: 'x' });
    expect([refused.status, refused.body]).toEqual([
      401,
      { message: 'Unauthenticated.', missing_ability: 'access:write' },
    ]); // made without it

    const listed = await b.send('GET', '/api/v1/me/tokens');
    const row = listed.body.data.find((t: { id: number }) => t.id === made.body.data.id);
    expect(row.last_used_at).not.toBeNull();
    expect(row).not.toHaveProperty('token');
    expect(JSON.stringify(listed.body)).not.toContain(value.split('|')[1]);

    expect((await b.send('DELETE', `/api/v1/me/tokens/${made.body.data.id}`, { csrf: true })).status).toBe(204);
    expect((await api.get(`${A}/access-zones`)).status).toBe(401);
    expect(
      (await b.send('GET', '/api/v1/me/tokens')).body.data.some((t: { id: number }) => t.id === made.body.data.id),
    ).toBe(false);
  });

  it('answers 422 to a missing name, no ability, an unknown one; 419 without the CSRF header', async () => {
    const b = await signedInBrowser(gh, ADMIN_EMAIL, ADMIN_PASSWORD);
    const empty = await b.send('POST', '/api/v1/me/tokens', { body: { name: ' ', abilities: [] }, csrf: true });
    expect(empty.status).toBe(422);
    expect(Object.keys(empty.body.errors).sort()).toEqual(['abilities', 'name']);
    const unknown = await b.send('POST', '/api/v1/me/tokens', {
      body: { name: 'x', abilities: ['doors:open'] },
      csrf: true,
    });
    expect(unknown.status).toBe(422);
    expect(Object.keys(unknown.body.errors)[0]).toMatch(/^abilities/);
    expect((await b.send('POST', '/api/v1/me/tokens', { body: { name: 'x', abilities: ['read'] } })).status).toBe(419);
  });

  it('never reaches another user’s tokens; a token without `*` lists its user’s tokens and makes none', async () => {
    const admin = client(gh, await gh.token());
    const other = await createUser(gh, await gh.token(), 'other@example.test', ['read']);
    const theirs = (await client(gh, other.token).get('/api/v1/me/tokens')).body.data;
    expect(theirs).toHaveLength(1);
    expect((await admin.del(`/api/v1/me/tokens/${theirs[0].id}`)).status).toBe(404);
    expect((await client(gh, other.token).get(`${A}/access-zones`)).status).toBe(404); // no membership: the project is not theirs

    const narrow = client(gh, other.token);
    expect((await narrow.post('/api/v1/me/tokens', { name: 'more', abilities: ['*'] })).status).toBe(401);
    expect((await narrow.del(`/api/v1/me/tokens/${theirs[0].id}`)).body).toMatchObject({
      message: 'Unauthenticated.',
      missing_ability: '*',
    });
  });
});
