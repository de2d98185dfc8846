import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { type Receiver, startReceiver } from '../helpers/receiver.js';

// The dispatcher is woken by every change that feeds webhooks, not by its poll (which only
// looks for what another process wrote): here the poll is ten minutes, so an event that
// arrives at all arrived by its wake. credential.created once waited for the poll, because the
// list of events that woke the dispatcher was kept by hand beside the catalogue; now it wakes on
// the one signal raised whenever the feed grows ('feed.appended', events/types.ts).

const A = '/api/v1/projects/default/default';

describe('the webhook dispatcher wakes on each change', () => {
  let gh: TestAppliance;
  let token: string;
  let receiver: Receiver;

  beforeAll(async () => {
    gh = await startAppliance({ GATEHOUSE_WEBHOOK_ALLOW_INSECURE: '1', GATEHOUSE_WEBHOOK_POLL_MS: '600000' });
    token = await gh.token();
    receiver = await startReceiver();
    const projectId = (await gh.request('GET', A, { token })).body.data.id as number;
    const events = ['attendee.created', 'credential.created', 'credential.revoked', 'access_point.updated'];
    expect(
      (
        await gh.request('POST', '/api/v1/webhook/subscribe', {
          token,
          body: { project_id: projectId, url: receiver.url, events },
        })
      ).status,
    ).toBe(201);
  });
  afterAll(async () => {
    await receiver.close();
    await gh.destroy();
  });

  it('delivers each change on its own, without waiting for the poll', async () => {
    // One at a time, each delivered before the next is made: a later change's wake must not carry an earlier one.
    const attendee = (
      await gh.request('POST', `${A}/attendees`, { token, body: { first_name: 'Wake', last_name: 'Up' } })
    ).body.data.id as number;
    await receiver.waitFor(1, 'attendee.created');
    const credential = await gh.request('POST', `${A}/attendees/${attendee}/credentials`, {
      token,
      body: { value: 'WAKE-1' },
    });
    expect(credential.status, credential.text).toBe(201);
    await receiver.waitFor(1, 'credential.created');
    expect((await gh.request('DELETE', `${A}/credentials/${credential.body.data.id}`, { token })).status).toBeLessThan(
      300,
    );
    await receiver.waitFor(1, 'credential.revoked');
    const zone = (await gh.request('POST', `${A}/access-zones`, { token, body: { name: 'Hall' } })).body.data
      .id as number;
    expect(
      (
        await gh.request('POST', `${A}/access-points`, {
          token,
          body: { name: 'Gate', access_zone_id: zone, direction: 'in' },
        })
      ).status,
    ).toBe(201);
    const [got] = await receiver.waitFor(1, 'access_point.updated');
    expect(got!.body).toMatchObject({ event: 'access_point.updated', data: { name: 'Gate' } });
  });
});
