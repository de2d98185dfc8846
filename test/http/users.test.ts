import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUser, startAppliance, type TestAppliance } from '../helpers/appliance.js';

describe('users, teams and project reach', () => {
  let gh: TestAppliance;
  let admin: string;
  beforeAll(async () => {
    gh = await startAppliance();
    admin = await gh.token();
  });
  afterAll(() => gh.destroy());

  it('lets administrators create, list, show and update users', async () => {
    const created = await gh.request('POST', '/api/v1/users', {
      token: admin,
      body: { name: 'Dana', email: 'Dana@Example.test', password: 'dana password' },
    });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({
      name: 'Dana',
      email: 'dana@example.test',
      is_admin: false,
      is_active: true,
      teams: [],
      projects: [],
    });
    const id = created.body.data.id;
    expect(created.body.data).not.toHaveProperty('password_hash');

    const taken = await gh.request('POST', '/api/v1/users', {
      token: admin,
      body: { name: 'Dup', email: 'dana@example.test', password: 'dana password' },
    });
    expect(taken.status).toBe(422);
    expect(taken.body.errors.email).toEqual(['The email has already been taken.']);

    const list = await gh.request('GET', '/api/v1/users?per_page=1&page=2', { token: admin });
    expect(list.status).toBe(200);
    expect(list.body.meta).toEqual({ current_page: 2, per_page: 1, total: 2 });
    expect(list.body.data).toHaveLength(1);
    expect(list.body.links.prev).toMatch(/page=1/);
    expect(list.body.links.next).toBeNull();

    for (const q of ['per_page=500', 'per_page=0', 'page=0', 'page=abc']) {
      const bad = await gh.request('GET', `/api/v1/users?${q}`, { token: admin });
      expect(bad.status, q).toBe(422);
    }
    const defaults = await gh.request('GET', '/api/v1/users', { token: admin });
    expect(defaults.body.meta.per_page).toBe(15);

    const updated = await gh.request('PUT', `/api/v1/users/${id}`, { token: admin, body: { name: 'Dana S.' } });
    expect(updated.body.data.name).toBe('Dana S.');
    expect((await gh.request('GET', `/api/v1/users/${id}`, { token: admin })).body.data.name).toBe('Dana S.');
    expect((await gh.request('GET', '/api/v1/users/999999', { token: admin })).status).toBe(404);
    expect((await gh.request('GET', '/api/v1/users/abc', { token: admin })).status).toBe(404);
  });

  it('refuses unknown fields and wrong types on user creation, changing nothing', async () => {
    const before = (await gh.request('GET', '/api/v1/users', { token: admin })).body.meta.total;
    const res = await gh.request('POST', '/api/v1/users', {
      token: admin,
      body: { name: 'X', email: 'x@example.test', password: 'x password', role: 'god' },
    });
    expect(res.status).toBe(422);
    expect(res.body.errors.role).toEqual(['The role field is not allowed.']);
    const types = await gh.request('POST', '/api/v1/users', {
      token: admin,
      body: { name: 3, email: 'y@example.test', password: 'short', is_admin: 'yes' },
    });
    expect(types.status).toBe(422);
    expect(Object.keys(types.body.errors).sort()).toEqual(['is_admin', 'name', 'password']);
    expect(types.body.message).toMatch(/\(and 2 more errors\)$/);
    expect((await gh.request('GET', '/api/v1/users', { token: admin })).body.meta.total).toBe(before);
  });

  it('forbids user administration to non-administrators', async () => {
    const user = await createUser(gh, admin, 'plain@example.test');
    const res = await gh.request('GET', '/api/v1/users', { token: user.token });
    expect(res.status).toBe(403);
    expect(res.body.message).toBe('This action is unauthorized.');
  });

  it('stops a deactivated user at once: no new tokens, existing ones refused, and back on reactivation', async () => {
    const password = 'a long enough password';
    const user = await createUser(gh, admin, 'leaver@example.test');
    expect((await gh.request('GET', '/api/v1/me', { token: user.token })).status).toBe(200);
    const off = await gh.request('PUT', `/api/v1/users/${user.id}`, { token: admin, body: { is_active: false } });
    expect(off.body.data.is_active).toBe(false);
    expect((await gh.request('GET', '/api/v1/me', { token: user.token })).status).toBe(401);
    const login = await gh.request('POST', '/api/v1/auth/token', {
      body: { email: 'leaver@example.test', password, device_name: 'x' },
    });
    expect(login.status).toBe(401);
    expect(login.body.message).toBe('Unable to authenticate');
    await gh.request('PUT', `/api/v1/users/${user.id}`, { token: admin, body: { is_active: true } });
    expect((await gh.request('GET', '/api/v1/me', { token: user.token })).status).toBe(200);
  });

  it('answers 401 to the token of a deleted user', async () => {
    const user = await createUser(gh, admin, 'deleted@example.test');
    expect((await gh.request('DELETE', `/api/v1/users/${user.id}`, { token: admin })).status).toBe(204);
    const res = await gh.request('GET', '/api/v1/me', { token: user.token });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ message: 'Unauthenticated.' });
  });

  it('will not let an administrator delete, deactivate or demote themselves', async () => {
    const me = (await gh.request('GET', '/api/v1/me', { token: admin })).body.data.id;
    expect((await gh.request('DELETE', `/api/v1/users/${me}`, { token: admin })).status).toBe(409);
    expect((await gh.request('PUT', `/api/v1/users/${me}`, { token: admin, body: { is_active: false } })).status).toBe(
      422,
    );
    expect((await gh.request('PUT', `/api/v1/users/${me}`, { token: admin, body: { is_admin: false } })).status).toBe(
      422,
    );
  });

  it('shows each account only the projects it may reach, and 404s the rest', async () => {
    const team = await gh.request('POST', '/api/v1/teams', { token: admin, body: { name: 'North Arena' } });
    expect(team.status).toBe(201);
    expect(team.body.data.slug).toBe('north-arena');
    const p1 = await gh.request('POST', '/api/v1/projects', {
      token: admin,
      body: { name: 'Spring Fair', team_slug: 'north-arena', timezone: 'Europe/Berlin' },
    });
    expect(p1.status).toBe(201);
    expect(p1.body.data).toMatchObject({ slug: 'spring-fair', team_slug: 'north-arena', timezone: 'Europe/Berlin' });
    const p2 = await gh.request('POST', '/api/v1/projects', {
      token: admin,
      body: { name: 'Winter Gala', slug: 'gala', team_slug: 'north-arena' },
    });
    expect(p2.body.data.timezone).toBe('UTC');

    const teamUser = await createUser(gh, admin, 'team-member@example.test');
    const projectUser = await createUser(gh, admin, 'project-member@example.test');
    const outsider = await createUser(gh, admin, 'outsider@example.test');
    expect(
      (
        await gh.request('POST', `/api/v1/users/${teamUser.id}/teams`, {
          token: admin,
          body: { team_slug: 'north-arena' },
        })
      ).body.data.teams,
    ).toEqual(['north-arena']);
    const grant = await gh.request('POST', `/api/v1/users/${projectUser.id}/projects`, {
      token: admin,
      body: { team_slug: 'north-arena', project_slug: 'gala' },
    });
    expect(grant.body.data.projects).toEqual(['north-arena/gala']);

    const slugs = async (token: string) =>
      (await gh.request('GET', '/api/v1/projects', { token })).body.data.map((p: { slug: string }) => p.slug).sort();
    expect(await slugs(teamUser.token)).toEqual(['gala', 'spring-fair']);
    expect(await slugs(projectUser.token)).toEqual(['gala']);
    expect(await slugs(outsider.token)).toEqual([]);
    expect(await slugs(admin)).toEqual(['default', 'gala', 'spring-fair']);

    expect((await gh.request('GET', '/api/v1/projects/north-arena/gala', { token: projectUser.token })).status).toBe(
      200,
    );
    const hidden = await gh.request('GET', '/api/v1/projects/north-arena/spring-fair', { token: projectUser.token });
    expect(hidden.status).toBe(404);
    expect(hidden.body).toEqual({ message: 'Project not found.' });
    expect((await gh.request('GET', '/api/v1/projects/north-arena/nope', { token: admin })).status).toBe(404);

    const revoke = await gh.request('DELETE', `/api/v1/users/${teamUser.id}/teams/north-arena`, { token: admin });
    expect(revoke.body.data.teams).toEqual([]);
    expect(await slugs(teamUser.token)).toEqual([]);
  });

  it('validates projects: time zone, slug format and uniqueness, unknown team', async () => {
    const bad = await gh.request('POST', '/api/v1/projects', {
      token: admin,
      body: { name: 'X', timezone: 'Mars/Olympus', slug: 'Not A Slug' },
    });
    expect(bad.status).toBe(422);
    expect(Object.keys(bad.body.errors).sort()).toEqual(['slug', 'timezone']);
    const team = await gh.request('POST', '/api/v1/projects', {
      token: admin,
      body: { name: 'X', team_slug: 'no-such-team' },
    });
    expect(team.status).toBe(422);
    expect(team.body.errors.team_slug).toHaveLength(1);
    const dup = await gh.request('POST', '/api/v1/projects', { token: admin, body: { name: 'X', slug: 'default' } });
    expect(dup.status).toBe(422);
    const renamed = await gh.request('PUT', '/api/v1/projects/default/default', {
      token: admin,
      body: { name: 'Main hall', timezone: 'America/New_York' },
    });
    expect(renamed.body.data).toMatchObject({ name: 'Main hall', timezone: 'America/New_York', slug: 'default' });
  });
});
