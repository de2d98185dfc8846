import { verify } from '@octokit/webhooks-methods';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createUser, ManualClock, startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { type Receiver, startReceiver } from '../helpers/receiver.js';

// Retries, order, disabling, resends and rotation (docs/webhooks-outgoing.md), with injected time:
// the appliance's clock is a ManualClock, moved on by the test; nothing sleeps for a schedule.

const A = '/api/v1/projects/default/default';

describe('outgoing webhook retries and the delivery log', () => {
  let gh: TestAppliance;
  let token: string;
  let clock: ManualClock;
  let projectId: number;
  const receivers: Receiver[] = [];
  const subscriptions: number[] = [];

  beforeAll(async () => {
    clock = new ManualClock();
    gh = await startAppliance({ GATEHOUSE_WEBHOOK_ALLOW_INSECURE: '1' }, { clock });
    token = await gh.token();
    projectId = (await gh.request('GET', A, { token })).body.data.id;
  });
  afterEach(async () => {
    for (const id of subscriptions.splice(0))
      await gh.request('DELETE', `/api/v1/webhook-subscriptions/${id}`, { token });
    for (const r of receivers.splice(0)) await r.close();
  });
  afterAll(() => gh.destroy());

  const dispatcher = () => gh.app.services.outgoing.dispatcher;
  const receiver = async () => {
    const r = await startReceiver();
    receivers.push(r);
    return r;
  };
  const subscribe = async (url: string, events: string[]) => {
    const res = await gh.request('POST', '/api/v1/webhook/subscribe', {
      token,
      body: { url, events, project_id: projectId },
    });
    expect(res.status).toBe(201);
    subscriptions.push(res.body.data.id);
    return res.body as { data: { id: number }; secret: string };
  };
  const attendee = async (first: string) =>
    (await gh.request('POST', `${A}/attendees`, { token, body: { first_name: first, last_name: 'Test' } })).body.data;
  const deliveries = async (query = '') =>
    (await gh.request('GET', `${A}/webhook-deliveries${query}`, { token })).body.data as any[];
  const waitUntil = async (check: () => Promise<boolean>, what: string) => {
    for (let i = 0; i < 200; i++) {
      if (await check()) return;
      await dispatcher().idle();
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error(`not reached: ${what}`);
  };

  it('retries a failing delivery on the schedule, holding the events behind it, then delivers them in order', async () => {
    const r = await receiver();
    let failures = 2;
    r.respond((_req, res) => {
      res.writeHead(failures-- > 0 ? 500 : 200);
      res.end();
    });
    const { data } = await subscribe(r.url, ['attendee.created']);
    const first = await attendee('First');
    const second = await attendee('Second');
    await r.waitFor(1);
    await dispatcher().idle();
    // The failed head holds the queue: the second event was not sent (nor, maybe, taken yet).
    expect((await deliveries(`?subscription_id=${data.id}`)).every((d) => d.status === 'pending')).toBe(true);
    expect(r.received).toHaveLength(1);
    let head = (await deliveries(`?subscription_id=${data.id}`)).at(-1);
    expect(head).toMatchObject({ attempts: 1, last_status_code: 500, status: 'pending' });
    const wait = Date.parse(head.next_attempt_at) - clock.now();
    expect(wait).toBeGreaterThanOrEqual(4500); // 5 s, jittered by up to 10 %
    expect(wait).toBeLessThanOrEqual(5500);

    clock.advance(4000); // not due yet
    dispatcher().wake();
    await dispatcher().idle();
    expect(r.received).toHaveLength(1);

    clock.advance(1600); // due: the second attempt fails too; the next waits 5 minutes
    dispatcher().wake();
    await r.waitFor(2);
    await dispatcher().idle();
    head = (await deliveries(`?subscription_id=${data.id}`)).at(-1);
    expect(head).toMatchObject({ attempts: 2, status: 'pending' });
    expect(Date.parse(head.next_attempt_at) - clock.now()).toBeGreaterThanOrEqual(270_000);

    clock.advance(331_000);
    dispatcher().wake();
    await r.waitFor(4);
    await dispatcher().idle();
    // The same delivery id on every attempt of the first; then the second, in order.
    const ids = r.received.map((x) => x.headers['x-svc-delivery-id']);
    expect(new Set(ids.slice(0, 3)).size).toBe(1);
    expect(r.received.map((x) => x.body.data.attendee_id)).toEqual([first.id, first.id, first.id, second.id]);
    const log = await deliveries(`?subscription_id=${data.id}`);
    expect(log.map((d) => [d.status, d.attempts])).toEqual([
      ['delivered', 1],
      ['delivered', 3],
    ]);
    expect(log[1].attempt_history.map((a: { status_code: number }) => a.status_code)).toEqual([500, 500, 200]);
    const subscription = (await gh.request('GET', `/api/v1/webhook-subscriptions/${data.id}`, { token })).body.data;
    expect(subscription.failing_since).toBeNull();
  });

  it('does not let a subscription that is down delay another', async () => {
    const down = await receiver();
    down.respond(() => {}); // never answers: each attempt waits out the 5 s timeout
    const up = await receiver();
    await subscribe(down.url, ['attendee.created']);
    await subscribe(up.url, ['attendee.created']);
    const started = Date.now();
    for (const n of ['A', 'B', 'C']) await attendee(n);
    await up.waitFor(3);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(down.received).toHaveLength(1); // its head, still waiting
  });

  it('disables a subscription at once when its receiver answers 410 Gone, and announces it to the others', async () => {
    const gone = await receiver();
    gone.respond((_q, res) => {
      res.writeHead(410);
      res.end();
    });
    const watcher = await receiver();
    const { data } = await subscribe(gone.url, ['attendee.created']);
    await subscribe(watcher.url, ['webhook.endpoint_disabled']);
    await attendee('Gone');
    const [notice] = await watcher.waitFor(1, 'webhook.endpoint_disabled');
    expect(notice!.body.data).toEqual({ subscription_id: data.id, url: gone.url, reason: 'gone' });
    const shown = (await gh.request('GET', `/api/v1/webhook-subscriptions/${data.id}`, { token })).body.data;
    expect(shown).toMatchObject({ active: false, disabled_reason: 'gone' });
    await attendee('After');
    await dispatcher().idle();
    expect(gone.received).toHaveLength(1);
  });

  it('disables a subscription failing without a break for webhook.disableAfterHours, and resumes where it stopped when re-enabled', async () => {
    const r = await receiver();
    let ok = false;
    r.respond((_q, res) => {
      res.writeHead(ok ? 200 : 503);
      res.end();
    });
    const { data } = await subscribe(r.url, ['attendee.created']);
    const held = await attendee('Held');
    await r.waitFor(1);
    // Walk the schedule (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, then failed) past 120 hours,
    // with new events meanwhile, so there is always something to attempt.
    for (let i = 0; i < 14; i++) {
      clock.advance(11 * 3_600_000);
      await attendee(`Meanwhile ${i}`);
      dispatcher().wake();
      await dispatcher().idle();
      const shown = (await gh.request('GET', `/api/v1/webhook-subscriptions/${data.id}`, { token })).body.data;
      if (!shown.active) break;
    }
    const shown = (await gh.request('GET', `/api/v1/webhook-subscriptions/${data.id}`, { token })).body.data;
    expect(shown).toMatchObject({ active: false, disabled_reason: 'failing' });
    const attempts = r.received.length;
    ok = true;
    const later = await attendee('Later');
    clock.advance(3_600_000);
    dispatcher().wake();
    await dispatcher().idle();
    expect(r.received).toHaveLength(attempts); // disabled: nothing sent
    const enabled = await gh.request('PUT', `/api/v1/webhook-subscriptions/${data.id}`, {
      token,
      body: { active: true },
    });
    expect(enabled.body.data).toMatchObject({ active: true, disabled_reason: null, failing_since: null });
    await waitUntil(
      async () => r.received.some((x) => x.body.data.attendee_id === later.id),
      'the later event after re-enabling',
    );
    const delivered = r.received
      .filter((x) => x.headers['x-svc-event'] === 'attendee.created')
      .map((x) => x.body.data.attendee_id);
    // The held event, if its retries had not run out, then the later one; never out of order.
    expect(delivered.at(-1)).toBe(later.id);
    expect(delivered.lastIndexOf(held.id)).toBeLessThan(delivered.indexOf(later.id));
  });

  it('resends a failed delivery with the same delivery id, sends a test event, and signs with both secrets after a rotation', async () => {
    const r = await receiver();
    const { data, secret } = await subscribe(r.url, ['attendee.created']);
    const test = await gh.request('POST', `/api/v1/webhook-subscriptions/${data.id}/test`, { token });
    expect(test.status).toBe(200);
    expect(test.body.data).toMatchObject({
      event: 'webhook.test',
      status: 'delivered',
      attempts: 1,
      last_status_code: 200,
    });
    const [got] = await r.waitFor(1, 'webhook.test');
    expect(await verify(secret, got!.raw, String(got!.headers['x-svc-signature']))).toBe(true);

    const rotated = await gh.request('POST', `/api/v1/webhook-subscriptions/${data.id}/rotate-secret`, { token });
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).not.toBe(secret);
    expect(rotated.body.data.secret_rotated_until).not.toBeNull();
    await attendee('Rotated');
    const [signed] = await r.waitFor(1, 'attendee.created');
    expect(await verify(rotated.body.secret, signed!.raw, String(signed!.headers['x-svc-signature']))).toBe(true);
    expect(await verify(secret, signed!.raw, String(signed!.headers['x-svc-signature-previous']))).toBe(true);

    const delivery = (await deliveries(`?subscription_id=${data.id}&event=attendee.created`))[0];
    const resent = await gh.request('POST', `${A}/webhook-deliveries/${delivery.id}/resend`, { token });
    expect(resent.status).toBe(200);
    expect(resent.body.data).toMatchObject({
      id: delivery.id,
      delivery_id: delivery.delivery_id,
      attempts: 2,
      status: 'delivered',
    });
    const copies = r.received.filter((x) => x.body.event === 'attendee.created');
    expect(copies).toHaveLength(2);
    expect(copies[0]!.headers['x-svc-delivery-id']).toBe(copies[1]!.headers['x-svc-delivery-id']);
    expect(copies[0]!.raw).toBe(copies[1]!.raw);

    clock.advance(25 * 3_600_000); // past the grace period: the old secret no longer signs
    await gh.request(`POST`, `/api/v1/webhook-subscriptions/${data.id}/test`, { token });
    expect(r.received.at(-1)!.headers['x-svc-signature-previous']).toBeUndefined();
  });

  it('answers the log with filters, 404 for another project, and 422 for a bad filter', async () => {
    expect((await gh.request('GET', `${A}/webhook-deliveries?status=lost`, { token })).status).toBe(422);
    expect((await gh.request('GET', `${A}/webhook-deliveries?since=yesterday`, { token })).status).toBe(422);
    expect((await gh.request('GET', `${A}/webhook-deliveries/999999`, { token })).status).toBe(404);
    expect((await gh.request('POST', `${A}/webhook-deliveries/999999/resend`, { token })).status).toBe(404);
    expect((await gh.request('GET', '/api/v1/webhook-subscriptions/999999', { token })).status).toBe(404);
    const all = await deliveries('?status=delivered');
    expect(all.every((d) => d.status === 'delivered')).toBe(true);
  });

  it('shows an account only the subscriptions of projects it can reach', async () => {
    const r = await receiver();
    const { data } = await subscribe(r.url, ['*']);
    const outsider = await createUser(gh, token, 'outsider@example.test');
    const list = await gh.request('GET', '/api/v1/webhook-subscriptions', { token: outsider.token });
    expect(list.status).toBe(200);
    expect(list.body.data).toEqual([]);
    expect(
      (await gh.request('GET', `/api/v1/webhook-subscriptions/${data.id}`, { token: outsider.token })).status,
    ).toBe(404);
    expect(
      (await gh.request('DELETE', `/api/v1/webhook-subscriptions/${data.id}`, { token: outsider.token })).status,
    ).toBe(404);
    const mine = await gh.request('GET', '/api/v1/webhook-subscriptions', { token });
    expect(mine.body.data.map((x: { id: number }) => x.id)).toContain(data.id);
  });

  it('removes finished log rows past their retention, keeping pending ones', async () => {
    const r = await receiver();
    r.respond((_q, res) => {
      res.writeHead(500);
      res.end();
    });
    const { data } = await subscribe(r.url, ['attendee.created']);
    await gh.request('POST', `/api/v1/webhook-subscriptions/${data.id}/test`, { token }); // a failed test delivery
    await attendee('Pending');
    await r.waitFor(2);
    await dispatcher().idle();
    const before = await deliveries(`?subscription_id=${data.id}`);
    expect(before.map((d) => d.status).sort()).toEqual(['failed', 'pending']);
    const { outgoing } = gh.app.services;
    clock.advance(31 * 86_400_000);
    const removed = outgoing.deliveries.prune(new Date(clock.now() - 30 * 86_400_000).toISOString(), 1_000_000);
    expect(removed).toBeGreaterThanOrEqual(1);
    expect((await deliveries(`?subscription_id=${data.id}`)).map((d) => d.status)).toEqual(['pending']);
  });
});
