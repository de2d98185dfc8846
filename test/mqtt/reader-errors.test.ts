import type { MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { connect, connectReader, inbox, mqttUrl, readerLogin, subscribe } from '../helpers/mqtt.js';

// A reader's refused scans over REST (docs/mqtt.md: reader state; the console's error counts,
// docs/console.md "Devices"): each scan the broker refuses before a decision counts on the reader it names,
// from the reader itself or from its gateway, with the latest error code; decisions (denials
// included) are not errors, and the announced ReaderStatusChanged keeps its shape.

const A = '/api/v1/projects/default/default';

describe('reader error counts', () => {
  let gh: TestAppliance;
  let api: ReturnType<typeof client>;
  let gate: number;
  const open: MqttClient[] = [];
  const status = async (id: number) => (await api.get(`${A}/readers/${id}`)).body.data.status;

  beforeAll(async () => {
    gh = await startAppliance();
    api = client(gh, await gh.token());
    const zone = (await api.post(`${A}/access-zones`, { name: 'Arena' })).body.data.id;
    gate = (await api.post(`${A}/access-points`, { name: 'Gate', access_zone_id: zone, direction: 'both' })).body.data
      .id;
    for (const identifier of ['ERR-1', 'ERR-GW-A'])
      expect((await api.post(`${A}/readers`, { identifier, access_point_id: gate })).status).toBe(201);
    expect((await api.post(`${A}/readers`, { identifier: 'ERR-UNASSIGNED' })).status).toBe(201);
    await api.post(`${A}/attendees/import`, [
      { first_name: 'Ada', last_name: 'Lovelace', credential_value: 'TICKET-1' },
    ]);
  });
  afterAll(async () => {
    for (const c of open) c.end(true);
    await gh.destroy();
  });

  it('starts at no errors, counts refused scans with the latest code, and not decisions', async () => {
    const creds = await readerLogin(gh, await gh.token(), A, 'ERR-1');
    expect(await status(creds.reader.id)).toMatchObject({ errors: 0, last_error: null, last_error_at: null });
    const { client: reader, inbox: box } = await connectReader(gh, creds);
    open.push(reader);
    await reader.publishAsync(
      creds.mqtt.scans_topic,
      JSON.stringify({ request_id: 'ok-1', credential_value: 'TICKET-1' }),
      { qos: 1 },
    );
    await reader.publishAsync(
      creds.mqtt.scans_topic,
      JSON.stringify({ request_id: 'no-1', credential_value: 'NOT-A-TICKET' }),
      { qos: 1 },
    );
    expect((await box.next((m) => m.payload.request_id === 'no-1')).payload.access_granted).toBe(false);
    expect(await status(creds.reader.id)).toMatchObject({ status: 'online', errors: 0, last_error: null });

    await reader.publishAsync(creds.mqtt.scans_topic, '{"request_id":"bad-1", not json', { qos: 1 });
    expect((await box.next((m) => m.payload.request_id === 'bad-1')).payload.error).toBe('malformed_json');
    await reader.publishAsync(creds.mqtt.scans_topic, JSON.stringify({ request_id: 'bad-2' }), { qos: 1 });
    expect((await box.next((m) => m.payload.request_id === 'bad-2')).payload.error).toBe('validation_failed');
    const after = await status(creds.reader.id);
    expect(after).toMatchObject({
      status: 'online',
      connected_via: 'mqtt',
      errors: 2,
      last_error: 'validation_failed',
    });
    expect(Date.parse(after.last_error_at)).not.toBeNaN();
    // The list and the access point's embedded readers say the same.
    const listed = (await api.get(`${A}/readers?per_page=100`)).body.data.find(
      (r: { id: number }) => r.id === creds.reader.id,
    );
    expect(listed.status.errors).toBe(2);
    expect(
      (await api.get(`${A}/access-points/${gate}`)).body.data.readers.find(
        (r: { id: number }) => r.id === creds.reader.id,
      ).status.errors,
    ).toBe(2);
  });

  it('counts a gateway’s refused scan on the reader it names', async () => {
    const readerId = (await api.get(`${A}/readers?per_page=100`)).body.data.find(
      (r: { identifier: string }) => r.identifier === 'ERR-GW-A',
    ).id as number;
    const issued = await api.post(`${A}/gateways`, { identifier: 'ERR-GW', reader_ids: [readerId] });
    expect(issued.status).toBe(201);
    const gateway = await connect(mqttUrl(gh), { username: 'ERR-GW', password: issued.body.token });
    open.push(gateway);
    const box = inbox(gateway);
    expect(await subscribe(gateway, 'gatehouse/default/default/readers/ERR-GW-A/decisions')).toEqual([1]);
    await gateway.publishAsync(
      'gatehouse/default/default/readers/ERR-GW-A/scans',
      JSON.stringify({ request_id: 'gw-bad', credential_value: '' }),
      { qos: 1 },
    );
    expect((await box.next((m) => m.payload.request_id === 'gw-bad')).payload.error).toBe('validation_failed');
    expect(await status(readerId)).toMatchObject({ errors: 1, last_error: 'validation_failed' });
  });

  it('counts a scan of a reader without an access point as reader_unassigned', async () => {
    const creds = await readerLogin(gh, await gh.token(), A, 'ERR-UNASSIGNED');
    const { client: reader, inbox: box } = await connectReader(gh, creds);
    open.push(reader);
    await reader.publishAsync(
      creds.mqtt.scans_topic,
      JSON.stringify({ request_id: 'u-1', credential_value: 'TICKET-1' }),
      { qos: 1 },
    );
    expect((await box.next((m) => m.payload.request_id === 'u-1')).payload.error).toBe('reader_unassigned');
    expect(await status(creds.reader.id)).toMatchObject({ errors: 1, last_error: 'reader_unassigned' });
  });
});
