import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { signedInBrowser } from '../helpers/cookie-session.js';
import { runCli } from '../helpers/process.js';

// Read-only accounts (docs/auth.md "Read-only accounts"): their sessions and
// tokens read and never write, whatever a token was given, from the moment the flag is set.

const A = '/api/v1/projects/default/default';
const PASSWORD = 'a long enough password';

describe('read-only accounts', () => {
  let gh: TestAppliance;
  let admin: ReturnType<typeof client>;
  let viewer: number;

  beforeAll(async () => {
    gh = await startAppliance();
    admin = client(gh, await gh.token());
    const created = await admin.post('/api/v1/users', {
      name: 'Door staff',
      email: 'viewer@example.test',
      password: PASSWORD,
      read_only: true,
    });
    expect(created.status).toBe(201);
    expect(created.body.data.read_only).toBe(true);
    viewer = created.body.data.id;
    expect((await admin.post(`/api/v1/users/${viewer}/teams`, { team_slug: 'default' })).status).toBeLessThan(300);
  });
  afterAll(() => gh.destroy());

  it("gives a read-only account's session the read scope: it reads, and every write is 403", async () => {
    const b = await signedInBrowser(gh, 'viewer@example.test', PASSWORD);
    const me = await b.send('GET', '/api/v1/me');
    expect(me.body.data.current_token.abilities).toEqual(['read']);
    expect((await b.send('GET', `${A}/access-zones`)).status).toBe(200);
    const write = await b.send('POST', `${A}/access-zones`, { body: { name: 'Nope' }, csrf: true });
    expect(write.status).toBe(403);
    expect(write.body).toEqual({ message: 'Invalid ability provided.' });
    // The reader logins' one-time passwords mint credentials: not for a reader of the project.
    expect((await b.send('GET', `${A}/readers/logins`)).status).toBe(403);
  });

  it('caps a token to its read scopes, and refuses to mint a write scope for a read-only account', async () => {
    const asked = await gh.request('POST', '/api/v1/auth/token', {
      body: { email: 'viewer@example.test', password: PASSWORD, device_name: 'tablet', scopes: ['access:write'] },
    });
    expect(asked.status).toBe(422);
    expect(asked.body.errors.scopes[0]).toContain('access:write');

    const byDefault = await gh.request('POST', '/api/v1/auth/token', {
      body: { email: 'viewer@example.test', password: PASSWORD, device_name: 'tablet' },
    });
    expect(byDefault.status).toBe(201);
    const api = client(gh, byDefault.body.token);
    expect((await api.get('/api/v1/me')).body.data.current_token.abilities).toEqual(['read']);
    expect((await api.get(`${A}/attendees`)).status).toBe(200);
    expect((await api.post(`${A}/access-zones`, { name: 'Nope' })).status).toBe(403);
  });

  it('reaches tokens and sessions made before the flag was set, and lets go when it is cleared', async () => {
    const writer = await admin.post('/api/v1/users', {
      name: 'Supervisor',
      email: 'super@example.test',
      password: PASSWORD,
    });
    await admin.post(`/api/v1/users/${writer.body.data.id}/teams`, { team_slug: 'default' });
    const token = await gh.token(['*'], 'super@example.test', PASSWORD);
    const api = client(gh, token);
    const session = await signedInBrowser(gh, 'super@example.test', PASSWORD);
    expect((await api.post(`${A}/access-zones`, { name: 'Before' })).status).toBe(201);

    expect((await admin.put(`/api/v1/users/${writer.body.data.id}`, { read_only: true })).body.data.read_only).toBe(
      true,
    );
    expect((await api.post(`${A}/access-zones`, { name: 'After' })).status).toBe(403);
    expect((await session.send('POST', `${A}/access-zones`, { body: { name: 'After' }, csrf: true })).status).toBe(403);
    expect((await api.get(`${A}/access-zones`)).status).toBe(200);

    await admin.put(`/api/v1/users/${writer.body.data.id}`, { read_only: false });
    expect((await api.post(`${A}/access-zones`, { name: 'Again' })).status).toBe(201);
    expect((await session.send('GET', '/api/v1/me')).body.data.current_token.abilities).toEqual(['*']);
  });

  it('refuses an administrator that is read-only, either way round (422 on read_only)', async () => {
    const both = await admin.post('/api/v1/users', {
      name: 'x',
      email: 'both@example.test',
      password: PASSWORD,
      is_admin: true,
      read_only: true,
    });
    expect(both.status).toBe(422);
    expect(both.body.errors.read_only).toEqual(['An administrator cannot be read-only.']);
    expect((await admin.put(`/api/v1/users/${viewer}`, { is_admin: true })).status).toBe(422);
    expect((await admin.put('/api/v1/users/1', { read_only: true })).status).toBe(422);
    expect((await admin.put(`/api/v1/users/${viewer}`, { read_only: 'yes' })).status).toBe(422);
  });

  it('is set from the shell too (users create --read-only), and refused with --admin', async () => {
    const env = { GATEHOUSE_DATA_DIR: gh.dataDir };
    const made = await runCli(
      ['users', 'create', '--email', 'shell@example.test', '--password', PASSWORD, '--read-only'],
      env,
    );
    expect(made.code, made.stderr).toBe(0);
    expect(JSON.parse(made.stdout).read_only).toBe(true);
    const refused = await runCli(['users', 'create', '--email', 'shell2@example.test', '--admin', '--read-only'], env);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('cannot be read-only');
  });
});
