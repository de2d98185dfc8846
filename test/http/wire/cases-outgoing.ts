import { c, unique, type Venue } from './fixtures.js';
import { A, type Case, type World } from './world.js';

// Outgoing webhook subscriptions and the delivery log. The receiver is https on a reserved name
// (.invalid, RFC 2606) that never resolves: attempts fail at once, which is all these cases need
// (test/outgoing-webhooks/ delivers to real receivers).

const URL = 'https://receiver.invalid/hook';

export function outgoingCases(w: World, _v: Venue): Case[] {
  const projectId = async () => (await w.api('GET', A)).body.data.id as number;
  const subscription = async () => {
    const res = await w.api('POST', '/api/v1/webhook/subscribe', {
      url: URL,
      events: ['*'],
      project_id: await projectId(),
    });
    if (res.status !== 201) throw new Error(`subscribe: ${res.status} ${res.text}`);
    return res.body.data.id as number;
  };
  const delivery = async () => {
    const id = await subscription();
    return (await w.api('POST', `/api/v1/webhook-subscriptions/${id}/test`)).body.data.id as number;
  };
  const base = '/api/v1/webhook-subscriptions';
  return [
    c('webhook-subscriptions.store', 201, 'a receiver and events', async () =>
      w.api('POST', '/api/v1/webhook/subscribe', {
        url: `${URL}?n=${unique()}`,
        events: ['access.granted'],
        project_id: await projectId(),
      }),
    ),
    c('webhook-subscriptions.store', 422, 'an event not in the catalogue', async () =>
      w.api('POST', '/api/v1/webhook/subscribe', { url: URL, events: ['nope'], project_id: await projectId() }),
    ),
    c('webhook-subscriptions.index', 200, 'a page', () => w.api('GET', base)),
    c('webhook-subscriptions.show', 200, 'a subscription', async () => w.api('GET', `${base}/${await subscription()}`)),
    c('webhook-subscriptions.show', 404, 'an id that names nothing', () => w.api('GET', `${base}/999999`)),
    c('webhook-subscriptions.update', 200, 'new events', async () =>
      w.api('PUT', `${base}/${await subscription()}`, { events: ['attendee.created'] }),
    ),
    c('webhook-subscriptions.update', 404, 'an id that names nothing', () =>
      w.api('PUT', `${base}/999999`, { active: false }),
    ),
    c('webhook-subscriptions.update', 422, 'plain http', async () =>
      w.api('PUT', `${base}/${await subscription()}`, { url: 'http://receiver.invalid/' }),
    ),
    c('webhook-subscriptions.destroy', 204, 'a subscription', async () =>
      w.api('DELETE', `${base}/${await subscription()}`),
    ),
    c('webhook-subscriptions.destroy', 404, 'an id that names nothing', () => w.api('DELETE', `${base}/999999`)),
    c('webhook-subscriptions.rotate-secret', 200, 'a subscription', async () =>
      w.api('POST', `${base}/${await subscription()}/rotate-secret`),
    ),
    c('webhook-subscriptions.rotate-secret', 404, 'an id that names nothing', () =>
      w.api('POST', `${base}/999999/rotate-secret`),
    ),
    c('webhook-subscriptions.test', 200, 'a subscription (its receiver never resolves: a failed delivery)', async () =>
      w.api('POST', `${base}/${await subscription()}/test`),
    ),
    c('webhook-subscriptions.test', 404, 'an id that names nothing', () => w.api('POST', `${base}/999999/test`)),
    c('webhook-deliveries.index', 200, 'a page', () => w.api('GET', `${A}/webhook-deliveries?status=failed`)),
    c('webhook-deliveries.show', 200, 'a delivery', async () =>
      w.api('GET', `${A}/webhook-deliveries/${await delivery()}`),
    ),
    c('webhook-deliveries.show', 404, 'an id that names nothing', () => w.api('GET', `${A}/webhook-deliveries/999999`)),
    c('webhook-deliveries.resend', 200, 'a failed delivery', async () =>
      w.api('POST', `${A}/webhook-deliveries/${await delivery()}/resend`),
    ),
    c('webhook-deliveries.resend', 404, 'an id that names nothing', () =>
      w.api('POST', `${A}/webhook-deliveries/999999/resend`),
    ),
  ];
}
