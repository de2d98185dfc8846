import { verify } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { type Receiver, startReceiver } from '../helpers/receiver.js';

// Outgoing webhooks end to end (docs/webhooks-outgoing.md): a real appliance, a real HTTP receiver on loopback
// (allowed by GATEHOUSE_WEBHOOK_ALLOW_INSECURE), signatures checked with independent libraries.

const A = '/api/v1/projects/default/default';

describe('outgoing webhooks', () => {
  let gh: TestAppliance;
  let token: string;
  let receiver: Receiver;
  let projectId: number;

  beforeAll(async () => {
    gh = await startAppliance({ GATEHOUSE_WEBHOOK_ALLOW_INSECURE: '1' });
    token = await gh.token();
    receiver = await startReceiver();
    projectId = (await gh.request('GET', A, { token })).body.data.id;
  });
  afterAll(async () => {
    await receiver.close();
    await gh.destroy();
  });

  const subscribe = (body: Record<string, unknown>) =>
    gh.request('POST', '/api/v1/webhook/subscribe', { token, body: { project_id: projectId, ...body } });

  it('subscribes, answers the secret once, and delivers a signed attendee.created that @octokit/webhooks-methods verifies', async () => {
    const res = await subscribe({ url: receiver.url, events: ['attendee.created'] });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({
      url: receiver.url,
      events: ['attendee.created'],
      project_id: projectId,
      active: true,
      signature_scheme: 'sha256',
    });
    expect(typeof res.body.secret).toBe('string');
    const shown = await gh.request('GET', `/api/v1/webhook-subscriptions/${res.body.data.id}`, { token });
    expect(shown.body.data.secret).toBeUndefined();
    expect(JSON.stringify(shown.body)).not.toContain(res.body.secret);

    const created = await gh.request('POST', `${A}/attendees`, {
      token,
      body: { first_name: 'Ada', last_name: 'Lovelace' },
    });
    expect(created.status).toBe(201);
    const [got] = await receiver.waitFor(1, 'attendee.created');
    expect(got!.body).toMatchObject({
      event: 'attendee.created',
      project_id: projectId,
      data: { id: created.body.data.id, attendee_id: created.body.data.id, first_name: 'Ada', last_name: 'Lovelace' },
    });
    expect(typeof got!.body.id).toBe('string');
    expect(got!.headers['x-svc-event']).toBe('attendee.created');
    expect(got!.headers['x-svc-delivery-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(Number(got!.headers['x-svc-timestamp'])).toBeGreaterThan(1_700_000_000);
    expect(await verify(res.body.secret, got!.raw, String(got!.headers['x-svc-signature']))).toBe(true);
    expect(await verify('not the secret', got!.raw, String(got!.headers['x-svc-signature']))).toBe(false);
    await gh.request('DELETE', `/api/v1/webhook-subscriptions/${res.body.data.id}`, { token });
  });

  it('signs with Standard Webhooks when asked, verified by the standardwebhooks library', async () => {
    const res = await subscribe({ url: receiver.url, events: ['attendee.updated'], signature_scheme: 'standard' });
    expect(res.status).toBe(201);
    expect(res.body.secret).toMatch(/^whsec_/);
    const created = await gh.request('POST', `${A}/attendees`, {
      token,
      body: { first_name: 'Grace', last_name: 'Hopper' },
    });
    await gh.request('PUT', `${A}/attendees/${created.body.data.id}`, {
      token,
      body: { last_name: 'Brewster Hopper' },
    });
    const [got] = await receiver.waitFor(1, 'attendee.updated');
    const verified = new Webhook(res.body.secret).verify(got!.raw, {
      'webhook-id': String(got!.headers['webhook-id']),
      'webhook-timestamp': String(got!.headers['webhook-timestamp']),
      'webhook-signature': String(got!.headers['webhook-signature']),
    }) as { data: { last_name: string } };
    expect(verified.data.last_name).toBe('Brewster Hopper');
    await gh.request('DELETE', `/api/v1/webhook-subscriptions/${res.body.data.id}`, { token });
  });

  it("delivers with the headers the OpenAPI document's webhooks section declares, in each signature scheme, during a rotation too", async () => {
    const doc = (await gh.request('GET', '/api/v1/openapi.json')).body;
    const parameters = doc.webhooks['webhook.test'].post.parameters as {
      name: string;
      in: string;
      required: boolean;
    }[];
    const declared = new Map(
      parameters.filter((p) => p.in === 'header').map((p) => [p.name.toLowerCase(), p.required]),
    );
    for (const scheme of ['sha256', 'standard']) {
      const id = (
        await subscribe({
          url: `${receiver.url}?scheme=${scheme}`,
          events: ['attendee.created'],
          signature_scheme: scheme,
        })
      ).body.data.id;
      await gh.request('POST', `/api/v1/webhook-subscriptions/${id}/rotate-secret`, { token }); // both secrets sign for a while
      const before = receiver.received.length;
      expect((await gh.request('POST', `/api/v1/webhook-subscriptions/${id}/test`, { token })).status).toBe(200);
      await receiver.waitFor(before + 1);
      const got = receiver.received.at(-1)!;
      const sent = Object.keys(got.headers).filter((h) => /^(x-|webhook-)/.test(h));
      expect(
        sent.filter((h) => !declared.has(h)),
        `${scheme}: sent and not declared`,
      ).toEqual([]);
      expect(
        [...declared].filter(([h, required]) => required && got.headers[h] === undefined).map(([h]) => h),
        `${scheme}: required and not sent`,
      ).toEqual([]);
      await gh.request('DELETE', `/api/v1/webhook-subscriptions/${id}`, { token });
    }
    // Each scheme's signature is declared, neither required: a receiver reads the one its subscription names.
    expect(
      ['x-svc-signature', 'x-svc-signature-previous', 'webhook-id', 'webhook-timestamp', 'webhook-signature'].map((h) =>
        declared.get(h),
      ),
    ).toEqual([false, false, false, false, false]);
  });

  it('delivers access.granted and access.denied with the real-time fields and the event uuid, in the order of the scans', async () => {
    const res = await subscribe({ url: receiver.url, events: ['access.granted', 'access.denied'] });
    const zone = (await gh.request('POST', `${A}/access-zones`, { token, body: { name: 'Hall' } })).body.data.id;
    const gate = (
      await gh.request('POST', `${A}/access-points`, { token, body: { name: 'Hall door', access_zone_id: zone } })
    ).body.data.id;
    const person = (
      await gh.request('POST', `${A}/attendees`, { token, body: { first_name: 'Alan', last_name: 'Turing' } })
    ).body.data;
    const credential = (
      await gh.request('POST', `${A}/attendees/${person.id}/credentials`, {
        token,
        body: { value: 'HOOK-1', kind: 'qr' },
      })
    ).body.data;
    const granted = await gh.request('POST', `${A}/access-points/${gate}/scan`, {
      token,
      body: { credential_value: 'HOOK-1', scan_type: 'qr' },
    });
    expect(granted.body.access_granted).toBe(true);
    const denied = await gh.request('POST', `${A}/access-points/${gate}/scan`, {
      token,
      body: { credential_value: 'NOPE', scan_type: 'qr' },
    });
    expect(denied.body.access_granted).toBe(false);
    await receiver.waitFor(1, 'access.denied');
    const access = receiver.received.filter((g) => g.body.event.startsWith('access.'));
    expect(access.map((g) => g.body.event)).toEqual(['access.granted', 'access.denied']);
    expect(access[0]!.body.data).toMatchObject({
      attendee_id: person.id,
      attendee: { first_name: 'Alan', last_name: 'Turing' },
      access_point_id: gate,
      access_zone_id: zone,
      credential_id: credential.id,
    });
    expect(access[0]!.body.id).toBe(access[0]!.body.data.uuid);
    expect(access[1]!.body.data).toMatchObject({
      credential_value: 'NOPE',
      access_point_id: gate,
      reason: 'invalid_credential',
    });
    const stored = gh.app.store.db.prepare('SELECT uuid FROM access_events ORDER BY id').pluck().all();
    expect(stored).toEqual(access.map((g) => g.body.data.uuid));
    await gh.request('DELETE', `/api/v1/webhook-subscriptions/${res.body.data.id}`, { token });
  });

  it('sends a bulk import as one attendee.imported event whose range lists exactly what it wrote', async () => {
    const res = await subscribe({ url: receiver.url, events: ['attendee.imported', 'attendee.created'] });
    const before = receiver.received.length;
    const rows = Array.from({ length: 3 }, (_, i) => ({
      first_name: `Imp${i}`,
      last_name: 'Orted',
      credential_value: `IMP-${i}`,
    }));
    expect((await gh.request('POST', `${A}/attendees/import`, { token, body: rows })).body.data.imported).toBe(3);
    const [event] = await receiver.waitFor(1, 'attendee.imported');
    expect(event!.body.data).toMatchObject({ count: 3, credentials: 3 });
    const changed = await gh.request('GET', `${A}/${event!.body.data.changed}`, { token });
    expect(changed.body.data.map((a: { first_name: string }) => a.first_name)).toEqual(['Imp0', 'Imp1', 'Imp2']);
    await gh.app.services.outgoing.dispatcher.idle();
    expect(receiver.received.slice(before).map((r) => r.body.event)).toEqual(['attendee.imported']); // not one per attendee
    expect((await gh.request('GET', `${A}/attendees?changed_since=-1`, { token })).status).toBe(422);
    await gh.request('DELETE', `/api/v1/webhook-subscriptions/${res.body.data.id}`, { token });
  });

  it('tells a zone reaching its capacity once, with the count', async () => {
    const res = await subscribe({ url: receiver.url, events: ['zone.capacity_reached'] });
    const zone = (await gh.request('POST', `${A}/access-zones`, { token, body: { name: 'Booth', capacity: 2 } })).body
      .data.id;
    const gate = (
      await gh.request('POST', `${A}/access-points`, { token, body: { name: 'Booth door', access_zone_id: zone } })
    ).body.data.id;
    for (const n of [1, 2, 3]) {
      const person = (
        await gh.request('POST', `${A}/attendees`, { token, body: { first_name: `Cap${n}`, last_name: 'X' } })
      ).body.data;
      await gh.request('POST', `${A}/attendees/${person.id}/credentials`, {
        token,
        body: { value: `CAP-${n}`, kind: 'qr' },
      });
      await gh.request('POST', `${A}/access-points/${gate}/scan`, {
        token,
        body: { credential_value: `CAP-${n}`, scan_type: 'qr' },
      });
    }
    const [got] = await receiver.waitFor(1, 'zone.capacity_reached');
    expect(got!.body.data).toMatchObject({ zone_id: zone, capacity: 2, current_count: 2 });
    await gh.app.services.outgoing.dispatcher.idle();
    expect(receiver.received.filter((r) => r.body.event === 'zone.capacity_reached')).toHaveLength(1); // the third was refused: still one
    await gh.request('DELETE', `/api/v1/webhook-subscriptions/${res.body.data.id}`, { token });
  });

  it('refuses an unknown event, a plain-http URL when insecure receivers are not allowed, and a project the account cannot reach', async () => {
    const unknown = await subscribe({ url: receiver.url, events: ['attendee.exploded'] });
    expect(unknown.status).toBe(422);
    expect(Object.keys(unknown.body.errors)).toEqual(['events.0']);
    const noProject = await subscribe({ url: receiver.url, events: ['*'], project_id: 999 });
    expect(noProject.status).toBe(422);
    expect(noProject.body.errors.project_id).toBeDefined();
    const badUrl = await subscribe({ url: 'not a url', events: ['*'] });
    expect(badUrl.status).toBe(422);
    expect(badUrl.body.errors.url[0]).toMatch(/absolute URL/);
    const metadata = await subscribe({ url: 'http://169.254.169.254/latest', events: ['*'] });
    expect(metadata.status).toBe(422);
    expect(metadata.body.errors.url[0]).toMatch(/cloud metadata/);
  });
});
