import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requester, type TestResponse } from '../helpers/appliance.js';
import { runCli } from '../helpers/process.js';
import { Node, P, SyncWorld, until } from '../helpers/sync-world.js';

// Edges outlive whoever issued them no more (docs/security.md "Credentials outlive their
// issuer"; docs/sync.md "Edges and their issuers"). A cloud as a real process, its sync
// protocol spoken over HTTP with edges' sync tokens as an edge would, and one real edge
// process: issuing takes the `sync:edges` ability (an administrator's full token has it, a
// staff member's only when the token names it); an edge whose issuer is deactivated, removed
// from the project or demoted out of it is refused (401 edge_suspended, issuer_lost_access)
// until an administrator re-confirms it; an open long poll ends at once, without data, when its
// edge is revoked or suspended.

const PASSWORD = 'a long enough password';
const FAST_SYNC = {
  GATEHOUSE_SYNC_REQUEST_TIMEOUT_MS: '1500',
  GATEHOUSE_SYNC_BACKOFF_MIN_MS: '100',
  GATEHOUSE_SYNC_BACKOFF_MAX_MS: '500',
  GATEHOUSE_SYNC_LONG_POLL_SECONDS: '3',
};
const SUSPENDED = { message: 'Unauthenticated.', code: 'edge_suspended', reason: 'issuer_lost_access' };

describe('edges and their issuers (a cloud process)', () => {
  const world = new SyncWorld();
  let cloud: Node;
  let request: ReturnType<typeof requester>;
  let adminId: number;
  /** A helper edge's sync token, to take a caught-up cursor of the project with. */
  let helper: string;
  let seq = 0;

  /** A staff member (not an administrator) with a single-project membership of default/default, and a token of theirs. */
  async function staff(scopes: string[] = ['*']): Promise<{ id: number; email: string; token: string }> {
    const email = `staff${++seq}@example.test`;
    const made = await cloud.api('POST', '/api/v1/users', { name: `Staff ${seq}`, email, password: PASSWORD });
    expect(made.status).toBe(201);
    const id = made.body.data.id as number;
    expect(
      (await cloud.api('POST', `/api/v1/users/${id}/projects`, { team_slug: 'default', project_slug: 'default' }))
        .status,
    ).toBe(200);
    return { id, email, token: await tokenOf(email, scopes) };
  }
  async function tokenOf(email: string, scopes: string[]): Promise<string> {
    const res = await request('POST', '/api/v1/auth/token', {
      body: { email, password: PASSWORD, device_name: 'test', scopes },
    });
    expect(res.status, res.text).toBe(201);
    return res.body.token as string;
  }
  const issueWith = (token: string, name: string) => request('POST', `${P}/sync/edges`, { token, body: { name } });
  async function issuedBy(token: string, name: string): Promise<{ id: number; token: string; issued_by: number }> {
    const res = await issueWith(token, name);
    expect(res.status, res.text).toBe(201);
    return res.body.data;
  }
  /** A request of the sync protocol with an edge's sync token. */
  const protocol = (token: string, method: string, path: string, body?: unknown): Promise<TestResponse> =>
    request(method, path, {
      token,
      headers: { 'gatehouse-sync-protocol': '1' },
      ...(body === undefined ? {} : { body }),
    });
  const changes = (token: string, query = '') => protocol(token, 'GET', `${P}/sync/changes${query}`);
  const upload = (token: string) =>
    protocol(token, 'POST', `${P}/sync/upload`, { clock: { offset_ms: 0, synchronised: true }, backlog: 0, items: [] });
  const listed = async (id: number) =>
    (await cloud.api('GET', '/sync/edges')).body.data.find((e: { id: number }) => e.id === id);
  /** Opens a long poll of a fresh edge (never in contact before) and resolves once the cloud holds it open (the poll notes the edge's first contact before it waits), with the poll's answer to come. */
  async function openPoll(
    edge: { id: number; token: string },
    route: 'changes' | 'revocations',
  ): Promise<{ answer: Promise<TestResponse> }> {
    expect((await listed(edge.id)).last_contact_at).toBeNull();
    const caughtUp = (await changes(helper, '?limit=20000')).body.data;
    expect(caughtUp.has_more).toBe(false);
    const poll = protocol(edge.token, 'GET', `${P}/sync/${route}?cursor=${caughtUp.cursor}&wait=120`);
    await until(
      'the long poll to be held open',
      () => listed(edge.id),
      (e) => e.last_contact_at !== null,
      10_000,
      50,
    );
    return { answer: poll };
  }

  beforeAll(async () => {
    cloud = await world.startCloud();
    request = requester(cloud.url);
    adminId = (await cloud.api('GET', '/api/v1/me')).body.data.id;
    const zone = (await cloud.api('POST', '/access-zones', { name: 'Hall' })).body.data.id;
    await cloud.api('POST', '/attendee-types', { name: 'Guest', zone_ids: [zone] });
    expect(
      (
        await cloud.api('POST', '/attendees', {
          first_name: 'Ada',
          last_name: 'Lovelace',
          email: 'ada@example.test',
          attendee_type: 'guest',
        })
      ).status,
    ).toBe(201);
    helper = (await issuedBy(await cloud.token(), 'cursor helper')).token;
  }, 120_000);
  afterAll(() => world.destroy());

  it("issues edges only with sync:edges: a staff member's full token is refused, a token naming it is not; each edge records its issuer", async () => {
    const member = await staff();
    const refused = await issueWith(member.token, 'by a full token');
    expect(refused.status).toBe(401); // a token lacking the ability: unauthenticated, naming it (docs/auth.md)
    expect(refused.body).toEqual({ message: 'Unauthenticated.', missing_ability: 'sync:edges' });

    const edgeToken = await tokenOf(member.email, ['sync:edges']);
    const byStaff = await issueWith(edgeToken, 'by staff');
    expect(byStaff.status).toBe(201);
    expect(byStaff.body.data).toMatchObject({
      name: 'by staff',
      issued_by: member.id,
      suspended_at: null,
      suspended_reason: null,
    });
    // The narrow token issues edges and nothing else.
    expect((await request('GET', `${P}/attendees`, { token: edgeToken })).status).toBe(401);

    const byAdmin = await issuedBy(await cloud.token(), 'by an administrator');
    expect(byAdmin.issued_by).toBe(adminId);
    expect(await listed(byAdmin.id)).toMatchObject({ issued_by: adminId });

    // A project the staff member does not reach stays out of reach, ability or not.
    await cloud.api('POST', '/api/v1/projects', { name: 'Elsewhere', slug: 'elsewhere', timezone: 'UTC' });
    expect(
      (
        await request('POST', '/api/v1/projects/default/elsewhere/sync/edges', {
          token: edgeToken,
          body: { name: 'x' },
        })
      ).status,
    ).toBe(404);
    // Bad input is still named.
    const blank = await issueWith(edgeToken, ' ');
    expect(blank.status).toBe(422);
    expect(blank.body.errors).toHaveProperty('name');
  });

  it('suspends an edge whose issuer is deactivated and removed: its token pulls and uploads nothing until an administrator re-confirms it', async () => {
    const member = await staff();
    const edge = await issuedBy(await tokenOf(member.email, ['sync:edges']), 'north');
    const before = await changes(edge.token, '?limit=20000');
    expect(before.status).toBe(200);
    expect(before.text).toContain('ada@example.test');

    expect((await cloud.api('PUT', `/api/v1/users/${member.id}`, { is_active: false })).status).toBe(200);
    expect((await cloud.api('DELETE', `/api/v1/users/${member.id}/projects/default/default`)).status).toBe(200);

    for (const res of [
      await changes(edge.token, '?limit=20000'),
      await upload(edge.token),
      await protocol(edge.token, 'GET', '/api/v1/sync/hello'),
    ]) {
      expect(res.status).toBe(401);
      expect(res.body).toEqual(SUSPENDED);
      expect(res.text).not.toContain('ada@example.test');
    }
    expect(await listed(edge.id)).toMatchObject({
      issued_by: member.id,
      suspended_reason: 'issuer_lost_access',
      suspended_at: expect.any(String),
      revoked_at: null,
    });

    // Access given back to the issuer does not lift it: an administrator decides.
    expect((await cloud.api('PUT', `/api/v1/users/${member.id}`, { is_active: true })).status).toBe(200);
    expect(
      (
        await cloud.api('POST', `/api/v1/users/${member.id}/projects`, {
          team_slug: 'default',
          project_slug: 'default',
        })
      ).status,
    ).toBe(200);
    expect((await changes(edge.token)).body).toEqual(SUSPENDED);

    // Not a staff member's to re-confirm, whatever their token says.
    const other = await staff(['*', 'sync:edges']);
    const byStaff = await request('POST', `${P}/sync/edges/${edge.id}/confirm`, { token: other.token });
    expect(byStaff.status).toBe(403);
    expect(byStaff.body.message).toBe('This action is unauthorized.');

    const confirmed = await cloud.api('POST', `/sync/edges/${edge.id}/confirm`);
    expect(confirmed.status).toBe(200);
    expect(confirmed.body.data).toMatchObject({
      id: edge.id,
      issued_by: adminId,
      suspended_at: null,
      suspended_reason: null,
    });
    const after = await changes(edge.token, '?limit=20000');
    expect(after.status).toBe(200);
    expect(after.text).toContain('ada@example.test');
  });

  it('suspends on a membership removed alone, and on an administrator demoted out of the project', async () => {
    const member = await staff();
    const byMember = await issuedBy(await tokenOf(member.email, ['sync:edges']), 'member');
    expect((await cloud.api('DELETE', `/api/v1/users/${member.id}/projects/default/default`)).status).toBe(200);
    expect((await changes(byMember.token)).body).toEqual(SUSPENDED);

    const email = `admin${++seq}@example.test`;
    const second = await cloud.api('POST', '/api/v1/users', {
      name: 'Second admin',
      email,
      password: PASSWORD,
      is_admin: true,
    });
    expect(second.status).toBe(201);
    const byAdmin = await issuedBy(await tokenOf(email, ['*']), 'admin');
    expect((await changes(byAdmin.token)).status).toBe(200);
    expect((await cloud.api('PUT', `/api/v1/users/${second.body.data.id}`, { is_admin: false })).status).toBe(200);
    expect((await changes(byAdmin.token)).body).toEqual(SUSPENDED);
  });

  it('suspends an edge at its next request when its issuer was deactivated by the CLI, which no announcement reaches', async () => {
    const member = await staff();
    const edge = await issuedBy(await tokenOf(member.email, ['sync:edges']), 'cli');
    expect((await changes(edge.token)).status).toBe(200);
    const cli = await runCli(['users', 'deactivate', member.email], cloud.cliEnv);
    expect(cli.code, cli.stderr).toBe(0);
    expect((await changes(edge.token)).body).toEqual(SUSPENDED);
    expect(await listed(edge.id)).toMatchObject({ suspended_reason: 'issuer_lost_access' });
  });

  it('refuses to re-confirm a revoked edge or one of another project', async () => {
    const edge = await issuedBy(await cloud.token(), 'gone');
    expect((await cloud.api('DELETE', `/sync/edges/${edge.id}`)).status).toBe(200);
    const revoked = await cloud.api('POST', `/sync/edges/${edge.id}/confirm`);
    expect(revoked.status).toBe(409);
    expect(revoked.body.message).toMatch(/revoked/);
    expect((await cloud.api('POST', '/sync/edges/999999/confirm')).status).toBe(404);
    expect((await cloud.api('POST', `/api/v1/projects/default/elsewhere/sync/edges/${edge.id}/confirm`)).status).toBe(
      404,
    );
  });

  it('ends an open long poll at once when its edge is revoked: 401 and no rows, even when a change would have woken it', async () => {
    const edge = await issuedBy(await cloud.token(), 'polling');
    const { answer: poll } = await openPoll(edge, 'changes');
    expect((await cloud.api('DELETE', `/sync/edges/${edge.id}`)).status).toBe(200);
    expect(
      (
        await cloud.api('POST', '/attendees', {
          first_name: 'Grace',
          last_name: 'Hopper',
          email: 'grace@example.test',
          attendee_type: 'guest',
        })
      ).status,
    ).toBe(201);
    const answer = await poll; // held for 120 s otherwise: the test's own timeout is 30 s
    expect(answer.status).toBe(401);
    expect(answer.body).toEqual({ message: 'Unauthenticated.' });
    expect(answer.text).not.toContain('grace@example.test');
  });

  it('ends an open long poll at once when its issuer loses access (the revocations stream too): 401 edge_suspended', async () => {
    const member = await staff();
    const sync = await tokenOf(member.email, ['sync:edges']);
    const onChanges = await issuedBy(sync, 'changes poll');
    const onRevocations = await issuedBy(sync, 'revocations poll');
    const polls = [
      (await openPoll(onChanges, 'changes')).answer,
      (await openPoll(onRevocations, 'revocations')).answer,
    ];
    expect((await cloud.api('PUT', `/api/v1/users/${member.id}`, { is_active: false })).status).toBe(200);
    for (const answer of await Promise.all(polls)) {
      expect(answer.status).toBe(401);
      expect(answer.body).toEqual(SUSPENDED);
    }
  });

  it('an edge process says it is suspended, and syncs again without a restart once an administrator re-confirms it', async () => {
    const member = await staff();
    const issued = await issuedBy(await tokenOf(member.email, ['sync:edges']), 'site');
    const edge = new Node('site', {
      GATEHOUSE_ROLE: 'edge',
      GATEHOUSE_CLOUD_URL: cloud.url,
      GATEHOUSE_SYNC_TOKEN: issued.token,
      ...FAST_SYNC,
    });
    try {
      await edge.start();
      const status = () => edge.api('GET', '/sync/status');
      await until('the edge online', status, (r) => r.body.data.state === 'online', 30_000);
      expect((await cloud.api('PUT', `/api/v1/users/${member.id}`, { is_active: false })).status).toBe(200);
      const suspended = await until('the edge suspended', status, (r) => r.body.data.state === 'suspended', 20_000);
      expect(suspended.body.data).toMatchObject({ online: false, last_error: expect.stringMatching(/suspended/) });

      expect((await cloud.api('POST', `/sync/edges/${issued.id}/confirm`)).status).toBe(200);
      await until('the edge online again', status, (r) => r.body.data.state === 'online', 30_000);
      expect(
        (
          await cloud.api('POST', '/attendees', {
            first_name: 'Katherine',
            last_name: 'Johnson',
            attendee_type: 'guest',
          })
        ).status,
      ).toBe(201);
      await until(
        'the new attendee on the edge',
        () => edge.api('GET', '/attendees?search=Katherine'),
        (r) => r.body.data?.length === 1,
        30_000,
      );
    } finally {
      await edge.destroy();
    }
  }, 120_000);
});
