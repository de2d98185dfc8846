import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, ManualClock, startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { closedBy, connect, connectReader, inbox, mqttUrl, readerLogin, subscribe } from '../helpers/mqtt.js';

// Readers on the embedded broker (docs/mqtt.md): login -> OTP -> verify -> connect ->
// scan -> decision, with real `mqtt` clients over TCP; OTP refusals; duplicate request ids;
// revocation; malformed scans.

const A = '/api/v1/projects/default/default';
const NOW = Date.parse('2026-11-23T12:00:00Z');

describe('readers over MQTT', () => {
  let gh: TestAppliance;
  let staff: string;
  let api: ReturnType<typeof client>;
  let gate: number;
  const clock = new ManualClock(NOW);
  const events = async () => (await api.get(`${A}/access-events?per_page=100`)).body;

  beforeAll(async () => {
    gh = await startAppliance({ GATEHOUSE_READERS_VERIFY_PER_MINUTE: '1000' }, { clock });
    staff = await gh.token();
    api = client(gh, staff);
    const zone = (await api.post(`${A}/access-zones`, { name: 'Arena' })).body.data.id;
    gate = (await api.post(`${A}/access-points`, { name: 'North gate', access_zone_id: zone, direction: 'both' })).body
      .data.id;
    for (const identifier of ['R-1', 'R-2', 'R-3', 'R-4'])
      expect((await api.post(`${A}/readers`, { identifier, access_point_id: gate })).status).toBe(201);
    expect((await api.post(`${A}/readers`, { identifier: 'R-SPARE' })).status).toBe(201);
    await api.post(`${A}/attendees/import`, [
      { first_name: 'Ada', last_name: 'Lovelace', credential_value: 'TICKET-1' },
      { first_name: 'Alan', last_name: 'Turing', credential_value: 'TICKET-2' },
    ]);
  });
  afterAll(() => gh.destroy());

  it('logs a reader in with an OTP staff can read, then decides its scans on its decisions topic', async () => {
    const creds = await readerLogin(gh, staff, A, 'R-1');
    expect(creds.reader_token).toMatch(/^reader:\d+:[A-Za-z0-9_-]{20,}$/);
    expect(creds.mqtt).toEqual({
      host: '127.0.0.1',
      port: gh.app.deps.devices.mqttPorts().tcp,
      tls_port: null,
      ws_path: '/mqtt',
      username: 'R-1',
      password: creds.reader_token,
      scans_topic: 'gatehouse/default/default/readers/R-1/scans',
      decisions_topic: 'gatehouse/default/default/readers/R-1/decisions',
      qos: 1,
    });
    expect(Date.parse(creds.expires_at!)).toBe(NOW + 365 * 86_400_000);
    // Used: no longer listed for staff.
    expect(
      (await api.get(`${A}/readers/logins`)).body.data.some(
        (l: { reader_identifier: string }) => l.reader_identifier === 'R-1',
      ),
    ).toBe(false);

    const { client: reader, inbox: box } = await connectReader(gh, creds);
    const online = (await api.get(`${A}/readers/${creds.reader.id}`)).body.data.status;
    expect(online).toMatchObject({ status: 'online', connected_via: 'mqtt' });

    await reader.publishAsync(
      creds.mqtt.scans_topic,
      JSON.stringify({
        request_id: 'a-1',
        credential_value: 'TICKET-1',
        scan_type: 'barcode',
        timestamp: '2026-11-23T11:59:59Z',
      }),
      { qos: 1 },
    );
    const granted = await box.next((m) => m.payload.request_id === 'a-1');
    expect(granted.payload).toEqual({
      request_id: 'a-1',
      access_granted: true,
      attendee: { id: expect.any(Number), first_name: 'Ada', last_name: 'Lovelace' },
      access_point_id: gate,
      decided_at: new Date(NOW).toISOString(),
      event_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    await reader.publishAsync(
      creds.mqtt.scans_topic,
      JSON.stringify({
        request_id: 'a-2',
        credential_value: 'NOPE',
        scan_type: 'barcode',
        timestamp: Math.floor(NOW / 1000),
      }),
      { qos: 1 },
    );
    expect((await box.next((m) => m.payload.request_id === 'a-2')).payload).toEqual({
      request_id: 'a-2',
      access_granted: false,
      reason: 'invalid_credential',
      reason_detail: null,
      access_point_id: gate,
      decided_at: new Date(NOW).toISOString(),
      event_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });

    const log = await events();
    expect(log.data.slice(0, 2)).toEqual([
      expect.objectContaining({ source: 'mqtt', reader_id: creds.reader.id, credential_value: 'NOPE', granted: false }),
      expect.objectContaining({
        source: 'mqtt',
        reader_id: creds.reader.id,
        credential_value: 'TICKET-1',
        granted: true,
        scanned_at: '2026-11-23T11:59:59.000Z',
        uuid: granted.payload.event_id,
      }),
    ]);
    // The access point embeds its readers with their state.
    const point = (await api.get(`${A}/access-points/${gate}`)).body.data;
    expect(point.readers.find((r: { identifier: string }) => r.identifier === 'R-1').status).toMatchObject({
      status: 'online',
      connected_via: 'mqtt',
      last_scan: '2026-11-23T12:00:00.000Z',
    });

    await reader.endAsync();
    await expect
      .poll(async () => (await api.get(`${A}/readers/${creds.reader.id}`)).body.data.status.status)
      .toBe('offline');
  });

  it('gives the same decision for a repeated request_id and writes one access event', async () => {
    const creds = await readerLogin(gh, staff, A, 'R-2');
    const { client: reader, inbox: box } = await connectReader(gh, creds);
    const before = (await events()).meta.total;
    const scan = JSON.stringify({ request_id: 'dup-1', credential_value: 'TICKET-2', scan_type: 'qr' });
    await reader.publishAsync(creds.mqtt.scans_topic, scan, { qos: 1 });
    const first = await box.next((m) => m.payload.request_id === 'dup-1');
    await reader.publishAsync(creds.mqtt.scans_topic, scan, { qos: 1 });
    const second = await box.next((m) => m.payload.request_id === 'dup-1');
    expect(first.payload.access_granted).toBe(true);
    expect(second.payload).toEqual(first.payload);
    expect((await events()).meta.total).toBe(before + 1);
    await reader.endAsync();
  });

  it('refuses wrong, reused, expired and locked OTPs with 422, unknown readers and projects too', async () => {
    // One refusal for every case (docs/security.md, attack 12: the answers told strangers which readers exist).
    const REFUSED = ['The one-time password is invalid, expired or already used: ask for a new reader login.'];
    const verify = (otp: string, reader_identifier = 'R-3') =>
      gh.request('POST', '/api/v1/reader-otp/verify', { body: { otp, reader_identifier } });
    const ask = async (identifier = 'R-3') => {
      expect((await gh.request('POST', `${A}/readers/login`, { body: { reader_identifier: identifier } })).status).toBe(
        202,
      );
      return ((await api.get(`${A}/readers/logins`)).body.data as { reader_identifier: string; otp: string }[]).find(
        (l) => l.reader_identifier === identifier,
      )!.otp;
    };
    const nothing = await verify('123456');
    expect(nothing.status).toBe(422);
    expect(nothing.body.errors.otp).toEqual(REFUSED);

    let otp = await ask();
    expect(otp).toMatch(/^\d{6}$/);
    const wrongOtp = otp === '000000' ? '000001' : '000000';
    const wrong = await verify(wrongOtp);
    expect(wrong.status).toBe(422);
    expect(wrong.body).toEqual({ message: REFUSED[0], errors: { otp: REFUSED } });
    expect((await verify(otp)).status).toBe(200);
    const reused = await verify(otp);
    expect(reused.status).toBe(422);
    expect(reused.body.errors.otp).toEqual(REFUSED);

    // Asking again supersedes the pending OTP.
    const superseded = await ask();
    otp = await ask();
    if (superseded !== otp) expect((await verify(superseded)).body.errors.otp).toEqual(REFUSED);
    clock.advance(10 * 60_000 + 1);
    const expired = await verify(otp);
    expect(expired.status).toBe(422);
    expect(expired.body.errors.otp).toEqual(REFUSED);

    otp = await ask();
    for (let i = 0; i < 5; i++) expect((await verify(otp === '999999' ? '999998' : '999999')).status).toBe(422);
    const locked = await verify(otp);
    expect(locked.status).toBe(422); // the right OTP, after five wrong ones
    expect(locked.body.errors.otp).toEqual(REFUSED);

    expect((await verify('123456', 'NO-SUCH')).body.errors).toEqual({ otp: REFUSED });
    // Asking for an unknown reader or project is answered as for a known one, and makes no login.
    const unknown = await gh.request('POST', `${A}/readers/login`, { body: { reader_identifier: 'NO-SUCH' } });
    expect(unknown.status).toBe(202);
    expect(
      (await gh.request('POST', '/api/v1/projects/default/nope/readers/login', { body: { reader_identifier: 'R-3' } }))
        .status,
    ).toBe(202);
    expect(
      ((await api.get(`${A}/readers/logins`)).body.data as { reader_identifier: string }[]).some(
        (l) => l.reader_identifier === 'NO-SUCH',
      ),
    ).toBe(false);
    const bad = await gh.request('POST', '/api/v1/reader-otp/verify', {
      body: { otp: 123456, reader_identifier: 'R-3' },
    });
    expect(bad.status).toBe(422);
    expect(Object.keys(bad.body.errors)).toEqual(['otp']);
    // Staff listing needs a token with access:read.
    expect((await gh.request('GET', `${A}/readers/logins`)).status).toBe(401);
    expect((await gh.request('GET', `${A}/readers/logins`, { token: await gh.token(['attendees:read']) })).status).toBe(
      401,
    );
  });

  it('limits OTP attempts per client address with 429', async () => {
    const limited = await startAppliance({ GATEHOUSE_READERS_VERIFY_PER_MINUTE: '3' });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++)
        statuses.push(
          (
            await limited.request('POST', '/api/v1/reader-otp/verify', {
              body: { otp: '123456', reader_identifier: 'X' },
            })
          ).status,
        );
      expect(statuses).toEqual([422, 422, 422, 429]);
      const res = await limited.request('POST', '/api/v1/reader-otp/verify', {
        body: { otp: '123456', reader_identifier: 'X' },
      });
      expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(res.body).toMatchObject({ message: 'Too Many Attempts.', retry_after: expect.any(Number) });
    } finally {
      await limited.destroy();
    }
  });

  it('disconnects a reader at once when its token is revoked, and refuses the token afterwards', async () => {
    const creds = await readerLogin(gh, staff, A, 'R-4');
    const { client: reader } = await connectReader(gh, creds);
    const closed = closedBy(reader);
    expect((await api.del(`${A}/readers/${creds.reader.id}/token`)).status).toBe(204);
    await closed;
    const again = await connect(mqttUrl(gh), { username: 'R-4', password: creds.reader_token }).catch(
      (e: { code?: number }) => e,
    );
    expect((again as { code?: number }).code).toBe(4); // CONNACK: bad user name or password
  });

  it('answers malformed scans on the decisions topic when a request_id can be read, and never writes an event', async () => {
    const creds = await readerLogin(gh, staff, A, 'R-1');
    const { client: reader, inbox: box } = await connectReader(gh, creds);
    const before = (await events()).meta.total;
    const send = (payload: string | Buffer) => reader.publishAsync(creds.mqtt.scans_topic, payload, { qos: 1 });
    await send('{"request_id": "m-1", "credential_value": ');
    expect((await box.next((m) => m.payload.request_id === 'm-1')).payload).toEqual({
      request_id: 'm-1',
      error: 'malformed_json',
      message: 'The scan is not valid JSON.',
    });
    await send(JSON.stringify({ request_id: 'm-2', scan_type: 'barcode' }));
    expect((await box.next((m) => m.payload.request_id === 'm-2')).payload).toEqual({
      request_id: 'm-2',
      error: 'validation_failed',
      message: 'The scan fails validation.',
      errors: { credential_value: ['The credential_value field is required.'] },
    });
    await send(JSON.stringify({ request_id: 'm-3', credential_value: 'x'.repeat(5000) }));
    expect((await box.next((m) => m.payload.request_id === 'm-3')).payload).toMatchObject({
      request_id: 'm-3',
      error: 'payload_too_large',
    });
    await send(JSON.stringify({ request_id: 'm-4', credential_value: 'TICKET-1', timestamp: '2026-11-01T00:00:00Z' }));
    expect((await box.next((m) => m.payload.request_id === 'm-4')).payload).toMatchObject({
      error: 'validation_failed',
      errors: { timestamp: [expect.stringMatching(/7 days/)] },
    });
    await send('no request id here');
    await send(JSON.stringify({ credential_value: 'TICKET-1' }));
    // A good scan after the bad ones still gets its decision: the reader was not disconnected.
    await send(JSON.stringify({ request_id: 'm-5', credential_value: 'TICKET-1' }));
    expect((await box.next((m) => m.payload.request_id === 'm-5')).payload).toHaveProperty('access_granted');
    expect(box.messages.filter((m) => m.payload.request_id === undefined || m.payload.request_id === null)).toEqual([]);
    expect((await events()).meta.total).toBe(before + 1);
    const metrics = (await gh.request('GET', '/metrics', { token: staff })).text;
    expect(metrics).toMatch(/gatehouse_mqtt_messages_total\{what="invalid_json"\} 2/);
    expect(metrics).toMatch(/gatehouse_mqtt_messages_total\{what="invalid_payload"\} 3/);
    expect(metrics).toMatch(/gatehouse_mqtt_messages_total\{what="too_large"\} 1/);
    expect(metrics).toMatch(/gatehouse_mqtt_clients\{kind="reader"\} 1/);

    // A packet over mqtt.maxPacketBytes (64 KiB) closes the connection before its body is read.
    const closed = closedBy(reader);
    reader.publish(creds.mqtt.scans_topic, Buffer.alloc(70_000, 0x20), { qos: 0 });
    await closed;
    expect((await gh.request('GET', '/metrics', { token: staff })).text).toMatch(
      /gatehouse_mqtt_messages_total\{what="oversize_packet"\} 1/,
    );
    // The broker is fine: a new connection works.
    const { client: again, inbox: box2 } = await connectReader(gh, creds);
    await again.publishAsync(
      creds.mqtt.scans_topic,
      JSON.stringify({ request_id: 'm-6', credential_value: 'TICKET-2' }),
      { qos: 1 },
    );
    expect((await box2.next((m) => m.payload.request_id === 'm-6')).payload).toHaveProperty('access_granted');
    await again.endAsync();
    void inbox;
    void subscribe;
  });
});
