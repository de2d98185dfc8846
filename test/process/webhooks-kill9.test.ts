import BetterSqlite3 from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { requester } from '../helpers/appliance.js';
import { runGatehouse } from '../helpers/process.js';
import { startReceiver } from '../helpers/receiver.js';

// Issue 25, "Durable from the commit": kill -9 the appliance while deliveries are pending (the
// receiver refusing them) and changes are committed but not dispatched (held behind the
// failing head; scans journaled and perhaps not yet ingested), then start it again on the same
// data directory with the receiver back: every event arrives, once, in order.

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-hooks-kill9-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const A = '/api/v1/projects/default/default';
const env = {
  GATEHOUSE_DATA_DIR: dir,
  GATEHOUSE_HTTP_PORT: '0',
  GATEHOUSE_MQTT_PORT: '0',
  GATEHOUSE_ADMIN_PASSWORD: 'webhook kill nine',
  GATEHOUSE_RATE_LIMIT_STANDARD: '0',
  GATEHOUSE_WEBHOOK_ALLOW_INSECURE: '1',
};

describe('outgoing webhooks through a kill -9', () => {
  it('delivers every committed change and every journaled scan once, in order, after a restart', async () => {
    const receiver = await startReceiver();
    let accepting = false;
    const accepted = () => receiver.received.filter((_r, i) => acceptedAt.has(i));
    const acceptedAt = new Set<number>();
    receiver.respond((q, res) => {
      if (accepting) acceptedAt.add(receiver.received.indexOf(q));
      res.writeHead(accepting ? 200 : 503);
      res.end();
    });

    const first = runGatehouse([], env);
    const [, url] = await first.waitFor(/Gatehouse ready at (http:\/\/\S+?)"/);
    const request = requester(url!);
    const token = (
      await request('POST', '/api/v1/auth/token', {
        body: { email: 'admin@gatehouse.local', password: 'webhook kill nine', device_name: 't' },
      })
    ).body.token as string;
    const projectId = (await request('GET', A, { token })).body.data.id;
    const sub = await request('POST', '/api/v1/webhook/subscribe', {
      token,
      body: {
        url: receiver.url,
        events: ['attendee.created', 'access.granted', 'access.denied'],
        project_id: projectId,
      },
    });
    expect(sub.status).toBe(201);
    const zone = (await request('POST', `${A}/access-zones`, { token, body: { name: 'Hall' } })).body.data.id;
    const gate = (await request('POST', `${A}/access-points`, { token, body: { name: 'Door', access_zone_id: zone } }))
      .body.data.id;

    const attendees: number[] = [];
    for (let i = 0; i < 20; i++)
      attendees.push(
        (await request('POST', `${A}/attendees`, { token, body: { first_name: `K${i}`, last_name: 'Nine' } })).body.data
          .id,
      );
    const scans = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        request('POST', `${A}/access-points/${gate}/scan`, {
          token,
          body: { credential_value: `UNKNOWN-${i}`, scan_type: 'qr' },
        }),
      ),
    );
    expect(scans.map((s) => s.status)).toEqual(scans.map(() => 200));
    await receiver.waitFor(1); // the head was attempted, refused
    first.proc.kill('SIGKILL');
    await first.exit;
    expect(first.proc.signalCode).toBe('SIGKILL');

    accepting = true;
    const second = runGatehouse([], env);
    await second.waitFor(/Gatehouse ready at/);
    try {
      // 20 attendees and 30 denials; the head's retry comes due about 5 s after its first attempt.
      for (let i = 0; i < 300 && accepted().length < 50; i++) await new Promise((r) => setTimeout(r, 100));
      const got = accepted();
      expect(got).toHaveLength(50);
      const created = got.filter((g) => g.body.event === 'attendee.created').map((g) => g.body.data.attendee_id);
      expect(created).toEqual(attendees);
      const denied = got.filter((g) => g.body.event === 'access.denied').map((g) => g.body.data.credential_value);
      expect(new Set(denied).size).toBe(30);
      expect(new Set(got.map((g) => g.body.id)).size).toBe(50); // each event once
    } finally {
      await second.stop();
      await receiver.close();
    }
    // In order: the scans as the journal recorded them.
    const db = new BetterSqlite3(join(dir, 'gatehouse.db'), { readonly: true });
    const stored = db.prepare('SELECT uuid FROM access_events ORDER BY id').pluck().all();
    db.close();
    expect(
      accepted()
        .filter((g) => g.body.event === 'access.denied')
        .map((g) => g.body.data.uuid),
    ).toEqual(stored);
  }, 60_000);
});
