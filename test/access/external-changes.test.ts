import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { closedBy, connect, mqttUrl } from '../helpers/mqtt.js';
import { runCli } from '../helpers/process.js';
import { rawClient, signChannel, wsUrl, type RawClient } from '../helpers/pusher.js';
import { writeVenue } from '../helpers/venue-writer.js';

// Venue changes made by another process while the appliance runs on the same data directory
// (docs/engine.md, "Changes by another process"): the built CLI, and a small tool writing through the venue modules in its
// own process (test/fixtures/venue-writer.ts). Nothing tells the appliance; each change must
// reach its next decisions within about a second. Waits are generous (a busy machine).

const A = '/api/v1/projects/default/default';
const until = { timeout: 15_000, interval: 100 };

describe('venue changes made by another process', () => {
  let gh: TestAppliance;
  let api: ReturnType<typeof client>;
  let dashboard: RawClient;
  const ids: Record<string, number> = {};

  beforeAll(async () => {
    // No zone refuses re-entry (the default): the same credential is let in again and again as the rules change.
    gh = await startAppliance();
    api = client(gh, await gh.token());
    dashboard = await rawClient(wsUrl(gh));
    const channel = 'private-dashboard.project.default.access-points';
    expect((await dashboard.subscribe(channel, signChannel(gh, dashboard.socketId, channel))).event).toBe(
      'pusher_internal:subscription_succeeded',
    );
  });
  afterAll(async () => {
    dashboard?.ws.close();
    await gh?.destroy();
  });

  const write = (...steps: [string, string, ...unknown[]][]) => writeVenue(gh.dataDir, steps);
  /** The decision at an access point over REST: 'granted', the denial reason, or the HTTP error. */
  const outcome = async (pointId: number, credential_value: string) => {
    const res = await api.post(`${A}/access-points/${pointId}/scan`, { credential_value });
    if (res.status !== 200) return `HTTP ${res.status}`;
    return res.body.access_granted ? 'granted' : res.body.reason;
  };
  /** Asks for a reader login as the reader would, and answers the OTP staff then see, or null
   * when no login was made (anonymous login answers 202 either way: docs/security.md, attack 12). */
  const login = async (reader_identifier: string): Promise<string | null> => {
    const asked = await gh.request('POST', `${A}/readers/login`, { body: { reader_identifier } });
    expect(asked.status).toBe(202);
    const logins = (await api.get(`${A}/readers/logins`)).body.data as { reader_identifier: string; otp: string }[];
    return logins.find((l) => l.reader_identifier === reader_identifier)?.otp ?? null;
  };
  const metric = async (name: string) =>
    Number(new RegExp(`^${name} (\\d+)`, 'm').exec((await gh.request('GET', '/metrics')).text)?.[1]);

  it('decides at an access point into a zone another process creates, and announces the access point', async () => {
    const [hall] = await write(['zones', 'create', { name: 'Hall', capacity: null, requires_ticket: false }]);
    const [door] = await write([
      'accessPoints',
      'create',
      { name: 'Hall door', access_zone_id: hall.id, direction: 'in' },
    ]);
    ids.hall = hall.id;
    ids.door = door.id;
    await expect.poll(() => outcome(door.id, 'NOBODY'), until).toBe('invalid_credential');
    const announced = await dashboard.next('AccessPointUpdated', 15_000);
    expect(announced.data).toMatchObject({ id: door.id, name: 'Hall door', access_zone_id: hall.id });
  });

  it('lets a reader another process creates log in', async () => {
    expect(await login('EXT-1')).toBeNull();
    const [reader] = await write(['readers', 'create', { identifier: 'EXT-1', type: 'qr', access_point_id: ids.door }]);
    ids.reader = reader.id;
    await expect.poll(() => login('EXT-1'), until).toMatch(/^\d{6}$/);
  });

  it('lets in by the zones another process gives an attendee type, for attendees the built CLI imports', async () => {
    const [lounge] = await write(['zones', 'create', { name: 'Lounge', capacity: null, requires_ticket: true }]);
    const [loungeDoor] = await write([
      'accessPoints',
      'create',
      { name: 'Lounge door', access_zone_id: lounge.id, direction: 'in' },
    ]);
    const [guest] = await write(['attendeeTypes', 'create', { name: 'Guest', slug: 'guest', zone_ids: [] }]);
    Object.assign(ids, { lounge: lounge.id, loungeDoor: loungeDoor.id, guest: guest.id });
    const file = join(gh.dataDir, 'guests.csv');
    writeFileSync(file, 'first_name,last_name,attendee_type,credential_value\nAda,Lovelace,guest,EXT-C1\n');
    const imported = await runCli(['attendees', 'import', file, '--project', 'default/default'], {
      GATEHOUSE_DATA_DIR: gh.dataDir,
    });
    expect(imported.code, imported.stderr).toBe(0);
    await expect.poll(() => outcome(loungeDoor.id, 'EXT-C1'), until).toBe('not_authorized');

    await write(['attendeeTypes', 'update', guest.id, { zone_ids: [lounge.id] }]);
    await expect.poll(() => outcome(loungeDoor.id, 'EXT-C1'), until).toBe('granted');
  });

  it('keeps to a time restriction another process adds, and lifts it when that process deletes it', async () => {
    // A one-minute window twelve hours away, every day (the project's time zone is UTC).
    const now = new Date();
    const start = (now.getUTCHours() * 60 + now.getUTCMinutes() + 720) % 1440;
    const hhmm = (m: number) =>
      `${String(Math.floor(m / 60) % 24).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;
    const [window] = await write([
      'timeRestrictions',
      'create',
      {
        access_zone_id: ids.lounge,
        attendee_type_id: ids.guest,
        days_of_week: [1, 2, 3, 4, 5, 6, 7],
        start_time: hhmm(start),
        end_time: hhmm((start + 1) % 1440),
      },
    ]);
    await expect.poll(() => outcome(ids.loungeDoor!, 'EXT-C1'), until).toBe('time_restricted');

    await write(['timeRestrictions', 'delete', window.id]);
    await expect.poll(() => outcome(ids.loungeDoor!, 'EXT-C1'), until).toBe('granted');
  });

  it('denies on a blocklist entry another process adds, and lets in again when that process removes it', async () => {
    const ada = (await api.get(`${A}/attendees?search=lovelace`)).body.data[0];
    const [entry] = await write(['blocklist', 'create', { attendee_id: ada.id, reason: 'Seen climbing the rig' }]);
    await expect.poll(() => outcome(ids.loungeDoor!, 'EXT-C1'), until).toBe('blocklisted');

    await write(['blocklist', 'delete', entry.id]);
    await expect.poll(() => outcome(ids.loungeDoor!, 'EXT-C1'), until).toBe('granted');
  });

  it('refuses a credential another process revokes', async () => {
    const ada = (await api.get(`${A}/attendees?search=lovelace`)).body.data[0];
    const [credential] = (await api.get(`${A}/attendees/${ada.id}/credentials`)).body.data;
    await write(['credentials', 'revoke', credential.id]);
    await expect.poll(() => outcome(ids.loungeDoor!, 'EXT-C1'), until).toBe('invalid_credential');
  });

  it('forgets an access point another process deletes, and announces the deletion', async () => {
    await write(['accessPoints', 'delete', ids.door]);
    await expect.poll(() => outcome(ids.door!, 'NOBODY'), until).toBe('HTTP 404');
    expect((await dashboard.next('AccessPointDeleted', 15_000)).data).toEqual({ id: ids.door });
  });

  it('forgets a reader another process deletes, closes its MQTT connection, and knows the new reader that takes its id', async () => {
    const otp = await login('EXT-1');
    expect(otp).toMatch(/^\d{6}$/);
    const verified = await gh.request('POST', '/api/v1/reader-otp/verify', {
      body: { otp, reader_identifier: 'EXT-1' },
    });
    expect(verified.status, verified.text).toBe(200);
    const reader = await connect(mqttUrl(gh), {
      username: 'EXT-1',
      password: verified.body.data.reader_token,
      clientId: 'ext-1',
    });
    const closed = closedBy(reader, 15_000);
    // SQLite gives the highest rowid again: the deletion's tombstone and the new row name one id.
    const [, created] = await write(
      ['readers', 'delete', ids.reader],
      ['readers', 'create', { identifier: 'EXT-2', type: 'qr', access_point_id: ids.loungeDoor }],
    );
    expect(created.id).toBe(ids.reader);
    await expect.poll(() => login('EXT-2'), until).toMatch(/^\d{6}$/);
    // EXT-1's own pending login went with the reader; asking again makes none.
    expect(await login('EXT-1')).toBeNull();
    await closed;
    // The new reader with the old id does not inherit the deleted reader's MQTT token.
    await expect(
      connect(mqttUrl(gh), { username: 'EXT-2', password: verified.body.data.reader_token, clientId: 'ext-2' }),
    ).rejects.toThrow();
  });

  it("reads back only what another process wrote, not the appliance's own writes", async () => {
    const before = await metric('gatehouse_venue_external_rows_total');
    const csv = [
      'first_name,last_name,credential_value',
      ...Array.from({ length: 40 }, (_, i) => `Local,Person${i},LOCAL-${i}`),
    ].join('\n');
    const local = await gh.request('POST', `${A}/attendees/import`, {
      token: await gh.token(),
      rawBody: csv,
      headers: { 'content-type': 'text/csv' },
    });
    expect(local.status, local.text).toBeLessThan(300);
    // A form is nothing the appliance holds: made and deleted by the other process, it is passed over.
    const [form] = await write([
      'forms',
      'create',
      { name: 'Survey', fields: [{ name: 'q', label: 'Q', type: 'text' }] },
    ]);
    await write(['forms', 'delete', form.id]);
    const [annex] = await write(['zones', 'create', { name: 'Annex', capacity: null, requires_ticket: false }]);
    const [annexDoor] = await write([
      'accessPoints',
      'create',
      { name: 'Annex door', access_zone_id: annex.id, direction: 'in' },
    ]);
    await expect.poll(() => outcome(annexDoor.id, 'LOCAL-1'), until).toBe('granted');
    // The zone and the access point; none of the 80 rows the REST import wrote, nor the form.
    await expect.poll(() => metric('gatehouse_venue_external_rows_total'), until).toBe(before + 2);
  });
});
