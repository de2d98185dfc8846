import type { Page } from 'playwright-core';
import type { MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { client, type TestAppliance } from '../helpers/appliance.js';
import { watchedPage } from '../helpers/chromium.js';
import { type ConsoleHarness, DEMO_PROJECT, EXPECTED_4XX, startConsole } from '../helpers/console.js';
import { connect, connectReader, type Inbox, mqttUrl, type ReaderCredentials } from '../helpers/mqtt.js';

// The devices screen (docs/console.md "Devices") in Chromium at tablet width
// against a real appliance with the demo venue: the readers with their state, a reader login
// asked over REST shown with its OTP without a reload, that OTP verified and the reader connected
// over MQTT shown online, its scans moving its last scan and its refused scans its errors, its
// token revoked through the page, a device plugged into the box added (a bad path refused under
// its field) and disabled, a gateway added through the page (a bad identifier refused under its
// field) with its MQTT password shown once and used to connect, the line saying USB HID does not
// work here as REST's meta.hid says, and a read-only account seeing the state but no OTP and no
// edit control.

const A = DEMO_PROJECT;
const READ_ONLY = { email: 'viewer@example.test', password: 'a long enough password' };

describe('the devices screen, in Chromium', () => {
  let ui: ConsoleHarness;
  let gh: TestAppliance;
  let page: Page;
  let api: ReturnType<typeof client>;
  let reader: { client: MqttClient; inbox: Inbox; creds: ReaderCredentials } | undefined;
  const noSideScroll = (p: Page) =>
    p.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  const row = (identifier: string) => page.locator(`[data-testid=reader][data-reader="${identifier}"]`);

  beforeAll(async () => {
    ui = await startConsole();
    ({ gh, page } = ui);
    api = client(gh, await gh.token());
  }, 120_000);

  afterAll(async () => {
    reader?.client.end(true);
    await ui?.close();
  });

  async function scan(credential: string): Promise<{ access_granted?: boolean; error?: string }> {
    const request_id = `devices-${credential}-${Date.now()}`;
    reader!.client.publish(
      reader!.creds.mqtt.scans_topic,
      JSON.stringify({ request_id, credential_value: credential }),
      { qos: 1 },
    );
    return (await reader!.inbox.next((m) => m.payload.request_id === request_id, 5000)).payload;
  }

  it('lists the demo readers, none seen yet, with an empty reader-login panel for the administrator', async () => {
    await ui.open('/devices');
    await expect.poll(() => page.getByTestId('reader').count(), { timeout: 10_000 }).toBe(6);
    expect(await page.getByTestId('readers-online').textContent()).toBe('0 of 6 online');
    expect(await row('GATE-IN-1').getAttribute('data-state')).toBe('unknown');
    expect(await row('GATE-IN-1').getByTestId('reader-state').textContent()).toBe('Not seen yet');
    expect(await row('GATE-IN-1').textContent()).toContain('Main Gate In');
    expect(await row('GATE-IN-1').getByTestId('reader-last-scan').textContent()).toBe('never');
    expect(await page.getByTestId('reader-logins').getByText('No reader is waiting for a login.').isVisible()).toBe(
      true,
    );
    expect(await page.getByText('No gateways in this project.').isVisible()).toBe(true);
    expect(await page.getByText('No readers are plugged into this box.').isVisible()).toBe(true);
    await expect.poll(() => page.getByTestId('live-state').textContent(), { timeout: 10_000 }).toBe('Live');
    await ui.shot('devices');
    expect(await ui.accessibility()).toEqual([]);
  });

  it('shows a reader login asked for over REST with its one-time password, without a reload', async () => {
    const marker = await page.evaluate(() => ((window as unknown as { stayed: number }).stayed = Date.now()));
    const asked = await gh.request('POST', `${A}/readers/login`, { body: { reader_identifier: 'GATE-IN-1' } });
    expect(asked.status).toBe(202);
    const login = page.locator('[data-testid=reader-login][data-reader="GATE-IN-1"]');
    await expect.poll(() => login.count(), { timeout: 10_000 }).toBe(1);
    const otp = (await api.get(`${A}/readers/logins`)).body.data.find(
      (l: { reader_identifier: string }) => l.reader_identifier === 'GATE-IN-1',
    ).otp as string;
    expect(await login.getByTestId('reader-otp').getAttribute('data-otp')).toBe(otp);
    expect((await login.getByTestId('reader-otp').textContent())!.replace(/\s/g, '')).toBe(otp);
    expect(await login.textContent()).toMatch(/expires in (9|10):\d\d/);
    expect(await page.evaluate(() => (window as unknown as { stayed: number }).stayed)).toBe(marker);
    await ui.shot('devices-login');
    expect(await ui.accessibility()).toEqual([]);
  });

  it('shows the reader online once it trades the OTP read off the page and connects over MQTT, and its login gone', async () => {
    const otp = (await page
      .locator('[data-testid=reader-login][data-reader="GATE-IN-1"] [data-testid=reader-otp]')
      .getAttribute('data-otp'))!;
    const verified = await gh.request('POST', '/api/v1/reader-otp/verify', {
      body: { otp, reader_identifier: 'GATE-IN-1' },
    });
    expect(verified.status).toBe(200);
    const creds = verified.body.data as ReaderCredentials;
    reader = { ...(await connectReader(gh, creds)), creds };
    await expect.poll(() => row('GATE-IN-1').getAttribute('data-state'), { timeout: 10_000 }).toBe('online');
    expect(await row('GATE-IN-1').getByTestId('reader-state').textContent()).toBe('Online over MQTT');
    expect(await page.getByTestId('readers-online').textContent()).toBe('1 of 6 online');
    await expect.poll(() => page.getByTestId('reader-login').count(), { timeout: 10_000 }).toBe(0);
  });

  it('moves the reader’s last scan after a scan, and counts its refused scans as errors, without a reload', async () => {
    expect((await scan('GH-000001')).access_granted).toBe(true);
    const lastScan = (await api.get(`${A}/readers/${reader!.creds.reader.id}`)).body.data.status.last_scan as string;
    expect(lastScan).not.toBeNull();
    await expect
      .poll(() => row('GATE-IN-1').getByTestId('reader-last-scan').getAttribute('data-at'), { timeout: 10_000 })
      .toBe(lastScan);
    expect(await row('GATE-IN-1').getByTestId('reader-last-scan').textContent()).not.toBe('never');
    expect(await row('GATE-IN-1').getByTestId('reader-errors').textContent()).toBe('0');
    // A scan without a credential: refused before a decision, counted on the reader.
    const request_id = `devices-bad-${Date.now()}`;
    reader!.client.publish(reader!.creds.mqtt.scans_topic, JSON.stringify({ request_id }), { qos: 1 });
    expect((await reader!.inbox.next((m) => m.payload.request_id === request_id, 5000)).payload.error).toBe(
      'validation_failed',
    );
    // The next scan brings the lists up to date.
    expect((await scan('NOT-A-TICKET')).access_granted).toBe(false);
    await expect.poll(() => row('GATE-IN-1').getByTestId('reader-errors').textContent(), { timeout: 10_000 }).toBe('1');
    expect(await row('GATE-IN-1').getByTestId('reader-last-error').textContent()).toMatch(/^validation_failed, .+/);
    await ui.shot('devices-online');
  });

  it('revokes a reader’s token from the page after asking: the reader is disconnected and shown offline', async () => {
    await row('GATE-IN-1').getByTestId('revoke').click();
    const yes = row('GATE-IN-1').getByTestId('revoke-yes');
    await expect.poll(() => yes.evaluate((el) => el === document.activeElement), { timeout: 10_000 }).toBe(true);
    expect(await row('GATE-IN-1').textContent()).toContain("Revoke GATE-IN-1's token?");
    expect(await ui.accessibility()).toEqual([]);
    await yes.click();
    await expect
      .poll(() => page.getByTestId('revoke-result').textContent(), { timeout: 10_000 })
      .toBe("GATE-IN-1's token was revoked.");
    await expect.poll(() => row('GATE-IN-1').getAttribute('data-state'), { timeout: 10_000 }).toBe('offline');
    expect((await api.get(`${A}/readers/${reader!.creds.reader.id}`)).body.data.status.status).toBe('offline');
    await expect.poll(() => reader!.client.connected, { timeout: 10_000 }).toBe(false);
  });

  it('refuses a plugged-in reader with a bad path under its field, then adds it and disables it', async () => {
    await page.getByTestId('add-bridge-device').click();
    await expect.poll(() => page.evaluate(() => document.activeElement?.id), { timeout: 10_000 }).toBe('bridge-name');
    await page.getByLabel('Name', { exact: true }).fill('Desk scanner');
    await page.getByLabel('Device path').fill('ttyUSB0');
    await page.getByLabel('Acts as reader').fill('PRESS-1');
    await page.getByLabel('Framing').selectOption('line');
    await page.getByTestId('create-bridge-device').click();
    const path = page.getByLabel('Device path');
    await expect.poll(() => path.getAttribute('aria-invalid'), { timeout: 10_000 }).toBe('true');
    expect(await page.locator('#bridge-path-error').textContent()).toMatch(/absolute path/);
    expect(await path.getAttribute('aria-describedby')).toBe('bridge-path-error');
    await expect.poll(() => page.evaluate(() => document.activeElement?.id), { timeout: 10_000 }).toBe('bridge-path');
    expect(await page.getByTestId('bridge-error').getAttribute('role')).toBe('alert');
    await ui.shot('devices-bridge-error');
    expect(await ui.accessibility()).toEqual([]);
    expect((await api.get(`${A}/bridge/devices`)).body.data).toEqual([]);

    await path.fill('/dev/serial/by-id/gatehouse-console-test-absent');
    await page.getByTestId('create-bridge-device').click();
    const device = page.locator('[data-testid=bridge-device][data-device="Desk scanner"]');
    await expect.poll(() => device.count(), { timeout: 10_000 }).toBe(1);
    expect(await device.getAttribute('data-state')).toBe('offline');
    expect(await device.textContent()).toContain('/dev/serial/by-id/gatehouse-console-test-absent');
    const stored = (await api.get(`${A}/bridge/devices`)).body.data;
    expect(stored).toEqual([
      expect.objectContaining({
        name: 'Desk scanner',
        path: '/dev/serial/by-id/gatehouse-console-test-absent',
        reader_identifier: 'PRESS-1',
        framing: 'line',
        enabled: true,
      }),
    ]);

    await device.getByTestId('bridge-toggle').click();
    await expect.poll(() => device.getByTestId('bridge-state').textContent(), { timeout: 10_000 }).toBe('Disabled');
    expect((await api.get(`${A}/bridge/devices/${stored[0].id}`)).body.data.enabled).toBe(false);
    expect(await device.getByTestId('bridge-toggle').textContent()).toMatch(/Enable/);
  });

  it('adds a plugged-in reader by its USB ids instead of a path: a bad id refused under its field, then found by ids', async () => {
    await page.getByTestId('add-bridge-device').click();
    await page.getByLabel('Name', { exact: true }).fill('USB scanner');
    await page.getByTestId('bridge-by-usb').check();
    expect(await page.getByLabel('Device path').count()).toBe(0);
    await page.getByLabel('USB vendor id').fill('0xZZ');
    await page.getByLabel('USB product id').fill('6001');
    await page.getByLabel('Acts as reader').fill('PRESS-1'); // a second device for the same reader (a spare scanner at the press door)
    await page.getByTestId('create-bridge-device').click();
    const vendor = page.getByLabel('USB vendor id');
    await expect.poll(() => vendor.getAttribute('aria-invalid'), { timeout: 10_000 }).toBe('true');
    expect(await page.locator('[id="bridge-match.vendor_id-error"]').textContent()).toMatch(/USB id/);
    await expect
      .poll(() => page.evaluate(() => document.activeElement?.id), { timeout: 10_000 })
      .toBe('bridge-match.vendor_id');
    expect(await ui.accessibility()).toEqual([]);

    await vendor.fill('0x0403');
    await page.getByLabel('Serial number (optional)').fill('A1B2C3');
    await page.getByTestId('create-bridge-device').click();
    const device = page.locator('[data-testid=bridge-device][data-device="USB scanner"]');
    await expect.poll(() => device.count(), { timeout: 10_000 }).toBe(1);
    expect(await device.textContent()).toContain('USB 0403:6001 (A1B2C3)');
    const stored = (await api.get(`${A}/bridge/devices`)).body.data.find(
      (d: { name: string }) => d.name === 'USB scanner',
    );
    expect(stored).toEqual(
      expect.objectContaining({
        path: null,
        match: { vendor_id: '0403', product_id: '6001', serial_number: 'A1B2C3' },
        reader_identifier: 'PRESS-1',
      }),
    );
    expect(await noSideScroll(page)).toBeLessThanOrEqual(0);
  });

  it('shows a gateway and the reader it fronts go online and offline as the gateway reports, without a reload', async () => {
    const fronted = (await api.get(`${A}/readers?per_page=100`)).body.data.find(
      (r: { identifier: string }) => r.identifier === 'GATE-IN-2',
    ).id as number;
    const issued = await api.post(`${A}/gateways`, {
      identifier: 'GW-NORTH',
      name: 'North gateway',
      reader_ids: [fronted],
    });
    expect(issued.status).toBe(201);
    const gateway = await connect(mqttUrl(gh), { username: 'GW-NORTH', password: issued.body.token });
    try {
      const report = {
        gateway_id: 'GW-NORTH',
        status: 'online',
        readers: [{ reader_id: 'GATE-IN-2', status: 'connected', last_scan: new Date().toISOString() }],
      };
      await gateway.publishAsync(issued.body.data.status_topic, JSON.stringify(report), { qos: 1, retain: true });
      const gw = page.locator('[data-testid=gateway][data-gateway="GW-NORTH"]');
      await expect.poll(() => gw.getAttribute('data-state'), { timeout: 10_000 }).toBe('online');
      expect(await gw.textContent()).toContain('North gateway (GW-NORTH)');
      expect(await gw.textContent()).toContain('GATE-IN-2');
      await expect
        .poll(() => row('GATE-IN-2').getByTestId('reader-state').textContent(), { timeout: 10_000 })
        .toBe('Online through its gateway');
      await gateway.publishAsync(issued.body.data.status_topic, 'offline', { qos: 1, retain: true });
      await expect.poll(() => gw.getAttribute('data-state'), { timeout: 10_000 }).toBe('offline');
      await expect.poll(() => row('GATE-IN-2').getAttribute('data-state'), { timeout: 10_000 }).toBe('offline');
    } finally {
      gateway.end(true);
    }
  });

  it('adds a gateway through the page: a bad identifier refused under its field, then its MQTT password shown once, which lets it connect', async () => {
    const gateways = page.getByTestId('gateways');
    await page.getByTestId('add-gateway').click();
    await expect
      .poll(() => page.evaluate(() => document.activeElement?.id), { timeout: 10_000 })
      .toBe('gateway-identifier');
    const identifier = gateways.getByLabel('Identifier (its gateway_id)');
    // Empty: refused under the identifier, nothing made.
    await page.getByTestId('create-gateway').click();
    await expect.poll(() => identifier.getAttribute('aria-invalid'), { timeout: 10_000 }).toBe('true');
    expect(await identifier.getAttribute('aria-describedby')).toBe('gateway-identifier-error');
    expect((await page.locator('#gateway-identifier-error').textContent())!.length).toBeGreaterThan(0);
    await expect
      .poll(() => page.evaluate(() => document.activeElement?.id), { timeout: 10_000 })
      .toBe('gateway-identifier');
    expect(await page.getByTestId('gateway-error').getAttribute('role')).toBe('alert');
    expect(await ui.accessibility()).toEqual([]);
    // Taken: GW-NORTH exists.
    await identifier.fill('GW-NORTH');
    await page.getByTestId('create-gateway').click();
    await expect
      .poll(() => page.locator('#gateway-identifier-error').textContent(), { timeout: 10_000 })
      .toBe('The identifier has already been taken.');
    await ui.shot('devices-gateway-error');
    expect((await api.get(`${A}/gateways`)).body.data.map((g: { identifier: string }) => g.identifier)).toEqual([
      'GW-NORTH',
    ]);

    await identifier.fill('GW-SOUTH');
    await gateways.getByLabel('Name (optional)').fill('South gateway');
    await gateways.getByLabel('BACKSTAGE-1').check();
    await page.getByTestId('create-gateway').click();
    const secret = gateways.getByTestId('secret-once');
    await expect.poll(() => secret.count(), { timeout: 10_000 }).toBe(1);
    expect(await secret.textContent()).toContain('MQTT password of GW-SOUTH (username: GW-SOUTH)');
    await expect.poll(() => secret.evaluate((el) => el === document.activeElement), { timeout: 10_000 }).toBe(true);
    const password = await secret.getByTestId('secret-value').inputValue();
    expect(password.length).toBeGreaterThan(10);
    const gw = page.locator('[data-testid=gateway][data-gateway="GW-SOUTH"]');
    await expect.poll(() => gw.count(), { timeout: 10_000 }).toBe(1);
    expect(await gw.textContent()).toContain('South gateway (GW-SOUTH)');
    expect(await gw.textContent()).toContain('BACKSTAGE-1');
    const stored = (await api.get(`${A}/gateways`)).body.data.find(
      (g: { identifier: string }) => g.identifier === 'GW-SOUTH',
    );
    const backstage = (await api.get(`${A}/readers?per_page=100`)).body.data.find(
      (r: { identifier: string }) => r.identifier === 'BACKSTAGE-1',
    ).id as number;
    expect(stored).toEqual(expect.objectContaining({ name: 'South gateway', reader_ids: [backstage] }));
    expect(JSON.stringify(stored)).not.toContain(password);
    await ui.shot('devices-gateway-password');
    expect(await ui.accessibility()).toEqual([]);

    // Shown once: put away, it is gone, and the add button has the focus.
    await secret.getByTestId('secret-done').click();
    await expect.poll(() => secret.count(), { timeout: 10_000 }).toBe(0);
    await expect
      .poll(() => page.evaluate(() => document.activeElement?.getAttribute('data-testid')), { timeout: 10_000 })
      .toBe('add-gateway');
    expect(await page.locator(`input[value="${password}"]`).count()).toBe(0);
    expect(await page.content()).not.toContain(password);

    // The password read off the page lets the gateway connect, and its report moves the page.
    const gateway = await connect(mqttUrl(gh), { username: 'GW-SOUTH', password });
    try {
      const report = {
        gateway_id: 'GW-SOUTH',
        status: 'online',
        readers: [{ reader_id: 'BACKSTAGE-1', status: 'connected' }],
      };
      await gateway.publishAsync(stored.status_topic, JSON.stringify(report), { qos: 1, retain: true });
      await expect.poll(() => gw.getAttribute('data-state'), { timeout: 10_000 }).toBe('online');
      await gateway.publishAsync(stored.status_topic, 'offline', { qos: 1, retain: true });
      await expect.poll(() => gw.getAttribute('data-state'), { timeout: 10_000 }).toBe('offline');
    } finally {
      gateway.end(true);
    }
    // A wrong password is refused.
    await expect(
      connect(mqttUrl(gh), { username: 'GW-SOUTH', password: `${password}x`, reconnectPeriod: 0 }),
    ).rejects.toThrow();
  });

  it('gives a gateway a new password after asking (the old one refused from then on), then deletes it after asking', async () => {
    const issued = await api.post(`${A}/gateways`, { identifier: 'GW-EAST', reader_ids: [] });
    const oldPassword = issued.body.token as string;
    await page.reload(); // (no socket event announces a new gateway: the list is read on load)
    const gw = page.locator('[data-testid=gateway][data-gateway="GW-EAST"]');
    await expect.poll(() => gw.count(), { timeout: 10_000 }).toBe(1);
    const connected = await connect(mqttUrl(gh), { username: 'GW-EAST', password: oldPassword });

    // Asked first; Cancel changes nothing.
    await gw.getByTestId('gateway-rotate').click();
    const yes = gw.getByTestId('gateway-rotate-yes');
    await expect.poll(() => yes.evaluate((el) => el === document.activeElement), { timeout: 10_000 }).toBe(true);
    expect(await gw.textContent()).toContain('Give GW-EAST a new MQTT password? The old one stops working');
    expect(await ui.accessibility()).toEqual([]);
    await gw.getByRole('button', { name: 'Cancel' }).click();
    expect(await gw.getByTestId('gateway-rotate-yes').count()).toBe(0);
    expect(connected.connected).toBe(true);

    await gw.getByTestId('gateway-rotate').click();
    await gw.getByTestId('gateway-rotate-yes').click();
    const secret = page.getByTestId('gateways').getByTestId('secret-once');
    await expect.poll(() => secret.count(), { timeout: 10_000 }).toBe(1);
    expect(await secret.textContent()).toContain('MQTT password of GW-EAST (username: GW-EAST)');
    const newPassword = await secret.getByTestId('secret-value').inputValue();
    expect(newPassword).not.toBe(oldPassword);
    await expect.poll(() => connected.connected, { timeout: 10_000 }).toBe(false); // its connections closed
    connected.end(true);
    await expect(
      connect(mqttUrl(gh), { username: 'GW-EAST', password: oldPassword, reconnectPeriod: 0 }),
    ).rejects.toThrow();
    (await connect(mqttUrl(gh), { username: 'GW-EAST', password: newPassword })).end(true);
    await secret.getByTestId('secret-done').click();

    await gw.getByTestId('gateway-delete').click();
    const del = gw.getByTestId('gateway-delete-yes');
    await expect.poll(() => del.evaluate((el) => el === document.activeElement), { timeout: 10_000 }).toBe(true);
    expect(await gw.textContent()).toContain('Delete GW-EAST? Its password stops working');
    await del.click();
    await expect
      .poll(() => page.getByTestId('gateway-result').textContent(), { timeout: 10_000 })
      .toBe('GW-EAST was deleted.');
    await expect
      .poll(() => page.evaluate(() => document.activeElement?.getAttribute('data-testid')), { timeout: 10_000 })
      .toBe('gateway-result');
    expect(await gw.count()).toBe(0);
    expect((await api.get(`${A}/gateways`)).body.data.map((g: { identifier: string }) => g.identifier)).not.toContain(
      'GW-EAST',
    );
    await expect(
      connect(mqttUrl(gh), { username: 'GW-EAST', password: newPassword, reconnectPeriod: 0 }),
    ).rejects.toThrow();
    expect(await noSideScroll(page)).toBeLessThanOrEqual(0);
  });

  it('says in words when USB HID cannot work on this box, as REST’s meta.hid reports it', async () => {
    const line = page.getByTestId('hid-unavailable');
    const agrees = async () => {
      const hid = (await api.get(`${A}/bridge/devices`)).body.meta.hid as { available: boolean; reason: string | null };
      expect(typeof hid.available).toBe('boolean');
      await expect.poll(() => page.getByTestId('reader').count(), { timeout: 10_000 }).toBe(6);
      if (hid.available) return expect.poll(() => line.count(), { timeout: 10_000 }).toBe(0);
      await expect.poll(() => line.count(), { timeout: 10_000 }).toBe(1);
      expect(await line.textContent()).toContain('USB HID readers cannot work on this box');
      if (hid.reason) expect(await line.textContent()).toContain(hid.reason);
      expect(await line.isVisible()).toBe(true);
    };
    // As this box reports it.
    await agrees();
    // And the other way round: the bridge's HID status answered otherwise, the page read again.
    const runtime = gh.app.deps.bridge.runtime;
    const real = runtime.hidStatus();
    const stub = (
      real.available
        ? { available: false, reason: 'node-hid could not load (test)' }
        : { available: true, reason: null }
    ) as ReturnType<typeof runtime.hidStatus>;
    const spy = vi.spyOn(runtime, 'hidStatus').mockReturnValue(stub);
    try {
      await page.reload();
      await agrees();
      if (!stub.available) {
        expect(await line.textContent()).toContain('node-hid could not load (test)');
        await ui.shot('devices-hid-unavailable');
        expect(await ui.accessibility()).toEqual([]);
      }
    } finally {
      spy.mockRestore();
    }
    await page.reload();
    await agrees();
  });

  it('fits a tablet (no horizontal scrolling at 768 px) and passes the accessibility check with every panel filled', async () => {
    expect(await noSideScroll(page)).toBeLessThanOrEqual(0);
    await ui.shot('devices-filled');
    expect(await ui.accessibility()).toEqual([]);
  });

  it('shows a read-only account the devices and their state, but no one-time password and no edit control', async () => {
    const made = await api.post('/api/v1/users', {
      name: 'Viewer',
      email: READ_ONLY.email,
      password: READ_ONLY.password,
    });
    expect(made.status).toBe(201);
    expect((await api.post(`/api/v1/users/${made.body.data.id}/teams`, { team_slug: 'default' })).status).toBeLessThan(
      300,
    );
    expect((await api.put(`/api/v1/users/${made.body.data.id}`, { read_only: true })).status).toBe(200);
    expect((await gh.request('POST', `${A}/readers/login`, { body: { reader_identifier: 'VIP-1' } })).status).toBe(202);
    await expect.poll(async () => (await api.get(`${A}/readers/logins`)).body.data.length, { timeout: 10_000 }).toBe(1);

    const context = await ui.browser.newContext({ viewport: { width: 768, height: 1024 } });
    const { page: viewer, errors } = await watchedPage(context);
    await viewer.goto(`${gh.url}/devices`);
    await viewer.getByLabel('Email').fill(READ_ONLY.email);
    await viewer.getByLabel('Password').fill(READ_ONLY.password);
    await viewer.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => new URL(viewer.url()).pathname, { timeout: 10_000 }).toBe('/devices');
    await expect.poll(() => viewer.getByTestId('reader').count(), { timeout: 10_000 }).toBe(6);
    await expect.poll(() => viewer.getByTestId('bridge-device').count(), { timeout: 10_000 }).toBe(2);
    expect(await viewer.getByTestId('readers-online').textContent()).toMatch(/of 6 online/);
    expect(await viewer.getByTestId('reader-logins').count()).toBe(0);
    expect(await viewer.getByTestId('reader-otp').count()).toBe(0);
    expect(await viewer.locator('main button, main form, main input, main select').count()).toBe(0);
    await expect.poll(() => viewer.getByTestId('gateway').count(), { timeout: 10_000 }).toBe(2);
    expect(await viewer.getByTestId('add-gateway').count()).toBe(0);
    expect(await viewer.getByTestId('hid-unavailable').count()).toBe(
      (await api.get(`${A}/bridge/devices`)).body.meta.hid.available ? 0 : 1,
    );
    expect(await noSideScroll(viewer)).toBeLessThanOrEqual(0);
    await viewer.screenshot({ path: 'artifacts/console/devices-read-only.png', fullPage: true });
    const { AxeBuilder } = await import('@axe-core/playwright');
    const { violations } = await new AxeBuilder({ page: viewer }).analyze();
    expect(violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => v.id)).toEqual([]);
    expect(errors.filter((e) => !EXPECTED_4XX.test(e))).toEqual([]);
    await context.close();
  });

  it('logged no console errors (Chromium’s own line for each 4xx the page handled aside)', () => {
    expect(ui.unexpectedErrors()).toEqual([]);
  });
});
