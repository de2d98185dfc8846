import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { type Receiver, startReceiver } from '../helpers/receiver.js';

// Receivers that misbehave (docs/webhooks-outgoing.md, "Bad input and faults"): slow, resetting, flooding,
// redirecting, down and back. Each is a failed attempt recorded in the log and retried on the
// schedule; nothing is lost, nothing sent twice but as a retry of the same delivery id.
// webhook.timeoutMs is 1 s here so the slow receiver costs the suite 1 s, not 5.

const A = '/api/v1/projects/default/default';

describe('outgoing webhooks to misbehaving receivers', () => {
  let gh: TestAppliance;
  let token: string;
  let clock: ManualClock;
  let projectId: number;
  let receiver: Receiver;

  beforeAll(async () => {
    clock = new ManualClock();
    gh = await startAppliance(
      {
        GATEHOUSE_WEBHOOK_ALLOW_INSECURE: '1',
        GATEHOUSE_WEBHOOK_TIMEOUT_MS: '1000',
        GATEHOUSE_WEBHOOK_MAX_RESPONSE_BYTES: '100',
      },
      { clock },
    );
    token = await gh.token();
    projectId = (await gh.request('GET', A, { token })).body.data.id;
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver.close();
    await gh.destroy();
  });

  const dispatcher = () => gh.app.services.outgoing.dispatcher;
  /** A subscription to attendee.created at `url`, one event, the first attempt settled; answers the log row. */
  const oneDelivery = async (url: string) => {
    const sub = (
      await gh.request('POST', '/api/v1/webhook/subscribe', {
        token,
        body: { url, events: ['attendee.created'], project_id: projectId },
      })
    ).body.data;
    await gh.request('POST', `${A}/attendees`, { token, body: { first_name: 'F', last_name: 'L' } });
    for (let i = 0; i < 300; i++) {
      await dispatcher().idle();
      const [row] = (await gh.request('GET', `${A}/webhook-deliveries?subscription_id=${sub.id}`, { token })).body.data;
      if (row?.attempts > 0) return { sub, row };
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error('no attempt');
  };
  const drop = (id: number) => gh.request('DELETE', `/api/v1/webhook-subscriptions/${id}`, { token });

  it('gives up on an answer slower than webhook.timeoutMs and retries later', async () => {
    receiver.respond((_q, res) => void setTimeout(() => res.end('late'), 1500));
    const { sub, row } = await oneDelivery(receiver.url);
    expect(row).toMatchObject({ status: 'pending', attempts: 1, last_status_code: null });
    expect(row.attempt_history[0].error).toMatch(/no answer within 1000 ms/);
    expect(row.attempt_history[0].duration_ms).toBeGreaterThanOrEqual(900);
    await drop(sub.id);
  });

  it('reads a 50 MB answer only up to its bound and counts a 2xx as delivered', async () => {
    const chunk = Buffer.alloc(1024 * 1024, 'x');
    receiver.respond((_q, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      let sent = 0;
      const more = () => {
        while (sent < 50) {
          sent++;
          if (!res.write(chunk)) return void res.once('drain', more);
        }
        res.end();
      };
      res.on('error', () => {});
      more();
    });
    const started = Date.now();
    const { sub, row } = await oneDelivery(receiver.url);
    expect(row).toMatchObject({ status: 'delivered', last_status_code: 200 });
    expect(Date.now() - started).toBeLessThan(5000);
    await drop(sub.id);
  });

  it('follows no redirect: a 3xx is a failed attempt and the other URL is never asked', async () => {
    const elsewhere = await startReceiver();
    receiver.respond((_q, res) => {
      res.writeHead(307, { location: elsewhere.url });
      res.end();
    });
    const { sub, row } = await oneDelivery(receiver.url);
    expect(row).toMatchObject({ status: 'pending', last_status_code: 307 });
    expect(row.attempt_history[0].error).toMatch(/redirect \(307\) not followed/);
    expect(elsewhere.received).toHaveLength(0);
    await elsewhere.close();
    await drop(sub.id);
  });

  it('records a reset connection as a failed attempt, and delivers once the receiver is back', async () => {
    const resetter: Server = createServer((socket) => socket.resetAndDestroy());
    await new Promise<void>((r) => resetter.listen(0, '127.0.0.1', r));
    const port = (resetter.address() as { port: number }).port;
    const { sub, row } = await oneDelivery(`http://127.0.0.1:${port}/hook`);
    expect(row).toMatchObject({ status: 'pending', attempts: 1, last_status_code: null });
    expect(row.attempt_history[0].error).toMatch(/ECONNRESET|socket|closed/i);
    // Down for an hour: the receiver's port refuses connections; then it comes back.
    await new Promise<void>((r) => resetter.close(() => r()));
    for (const step of [6_000, 400_000, 2_100_000]) {
      // each past its retry time, jitter included
      clock.advance(step);
      dispatcher().wake();
      await dispatcher().idle();
    }
    const back = await startReceiver('/hook', port);
    clock.advance(8_000_000);
    dispatcher().wake();
    await back.waitFor(1);
    await dispatcher().idle();
    const [done] = (await gh.request('GET', `${A}/webhook-deliveries?subscription_id=${sub.id}`, { token })).body.data;
    expect(done).toMatchObject({ status: 'delivered', attempts: 5 });
    expect(back.received).toHaveLength(1);
    expect(back.received[0]!.headers['x-svc-delivery-id']).toBe(done.delivery_id);
    await back.close();
    await drop(sub.id);
  });
});
