import type { MqttClient } from 'mqtt';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScanDeadlines, JOURNAL_WRITE, PENDING_ENTRY, type WaitingOn } from '../../src/access/scan-deadlines.js';
import { client, startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { connect, inbox, mqttUrl, readerLogin, subscribe, type ReaderCredentials } from '../helpers/mqtt.js';
import { signedPoster } from '../helpers/signed-webhooks.js';

// Every scan is answered within a bound, or its sender is let go (docs/mqtt.md:
// answered in bounded time): an MQTT reader's connection is closed so it sends the scan again, an
// HTTP scan is answered 503 with Retry-After, and each is counted by what it waited on. The
// journal is held with the event log's hold() (a stalled journal: writes neither done nor failed).

const A = '/api/v1/projects/default/default';

/** What a transport holds for a scan, here: a record of what its listener was told. */
class Recorder {
  readonly told: { waitingOn: WaitingOn; waitedMs: number }[] = [];
}

const timeoutsIn = (text: string) => {
  const counts: Record<string, number> = {};
  for (const m of text.matchAll(
    /^gatehouse_scan_answer_timeouts_total\{transport="(\w+)",waiting_on="([^"]+)"\} (\d+)$/gm,
  ))
    counts[`${m[1]}: ${m[2]}`] = Number(m[3]);
  return counts;
};

describe('answer deadlines (the ring of open tickets)', () => {
  // timeoutMs 1000: sweeps every 250 ms, and a ticket is let go on the fifth sweep after it was
  // opened (1,000 ms at the least, 1,250 at the most). Sweeps are called here by hand.
  const make = () => {
    const registry = new Registry();
    const deadlines = new ScanDeadlines(1000, registry);
    // Each transport's view, its listener recording what it is told of its scans let go.
    const view = (transport: 'mqtt' | 'webhook' | 'api') =>
      deadlines.tickets(transport, (r: Recorder, waitingOn, waitedMs) => r.told.push({ waitingOn, waitedMs }));
    return { deadlines, registry, mqtt: view('mqtt'), webhook: view('webhook'), api: view('api') };
  };

  it('lets go of a ticket left open past the bound, once, saying what its scan waited on, and never of a closed one', async () => {
    const { deadlines, registry, mqtt, api } = make();
    expect(deadlines.intervalMs).toBe(250);
    const stalled = new Recorder();
    const answered = new Recorder();
    const waiting = mqtt.begin(stalled);
    deadlines.waitingOn(waiting, JOURNAL_WRITE);
    const done = api.begin(answered);
    deadlines.end(done);
    for (let i = 0; i < 4; i++) deadlines.sweep();
    expect(stalled.told).toEqual([]); // 1,000 ms have not surely passed
    deadlines.sweep();
    expect(stalled.told).toEqual([{ waitingOn: 'journal write', waitedMs: 1000 }]);
    for (let i = 0; i < 10; i++) deadlines.sweep();
    expect(stalled.told).toHaveLength(1);
    expect(answered.told).toEqual([]);
    deadlines.end(waiting); // answered at last: too late, and nothing happens
    expect(deadlines.open).toBe(0);
    expect(timeoutsIn(await registry.metrics())).toEqual({ 'mqtt: journal write': 1 });
  });

  it('lets go in the order scans began, each with its own stage, while later ones keep their time', async () => {
    const { deadlines, registry, mqtt, webhook } = make();
    const a = new Recorder();
    const b = new Recorder();
    const first = webhook.begin(a);
    deadlines.waitingOn(first, PENDING_ENTRY);
    deadlines.sweep();
    deadlines.sweep();
    mqtt.begin(b); // still being decided
    for (let i = 0; i < 3; i++) deadlines.sweep();
    expect([a.told.length, b.told.length]).toEqual([1, 0]);
    expect(a.told[0]!.waitingOn).toBe('request-id pending entry');
    for (let i = 0; i < 2; i++) deadlines.sweep();
    expect(b.told).toEqual([{ waitingOn: 'decision', waitedMs: 1000 }]);
    expect(timeoutsIn(await registry.metrics())).toEqual({
      'webhook: request-id pending entry': 1,
      'mqtt: decision': 1,
    });
  });

  it('keeps every open ticket when more are open than the ring has room for, and ignores tickets it never gave', () => {
    const { deadlines, mqtt, api } = make();
    const waiters = Array.from({ length: 5000 }, () => new Recorder());
    const tickets = waiters.map((w) => mqtt.begin(w));
    tickets.forEach((t, i) => {
      i % 2 === 0 && deadlines.end(t);
    });
    deadlines.end(0);
    deadlines.end(tickets.at(-1)! + 10);
    deadlines.waitingOn(0, JOURNAL_WRITE);
    expect(deadlines.open).toBe(2500);
    for (let i = 0; i < 6; i++) deadlines.sweep();
    expect(waiters.map((w) => w.told.length)).toEqual(waiters.map((_, i) => (i % 2 === 0 ? 0 : 1)));
    expect(deadlines.open).toBe(0);
    // And the ring goes on being used after growing.
    const later = new Recorder();
    api.begin(later);
    for (let i = 0; i < 6; i++) deadlines.sweep();
    expect(later.told).toHaveLength(1);
  });
});

describe('a scan not answered within mqtt.answerTimeoutMs', () => {
  let gh: TestAppliance;
  let api: ReturnType<typeof client>;
  let staff: string;
  let gate: number;
  const open: MqttClient[] = [];
  const timeouts = async () => timeoutsIn((await gh.request('GET', '/metrics', { token: staff })).text);
  /** Access events of this request id in SQLite now (journaled ones not ingested yet are not counted). */
  const eventsNow = (requestId: string) =>
    gh.app.store.db.prepare("SELECT uuid FROM access_events WHERE request_key LIKE '%:' || ?").all(requestId).length;
  const eventsOf = async (requestId: string) => {
    await gh.app.deps.scans.settled();
    return eventsNow(requestId);
  };

  beforeAll(async () => {
    gh = await startAppliance({ GATEHOUSE_MQTT_ANSWER_TIMEOUT_MS: '300', GATEHOUSE_READERS_VERIFY_PER_MINUTE: '1000' });
    staff = await gh.token();
    api = client(gh, staff);
    const zone = (await api.post(`${A}/access-zones`, { name: 'Hall' })).body.data.id;
    gate = (await api.post(`${A}/access-points`, { name: 'Door', access_zone_id: zone, direction: 'both' })).body.data
      .id;
    for (const identifier of ['SLOW-1', 'SLOW-2', 'SLOW-3'])
      expect((await api.post(`${A}/readers`, { identifier, access_point_id: gate })).status).toBe(201);
    await api.post(
      `${A}/attendees/import`,
      ['T-1', 'T-2', 'T-3'].map((credential_value) => ({ first_name: 'Grace', last_name: 'Hopper', credential_value })),
    );
  });
  afterAll(async () => {
    for (const c of open) c.end(true);
    await gh.destroy();
  });

  const readerClient = async (creds: ReaderCredentials, reconnectPeriod: number) => {
    const c = await connect(mqttUrl(gh), {
      username: creds.mqtt.username,
      password: creds.mqtt.password,
      clientId: `${creds.reader.identifier}-${Math.random().toString(36).slice(2, 8)}`,
      reconnectPeriod,
      clean: true,
    });
    open.push(c);
    c.on('error', () => {});
    const box = inbox(c);
    expect(await subscribe(c, creds.mqtt.decisions_topic)).toEqual([1]);
    return { c, box };
  };
  const closed = (c: MqttClient) => new Promise<void>((resolve) => c.once('close', () => resolve()));

  it("closes the MQTT reader's connection unacknowledged; the reader reconnects, sends it again and gets it answered, with one event", async () => {
    const creds = await readerLogin(gh, staff, A, 'SLOW-1');
    const { c, box } = await readerClient(creds, 100); // mqtt.js reconnects and sends unacknowledged QoS 1 publishes again
    const before = await timeouts();
    const release = gh.app.eventLog.hold();
    let acked = false;
    const publishing = c
      .publishAsync(creds.mqtt.scans_topic, JSON.stringify({ request_id: 'held-1', credential_value: 'T-1' }), {
        qos: 1,
      })
      .then(() => (acked = true));
    try {
      await closed(c); // by the box: the journal has not completed the scan's write
      expect(acked).toBe(false);
      // Reconnected and sent again (the same request_id): waiting on the first one's pending entry, closed again.
      await expect
        .poll(async () => (await timeouts())['mqtt: request-id pending entry'] ?? 0, { timeout: 15_000 })
        .toBeGreaterThan(before['mqtt: request-id pending entry'] ?? 0);
      expect((await timeouts())['mqtt: journal write']).toBe((before['mqtt: journal write'] ?? 0) + 1);
      expect(eventsNow('held-1')).toBe(0);
      expect(gh.app.eventLog.lagging).toBe(true); // held: not in the journal either
    } finally {
      release();
    }
    await publishing; // the PUBACK of the send after the journal completes
    // mqtt.js sends its unacknowledged publishes again before it subscribes again, so the decision
    // of that send may have had no subscription to go to: the reader asks once more, as readers do
    // when no decision comes (docs/mqtt.md: retries), and gets the same decision.
    await c.publishAsync(creds.mqtt.scans_topic, JSON.stringify({ request_id: 'held-1', credential_value: 'T-1' }), {
      qos: 1,
    });
    const decision = (await box.next((m) => m.payload.request_id === 'held-1', 10_000)).payload;
    expect(decision).toMatchObject({ request_id: 'held-1', access_granted: true, attendee: { first_name: 'Grace' } });
    // Every decision the reader got for it is that one (its first connection's answer may come too, through the broker).
    for (const m of box.messages.filter((m) => m.payload.request_id === 'held-1')) expect(m.payload).toEqual(decision);
    expect(await eventsOf('held-1')).toBe(1);
    c.end(true);
  }, 30_000);

  it('closes a second connection of the reader sending the same request_id, counted as waiting on the pending entry', async () => {
    const creds = await readerLogin(gh, staff, A, 'SLOW-2');
    const one = await readerClient(creds, 0);
    const two = await readerClient(creds, 0);
    const before = await timeouts();
    const release = gh.app.eventLog.hold();
    try {
      const scan = JSON.stringify({ request_id: 'twice-1', credential_value: 'T-2' });
      void one.c.publishAsync(creds.mqtt.scans_topic, scan, { qos: 1 }).catch(() => {});
      await expect.poll(() => gh.app.eventLog.lagging, { timeout: 5000 }).toBe(true); // the first is waiting on the journal
      void two.c.publishAsync(creds.mqtt.scans_topic, scan, { qos: 1 }).catch(() => {});
      await Promise.all([one.c.connected ? closed(one.c) : null, two.c.connected ? closed(two.c) : null]);
      const after = await timeouts();
      expect((after['mqtt: journal write'] ?? 0) - (before['mqtt: journal write'] ?? 0)).toBe(1);
      expect((after['mqtt: request-id pending entry'] ?? 0) - (before['mqtt: request-id pending entry'] ?? 0)).toBe(1);
    } finally {
      release();
    }
    // Once written, a fresh connection sending it again gets the one decision.
    const three = await readerClient(creds, 0);
    await three.c.publishAsync(
      creds.mqtt.scans_topic,
      JSON.stringify({ request_id: 'twice-1', credential_value: 'T-2' }),
      { qos: 1 },
    );
    expect((await three.box.next((m) => m.payload.request_id === 'twice-1', 10_000)).payload).toMatchObject({
      access_granted: true,
    });
    expect(await eventsOf('twice-1')).toBe(1);
    three.c.end(true);
  }, 30_000);

  it('answers the REST scan and the access-event webhook 503 scan_answer_timeout with Retry-After, and their retries the decision', async () => {
    const post = signedPoster(gh, staff, 'access-event');
    const before = await timeouts();
    const release = gh.app.eventLog.hold();
    let rest: Awaited<ReturnType<typeof api.post>>;
    let webhook: Awaited<ReturnType<typeof post>>;
    try {
      rest = await api.post(`${A}/access-points/${gate}/scan`, { credential_value: 'T-3', request_id: 'rest-held' });
      webhook = await post({ reader_id: 'SLOW-3', credential_value: 'NOBODY', request_id: 'hook-held' });
    } finally {
      release();
    }
    expect(rest.status).toBe(503);
    expect(rest.headers.get('retry-after')).toBe('1');
    expect(rest.body).toEqual({
      message:
        'The scan was not answered within 0.3 s (it was waiting on its access event being written to the journal); send it again with the same request_id after Retry-After.',
      retry_after: Number(rest.headers.get('retry-after')),
    });
    expect(webhook.status).toBe(503);
    expect(webhook.headers.get('retry-after')).toBe('1');
    expect(webhook.body).toEqual({
      error: 'scan_answer_timeout',
      message: expect.stringMatching(/^The scan was not answered within 0\.3 s/),
      retry_after: 1,
    });
    const after = await timeouts();
    expect((after['api: journal write'] ?? 0) - (before['api: journal write'] ?? 0)).toBe(1);
    expect((after['webhook: journal write'] ?? 0) - (before['webhook: journal write'] ?? 0)).toBe(1);
    // The scans went on and were decided once: their retries get those decisions.
    const again = await api.post(`${A}/access-points/${gate}/scan`, {
      credential_value: 'T-3',
      request_id: 'rest-held',
    });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ access_granted: true, attendee: { first_name: 'Grace' } });
    const hookAgain = await post({ reader_id: 'SLOW-3', credential_value: 'NOBODY', request_id: 'hook-held' });
    expect(hookAgain.status).toBe(200);
    expect(hookAgain.body).toMatchObject({ access_granted: false, reason: 'invalid_credential' });
    expect([await eventsOf('rest-held'), await eventsOf('hook-held')]).toEqual([1, 1]);
  }, 30_000);

  it('answers scans as before once the journal completes, and counts nothing then', async () => {
    const before = await timeouts();
    for (let i = 0; i < 20; i++)
      expect(
        (await api.post(`${A}/access-points/${gate}/scan`, { credential_value: 'T-1', request_id: `quick-${i}` }))
          .status,
      ).toBe(200);
    expect(await timeouts()).toEqual(before);
  });
});
