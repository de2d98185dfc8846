import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { client, startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { connect, inbox, mqttUrl } from '../helpers/mqtt.js';
import { runCli } from '../helpers/process.js';

// The built CLI run by an operator while the appliance is running on the same data directory:
// another process, which the appliance's bus never hears. The appliance reads what it wrote
// into its decision index within about a second, from the store's change sequence
// (access/external-changes.ts; every entity and deletions: test/access/external-changes.test.ts).

const A = '/api/v1/projects/default/default';
const until = { timeout: 15_000, interval: 100 };

describe('a CLI import while the appliance runs', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-cli-live-'));
  let gh: TestAppliance | undefined;
  afterAll(async () => {
    await gh?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("reaches the running appliance's decisions without a restart", async () => {
    gh = await startAppliance({}, { dataDir });
    const api = client(gh, await gh.token());
    const zone = (await api.post(`${A}/access-zones`, { name: 'Hall' })).body.data.id;
    const gate = (await api.post(`${A}/access-points`, { name: 'Door', access_zone_id: zone, direction: 'both' })).body
      .data.id;
    const scan = async (credential_value: string) =>
      (await api.post(`${A}/access-points/${gate}/scan`, { credential_value })).body;
    expect(await scan('CLI-1')).toMatchObject({ access_granted: false, reason: 'invalid_credential' });

    const file = join(dataDir, 'people.csv');
    writeFileSync(file, 'first_name,last_name,credential_value\nAda,Lovelace,CLI-1\nAlan,Turing,CLI-2\n');
    const imported = await runCli(['attendees', 'import', file, '--project', 'default/default'], {
      GATEHOUSE_DATA_DIR: dataDir,
    });
    expect(imported.code, imported.stderr).toBe(0);

    await expect.poll(async () => (await scan('CLI-1')).access_granted, until).toBe(true);
    expect(await scan('CLI-2')).toMatchObject({
      access_granted: true,
      attendee: { first_name: 'Alan', last_name: 'Turing' },
    });
  });
});

describe('npm run demo while the appliance runs', () => {
  let gh: TestAppliance | undefined;
  afterAll(() => gh?.destroy());

  it('makes the demo venue usable without a restart: a gateway scan at GATE-IN-1 and a reader login by MQTT (the README tour, steps 13 and 12)', async () => {
    gh = await startAppliance({ GATEHOUSE_INCOMING_WEBHOOKS_ALLOW_UNSIGNED: 'true' });
    const api = client(gh, await gh.token());
    const gatewayScan = async (credential_value: string) =>
      gh!.request('POST', '/webhook/v1/access-event', {
        body: { reader_id: 'GATE-IN-1', credential_value, scan_type: 'qr', timestamp: new Date().toISOString() },
      });
    const askLogin = () => gh!.request('POST', `${A}/readers/login`, { body: { reader_identifier: 'GATE-IN-1' } });
    // Before the seed the reader is unknown: the same 202 (docs/security.md, attack 12), and no login is made.
    expect((await askLogin()).status).toBe(202);
    expect((await api.get(`${A}/readers/logins`)).body.data).toEqual([]);

    const seeded = await runCli(['demo', 'seed'], { GATEHOUSE_DATA_DIR: gh.dataDir });
    expect(seeded.code, seeded.stderr).toBe(0);

    // A gateway reports a scan at GATE-IN-1 (unsigned here; step 13 of the README tour signs it).
    await expect.poll(async () => (await gatewayScan('GH-000001')).body?.access_granted, until).toBe(true);
    expect((await gatewayScan('GH-000013')).body).toMatchObject({ access_granted: false, reason: 'blocklisted' });

    // Step 12: the reader asks for a login, staff read the OTP, the reader trades it for its MQTT token and scans.
    expect((await askLogin()).status).toBe(202);
    // The login is made just after the 202 (docs/security.md, attack 12: the answer tells nothing): wait for it.
    const pending = async () =>
      ((await api.get(`${A}/readers/logins`)).body.data as { reader_identifier: string; otp: string }[]).find(
        (l) => l.reader_identifier === 'GATE-IN-1',
      )?.otp;
    await expect.poll(pending, until).toMatch(/^\d{6}$/);
    const otp = (await pending())!;
    const verified = await gh.request('POST', '/api/v1/reader-otp/verify', {
      body: { otp, reader_identifier: 'GATE-IN-1' },
    });
    expect(verified.status, verified.text).toBe(200);
    const reader = await connect(mqttUrl(gh), {
      username: 'GATE-IN-1',
      password: verified.body.data.reader_token,
      clientId: 'gate-in-1',
    });
    const decisions = inbox(reader);
    await reader.subscribeAsync(`gatehouse/default/default/readers/GATE-IN-1/decisions`, { qos: 1 });
    await reader.publishAsync(
      'gatehouse/default/default/readers/GATE-IN-1/scans',
      JSON.stringify({ request_id: 'demo-1', credential_value: 'GH-000002', scan_type: 'qr' }),
      { qos: 1 },
    );
    const decision = await decisions.next((m) => m.payload.request_id === 'demo-1', 10_000);
    expect(decision.payload).toMatchObject({
      access_granted: true,
      access_point_id: verified.body.data.reader.access_point_id,
    });
    await reader.endAsync();
  });
});
