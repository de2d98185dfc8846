import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CONSUMER } from '../../sync/edge-upload.js';
import { startAppliance, type TestAppliance } from '../helpers/appliance.js';

// Edge sync's upload wakes on the one signal raised whenever the feed grows ('feed.appended',
// src/events/types.ts), as the webhook dispatcher does (test/outgoing-webhooks/wake.test.ts),
// instead of on a list of events kept by hand. Idle, the upload looks again only once a second;
// woken, it reads the feed at once. Each round begins by reading its cursor, so a read of the
// cursor within a quarter of a second of the signal, five times running, is the wake (by chance,
// with the one-second look alone, about one time in a thousand).

const P = '/api/v1/projects/default/default';

describe('edge sync wakes on feed.appended', () => {
  let cloud: TestAppliance;
  let edge: TestAppliance;

  beforeAll(async () => {
    cloud = await startAppliance({ GATEHOUSE_ROLE: 'cloud' });
    const issued = await cloud.request('POST', `${P}/sync/edges`, {
      token: await cloud.token(),
      body: { name: 'Wake box' },
    });
    expect(issued.status).toBe(201);
    edge = await startAppliance({
      GATEHOUSE_ROLE: 'edge',
      GATEHOUSE_CLOUD_URL: cloud.url,
      GATEHOUSE_SYNC_TOKEN: issued.body.data.token,
      GATEHOUSE_SYNC_LONG_POLL_SECONDS: '2',
    });
  }, 60_000);
  afterAll(async () => {
    await edge?.destroy();
    await cloud?.destroy();
  });

  it('reads the feed for the cloud as soon as something is appended to it', async () => {
    const { bus, outgoing } = edge.app.services;
    const cursor = vi.spyOn(outgoing.feed, 'cursor');
    const reads = () => cursor.mock.calls.filter(([consumer]) => consumer === CONSUMER).length;
    await new Promise((r) => setTimeout(r, 500)); // the first rounds done: the upload is idle
    for (let i = 0; i < 5; i++) {
      const before = reads();
      const signalled = performance.now();
      bus.emit('feed.appended', { by: 'commit' });
      while (reads() === before && performance.now() - signalled < 1500) await new Promise((r) => setTimeout(r, 5));
      expect(performance.now() - signalled, `round ${i + 1}`).toBeLessThan(250);
      await new Promise((r) => setTimeout(r, 50)); // idle again
    }
    cursor.mockRestore();
  });
});
