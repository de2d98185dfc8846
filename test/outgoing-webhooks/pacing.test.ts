import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Dispatcher } from '../../src/outgoing-webhooks/dispatcher.js';
import { Sender } from '../../src/outgoing-webhooks/sender.js';
import { startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { type Receiver, startReceiver } from '../helpers/receiver.js';

// The scan path first (docs/webhooks-outgoing.md): while scans come faster than
// busyScansPerSecond, deliveries are paced at busyDeliveriesPerSecond; when the rush is over
// the backlog goes out at full speed. A second dispatcher over the appliance's services, given
// a scan count the test drives.

describe('pacing deliveries while the box is busy deciding', () => {
  let gh: TestAppliance;
  let receiver: Receiver;
  beforeAll(async () => {
    gh = await startAppliance({ GATEHOUSE_WEBHOOK_ALLOW_INSECURE: '1' });
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver.close();
    await gh.destroy();
  });

  it('sends about busyDeliveriesPerSecond while scans rush in, and everything once they stop', async () => {
    const s = gh.app.services;
    await s.outgoing.dispatcher.stop(); // this test's dispatcher alone
    const projectId = s.store.db.prepare("SELECT id FROM projects WHERE slug = 'default'").pluck().get() as number;
    s.outgoing.subscriptions.create({
      projectId,
      userId: null,
      url: receiver.url,
      events: ['attendee.created'],
      scheme: 'sha256',
    });
    let scans = 0;
    let rushing = true;
    const options = {
      headerPrefix: 'Svc',
      concurrency: 8,
      retrySchedule: [5],
      disableAfterMs: 3_600_000,
      batch: 100,
      pollMs: 1000,
      busyScansPerSecond: 100,
      busyDeliveriesPerSecond: 4,
    };
    const dispatcher = new Dispatcher(
      s.clock,
      s.bus,
      s.outgoing.feed,
      s.outgoing.subscriptions,
      s.outgoing.deliveries,
      new Sender(s.outgoing.policy, { timeoutMs: 2000, maxResponseBytes: 100 }),
      options,
      pino({ level: 'silent' }),
      () => (rushing ? (scans += 1000) : scans),
    );
    dispatcher.start();
    try {
      await new Promise((r) => setTimeout(r, 300)); // one sample: 4,000 scans a second, busy
      expect(dispatcher.busy).toBe(true);
      for (let i = 0; i < 20; i++)
        s.venue.attendees.create(projectId, { first_name: 'Rush', last_name: `No${i}` } as never);
      await new Promise((r) => setTimeout(r, 800)); // about three samples of one delivery each
      expect(receiver.received.length).toBeGreaterThan(0);
      expect(receiver.received.length).toBeLessThanOrEqual(6);
      rushing = false;
      await receiver.waitFor(20);
      expect(dispatcher.busy).toBe(false);
      expect(receiver.received.map((r) => r.body.data.last_name)).toEqual(
        Array.from({ length: 20 }, (_, i) => `No${i}`),
      );
    } finally {
      await dispatcher.stop();
    }
  });
});
