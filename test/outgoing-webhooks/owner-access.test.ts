import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestResponse } from '../helpers/appliance.js';
import { type ProcessAppliance, startProcessAppliance } from '../helpers/process-appliance.js';
import { runCli } from '../helpers/process.js';
import { type Receiver, startReceiver } from '../helpers/receiver.js';

// Webhook subscriptions outlive whoever made them no more (docs/webhooks-outgoing.md
// "Disabling"; docs/security.md "Credentials outlive their issuer"). The appliance as a real
// process, real receivers on loopback: a staff member's subscription is disabled with
// webhook.endpoint_disabled (reason owner_lost_access) when they lose access to its project
// (deactivated, removed from it, deleted; by the CLI too, which no announcement reaches), nothing
// more reaches their receiver, and whoever re-enables it with access to the project owns it.

const A = '/api/v1/projects/default/default';
const PASSWORD = 'a long enough password';

describe('subscriptions and their owners (a process)', () => {
  let gh: ProcessAppliance;
  let admin: string;
  let adminId: number;
  let projectId: number;
  /** The administrator's own subscription to endpoint_disabled and attendee.created: it hears the announcement, and shows when an event has been dispatched. */
  let watch: Receiver;
  const receivers: Receiver[] = [];
  let seq = 0;

  const as = (token: string, method: string, path: string, body?: unknown): Promise<TestResponse> =>
    gh.request(method, path, { token, ...(body === undefined ? {} : { body }) });
  async function staff(): Promise<{ id: number; email: string; token: string }> {
    const email = `owner${++seq}@example.test`;
    const made = await as(admin, 'POST', '/api/v1/users', { name: `Owner ${seq}`, email, password: PASSWORD });
    expect(made.status).toBe(201);
    expect(
      (
        await as(admin, 'POST', `/api/v1/users/${made.body.data.id}/projects`, {
          team_slug: 'default',
          project_slug: 'default',
        })
      ).status,
    ).toBe(200);
    const token = await gh.request('POST', '/api/v1/auth/token', {
      body: { email, password: PASSWORD, device_name: 'test' },
    });
    return { id: made.body.data.id, email, token: token.body.token };
  }
  async function receiver(): Promise<Receiver> {
    const r = await startReceiver();
    receivers.push(r);
    return r;
  }
  async function subscribe(token: string, url: string, events: string[]): Promise<number> {
    const res = await as(token, 'POST', '/api/v1/webhook/subscribe', { url, events, project_id: projectId });
    expect(res.status, res.text).toBe(201);
    return res.body.data.id;
  }
  const subscription = async (id: number) => (await as(admin, 'GET', `/api/v1/webhook-subscriptions/${id}`)).body.data;
  /** Makes an attendee with an e-mail and waits until the administrator's subscription got it: by then every subscription has had its chance at it. */
  async function attendee(email: string): Promise<void> {
    expect(
      (await as(admin, 'POST', `${A}/attendees`, { first_name: 'Someone', last_name: 'Else', email })).status,
    ).toBe(201);
    await until(() => watch.received.some((r) => r.body.event === 'attendee.created' && r.body.data.email === email));
  }
  async function until(ok: () => boolean, ms = 15_000): Promise<void> {
    const end = Date.now() + ms;
    while (!ok()) {
      if (Date.now() > end)
        throw new Error(
          `timed out; the watch received ${JSON.stringify(watch.received.map((r) => [r.body.event, r.body.data]))}`,
        );
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  const disabledFor = (id: number) =>
    watch.received.filter((r) => r.body.event === 'webhook.endpoint_disabled' && r.body.data.subscription_id === id);
  const emailsAt = (r: Receiver) =>
    r.received.filter((x) => x.body.event === 'attendee.created').map((x) => x.body.data.email);

  beforeAll(async () => {
    gh = await startProcessAppliance({ GATEHOUSE_WEBHOOK_ALLOW_INSECURE: '1' });
    admin = await gh.token();
    adminId = (await as(admin, 'GET', '/api/v1/me')).body.data.id;
    projectId = (await as(admin, 'GET', A)).body.data.id;
    watch = await receiver();
    await subscribe(admin, watch.url, ['webhook.endpoint_disabled', 'attendee.created']);
  }, 90_000);
  afterAll(async () => {
    for (const r of receivers) await r.close();
    await gh?.destroy();
  });

  it('disables a subscription when its owner is deactivated and removed: endpoint_disabled (owner_lost_access) once, and no attendee reaches their receiver after', async () => {
    const owner = await staff();
    const theirs = await receiver();
    const id = await subscribe(owner.token, theirs.url, ['attendee.created']);
    expect(await subscription(id)).toMatchObject({ active: true, owner_id: owner.id });
    await attendee('before@example.test');
    await until(() => emailsAt(theirs).includes('before@example.test'));

    expect((await as(admin, 'PUT', `/api/v1/users/${owner.id}`, { is_active: false })).status).toBe(200);
    expect((await as(admin, 'DELETE', `/api/v1/users/${owner.id}/projects/default/default`)).status).toBe(200);
    await until(() => disabledFor(id).length > 0);
    expect(disabledFor(id)[0]!.body).toMatchObject({
      event: 'webhook.endpoint_disabled',
      project_id: projectId,
      data: { subscription_id: id, url: theirs.url, reason: 'owner_lost_access' },
    });
    expect(await subscription(id)).toMatchObject({
      active: false,
      disabled_reason: 'owner_lost_access',
      owner_id: owner.id,
    });

    await attendee('after@example.test');
    expect(emailsAt(theirs)).toEqual(['before@example.test']);
    const log = await as(admin, 'GET', `${A}/webhook-deliveries?subscription_id=${id}`);
    expect(log.body.data.map((d: { event: string }) => d.event)).toEqual(['attendee.created']);
    expect(disabledFor(id)).toHaveLength(1); // the second change (the membership) announced nothing more
  });

  it('resumes where it stopped when someone with access re-enables it, who becomes its owner; losing their access disables it again', async () => {
    const owner = await staff();
    const theirs = await receiver();
    const id = await subscribe(owner.token, theirs.url, ['attendee.created']);
    expect((await as(admin, 'PUT', `/api/v1/users/${owner.id}`, { is_active: false })).status).toBe(200);
    await until(() => disabledFor(id).length > 0);
    await attendee('queued@example.test');
    expect(emailsAt(theirs)).toEqual([]);

    // The former owner is locked out; a colleague with access takes it over.
    expect((await as(owner.token, 'PUT', `/api/v1/webhook-subscriptions/${id}`, { active: true })).status).toBe(401);
    const colleague = await staff();
    const reenabled = await as(colleague.token, 'PUT', `/api/v1/webhook-subscriptions/${id}`, { active: true });
    expect(reenabled.status).toBe(200);
    expect(reenabled.body.data).toMatchObject({ active: true, disabled_reason: null, owner_id: colleague.id });
    await until(() => emailsAt(theirs).includes('queued@example.test'));

    // An edit that does not re-enable leaves the owner as it is.
    expect(
      (
        await as(admin, 'PUT', `/api/v1/webhook-subscriptions/${id}`, {
          events: ['attendee.created', 'attendee.updated'],
        })
      ).body.data.owner_id,
    ).toBe(colleague.id);

    expect((await as(admin, 'DELETE', `/api/v1/users/${colleague.id}/projects/default/default`)).status).toBe(200);
    await until(() => disabledFor(id).length === 2);
    expect(await subscription(id)).toMatchObject({ active: false, disabled_reason: 'owner_lost_access' });

    // An administrator re-enabling owns it from then on.
    expect((await as(admin, 'PUT', `/api/v1/webhook-subscriptions/${id}`, { active: true })).body.data).toMatchObject({
      active: true,
      owner_id: adminId,
    });
  });

  it('disables the subscription of a deleted owner', async () => {
    const owner = await staff();
    const theirs = await receiver();
    const id = await subscribe(owner.token, theirs.url, ['attendee.created']);
    expect((await as(admin, 'DELETE', `/api/v1/users/${owner.id}`)).status).toBe(204);
    await until(() => disabledFor(id).length > 0);
    expect(await subscription(id)).toMatchObject({
      active: false,
      disabled_reason: 'owner_lost_access',
      owner_id: null,
    });
    await attendee('deleted-owner@example.test');
    expect(emailsAt(theirs)).toEqual([]);
  });

  it('disables before its next delivery a subscription whose owner the CLI deactivated, which no announcement reaches', async () => {
    const owner = await staff();
    const theirs = await receiver();
    const id = await subscribe(owner.token, theirs.url, ['attendee.created']);
    const cli = await runCli(['users', 'deactivate', owner.email], { GATEHOUSE_DATA_DIR: gh.dataDir });
    expect(cli.code, cli.stderr).toBe(0);
    await attendee('cli@example.test');
    await until(() => disabledFor(id).length > 0);
    expect(disabledFor(id)[0]!.body.data).toMatchObject({ reason: 'owner_lost_access' });
    expect(emailsAt(theirs)).toEqual([]);
  });

  it('refuses to re-enable for someone the project is out of reach of (404), and a bad active value (422)', async () => {
    const owner = await staff();
    const theirs = await receiver();
    const id = await subscribe(owner.token, theirs.url, ['attendee.created']);
    expect((await as(admin, 'DELETE', `/api/v1/users/${owner.id}/projects/default/default`)).status).toBe(200);
    await until(() => disabledFor(id).length > 0);
    expect((await as(owner.token, 'PUT', `/api/v1/webhook-subscriptions/${id}`, { active: true })).status).toBe(404);
    expect((await as(admin, 'PUT', `/api/v1/webhook-subscriptions/${id}`, { active: 'yes' })).status).toBe(422);
    expect(await subscription(id)).toMatchObject({
      active: false,
      disabled_reason: 'owner_lost_access',
      owner_id: owner.id,
    });
  });
});
