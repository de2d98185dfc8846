import type { MqttClient } from 'mqtt';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_EMAIL, ADMIN_PASSWORD, client, type TestAppliance } from '../helpers/appliance.js';
import { type ConsoleHarness, DEMO_PROJECT, startConsole } from '../helpers/console.js';
import { connectReader, type Inbox, readerLogin } from '../helpers/mqtt.js';

// The staff console (docs/console.md) as a venue's staff meet it: the
// appliance serving dist/console (built by the test global setup) with the demo venue, Debian's
// Chromium at tablet width. Sign in by typing, a wrong password refused, the live doors fed by a
// reader's MQTT scans without a reload (a grant with the attendee and gate, the zone's bar moved;
// a denial with its reason), a session ended on the appliance and one whose cookies are gone both
// back to sign-in and then to the page the user was on, sign out. Screenshots in artifacts/console/.

const A = DEMO_PROJECT;

describe('the staff console, in Chromium', () => {
  let ui: ConsoleHarness;
  let gh: TestAppliance;
  let page: Page;
  let reader: { client: MqttClient; inbox: Inbox; scansTopic: string };

  beforeAll(async () => {
    ui = await startConsole();
    ({ gh, page } = ui);
    const token = await gh.token();
    const creds = await readerLogin(gh, token, A, 'BACKSTAGE-1');
    reader = { ...(await connectReader(gh, creds)), scansTopic: creds.mqtt.scans_topic };
  }, 120_000);

  afterAll(async () => {
    reader?.client.end(true);
    await ui?.close();
  });

  const path = () => ui.path();
  const shot = (name: string) => ui.shot(name);
  const accessibility = () => ui.accessibility();
  const signIn = (password = ADMIN_PASSWORD, email = ADMIN_EMAIL) => ui.signIn(email, password);
  async function scan(
    credential: string,
    scanType = 'rfid',
  ): Promise<{ access_granted: boolean; reason?: string; reason_detail?: string | null }> {
    const request_id = `console-${credential}-${Date.now()}`;
    reader.client.publish(
      reader.scansTopic,
      JSON.stringify({
        request_id,
        credential_value: credential,
        scan_type: scanType,
        timestamp: new Date().toISOString(),
      }),
      { qos: 1 },
    );
    return (await reader.inbox.next((m) => m.payload.request_id === request_id, 5000)).payload;
  }
  const zone = (name: string) => page.locator(`[data-testid=zone][data-zone="${name}"]`);
  const firstRow = () => page.getByTestId('feed-row').first();

  it('sends a visitor to sign-in, remembering the page asked for; the form is labelled and accessible', async () => {
    await page.goto(`${gh.url}/doors?from=bookmark`);
    await expect.poll(path).toBe('/signin?redirect=/doors?from=bookmark');
    await expect.poll(() => page.getByRole('heading', { name: 'Sign in' }).isVisible()).toBe(true);
    await expect.poll(() => page.evaluate(() => document.activeElement?.id)).toBe('email');
    await shot('signin');
    expect(await accessibility()).toEqual([]);
  });

  it('refuses a wrong password with the appliance’s message and stays on sign-in', async () => {
    await signIn('not the password');
    const alert = page.getByTestId('signin-error');
    await expect.poll(() => alert.textContent()).toBe('Unable to authenticate');
    expect(await alert.getAttribute('role')).toBe('alert');
    expect(path()).toMatch(/^\/signin/);
    await shot('signin-error');
  });

  it('shows a field error of a 422 under its field, and the 429 of an account locked after failed logins', async () => {
    await signIn('whatever', `${'x'.repeat(260)}@example.test`);
    await expect.poll(() => page.getByTestId('signin-error').textContent()).toMatch(/email/i);
    expect(await page.getByLabel('Email').getAttribute('aria-invalid')).toBe('true');
    expect(await page.locator('#email-error').textContent()).toBeTruthy();
    // docs/auth.md: 5 failures a minute per account, then 429 even with the right password.
    for (let i = 0; i < 5; i++) {
      await signIn(`wrong ${i}`, 'locked@example.test');
      await expect.poll(() => page.getByTestId('signin-error').textContent()).toBe('Unable to authenticate');
      await page.getByLabel('Password').fill('');
    }
    await signIn('wrong again', 'locked@example.test');
    await expect
      .poll(() => page.getByTestId('signin-error').textContent())
      .toMatch(/^Too many failed logins for this account: try again in \d+ s\.$/);
    expect(await page.getByLabel('Email').getAttribute('aria-invalid')).toBeNull();
  });

  it('signs in by typing into the form and lands on the page asked for, the live doors seeded from the appliance', async () => {
    await signIn();
    await expect.poll(path, { timeout: 10_000 }).toBe('/doors?from=bookmark');
    await expect
      .poll(() => zone('Arena').getByTestId('zone-count').textContent(), { timeout: 10_000 })
      .toBe('0 / 5000');
    expect(await zone('Backstage').getByTestId('zone-count').textContent()).toBe('0 / 60');
    await expect.poll(() => page.getByTestId('live-state').textContent(), { timeout: 10_000 }).toBe('Live');
    expect(await page.getByText('No access events yet.').isVisible()).toBe(true);
  });

  it('shows a scan published over MQTT in the feed and moves the zone’s bar, without a reload', async () => {
    const marker = await page.evaluate(() => ((window as unknown as { stayed: number }).stayed = Date.now()));
    const answer = await scan('GH-000008');
    expect(answer.access_granted).toBe(true);
    await expect.poll(() => page.getByTestId('feed-row').count(), { timeout: 10_000 }).toBe(1);
    expect(await firstRow().getAttribute('data-result')).toBe('granted');
    expect(await firstRow().getByTestId('feed-gate').textContent()).toBe('Backstage Door');
    expect(await firstRow().getByTestId('feed-who').textContent()).toMatch(/^\S+ \S+$/); // the attendee's name from the event
    expect(await firstRow().textContent()).toContain('Granted');
    await expect.poll(() => zone('Backstage').getByTestId('zone-count').textContent()).toBe('1 / 60');
    const bar = zone('Backstage').getByTestId('zone-bar');
    expect(await bar.getAttribute('aria-valuenow')).toBe('1');
    expect(await bar.locator('.fill').getAttribute('data-percent')).toBe('1.7');
    expect(await page.evaluate(() => (window as unknown as { stayed: number }).stayed)).toBe(marker); // same page: no reload
  });

  it('shows a zone created, renamed or deleted meanwhile on the live doors, without a reload', async () => {
    const marker = await page.evaluate(() => ((window as unknown as { stayed: number }).stayed = Date.now()));
    const admin = client(gh, await gh.token());
    const made = (await admin.post(`${A}/access-zones`, { name: 'Rooftop', capacity: 25 })).body.data;
    await expect.poll(() => zone('Rooftop').count(), { timeout: 10_000 }).toBe(1);
    expect(await zone('Rooftop').getByTestId('zone-count').textContent()).toBe('0 / 25');
    expect((await admin.put(`${A}/access-zones/${made.id}`, { name: 'Sky bar', capacity: 30 })).status).toBe(200);
    await expect
      .poll(() => zone('Sky bar').getByTestId('zone-count').textContent(), { timeout: 10_000 })
      .toBe('0 / 30');
    expect(await zone('Rooftop').count()).toBe(0);
    // A known zone keeps its count through a change of its capacity.
    const backstage = (await admin.get(`${A}/access-zones?per_page=100`)).body.data.find(
      (z: { name: string }) => z.name === 'Backstage',
    ).id as number;
    expect((await admin.put(`${A}/access-zones/${backstage}`, { capacity: 80 })).status).toBe(200);
    await expect
      .poll(() => zone('Backstage').getByTestId('zone-count').textContent(), { timeout: 10_000 })
      .toBe('1 / 80');
    expect((await admin.put(`${A}/access-zones/${backstage}`, { capacity: 60 })).status).toBe(200);
    await expect
      .poll(() => zone('Backstage').getByTestId('zone-count').textContent(), { timeout: 10_000 })
      .toBe('1 / 60');
    expect((await admin.del(`${A}/access-zones/${made.id}`)).status).toBe(204);
    await expect.poll(() => zone('Sky bar').count(), { timeout: 10_000 }).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { stayed: number }).stayed)).toBe(marker); // same page: no reload
  });

  it('shows a denial with its reason', async () => {
    // A general-admission ticket at the backstage door.
    const answer = await scan('GH-000001');
    expect(answer).toMatchObject({ access_granted: false, reason: 'not_authorized' });
    await expect.poll(() => firstRow().getAttribute('data-result'), { timeout: 10_000 }).toBe('denied');
    expect(await firstRow().getByTestId('feed-reason').textContent()).toBe('Not allowed in this zone');
    expect(await firstRow().getByTestId('feed-who').textContent()).toBe('GH-000001');
    expect(await firstRow().getByTestId('feed-gate').textContent()).toBe('Backstage Door');
    expect(await zone('Backstage').getByTestId('zone-count').textContent()).toBe('1 / 60');
  });

  it('makes a spike of denials at one gate stand out: its rows highlighted and an alert line', async () => {
    expect(await page.getByTestId('spike-alert').count()).toBe(0);
    for (let i = 1; i <= 4; i++) expect((await scan(`NOT-A-TICKET-${i}`)).reason).toBe('invalid_credential');
    await expect
      .poll(() => page.getByTestId('spike-alert').allTextContents(), { timeout: 10_000 })
      .toEqual(['5 denials at Backstage Door in the last 60 s']);
    expect(await page.locator('[data-testid=feed-row].spike').count()).toBe(5);
    expect(await page.locator('[data-testid=feed-row][data-result=granted].spike').count()).toBe(0);
    expect(await firstRow().getByTestId('feed-reason').textContent()).toBe('Unknown ticket');
  });

  it('tells door staff why in words: a holder already inside a zone that refuses re-entry, a scan at an inactive door', async () => {
    const admin = client(gh, await gh.token());
    const backstage = (await admin.get(`${A}/access-zones?per_page=100`)).body.data.find(
      (z: { name: string }) => z.name === 'Backstage',
    ).id as number;
    const door = (await admin.get(`${A}/access-points?per_page=100`)).body.data.find(
      (p: { name: string }) => p.name === 'Backstage Door',
    ).id as number;
    // GH-000008 is inside Backstage since the first scan; the zone now refuses re-entry.
    expect((await admin.put(`${A}/access-zones/${backstage}`, { anti_passback: true })).status).toBe(200);
    expect(await scan('GH-000008')).toMatchObject({
      access_granted: false,
      reason: 'not_authorized',
      reason_detail: 'already_inside',
    });
    await expect
      .poll(() => firstRow().getByTestId('feed-reason').textContent(), { timeout: 10_000 })
      .toBe('Already inside');
    expect(await firstRow().getByTestId('feed-who').textContent()).toBe('GH-000008');
    expect((await admin.put(`${A}/access-zones/${backstage}`, { anti_passback: false })).status).toBe(200);
    // The door switched off: the scan is still decided, recorded and shown, with no zone.
    expect((await admin.put(`${A}/access-points/${door}`, { is_active: false })).status).toBe(200);
    expect(await scan('GH-000008')).toMatchObject({
      access_granted: false,
      reason: 'not_authorized',
      reason_detail: 'access_point_inactive',
    });
    await expect
      .poll(() => firstRow().getByTestId('feed-reason').textContent(), { timeout: 10_000 })
      .toBe('Door inactive');
    expect(await firstRow().getByTestId('feed-gate').textContent()).toBe('Backstage Door');
    expect((await admin.put(`${A}/access-points/${door}`, { is_active: true })).status).toBe(200);
    expect(await zone('Backstage').getByTestId('zone-count').textContent()).toBe('1 / 60');
  });

  it('fits a tablet (no horizontal scrolling at 768 px), shows keyboard focus, and passes the accessibility check', async () => {
    expect(
      await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth),
    ).toBeLessThanOrEqual(0);
    await page.keyboard.press('Tab');
    const focus = await page.evaluate(() => {
      const el = document.activeElement as HTMLElement;
      return { tag: el.tagName, outline: getComputedStyle(el).outlineStyle, width: getComputedStyle(el).outlineWidth };
    });
    expect(focus.tag).not.toBe('BODY');
    expect(focus.outline).not.toBe('none');
    await shot('live-doors');
    expect(await accessibility()).toEqual([]);
  });

  it('a reload keeps the session and the feed is seeded from the access-event log', async () => {
    await page.reload();
    await expect.poll(() => page.getByTestId('feed-row').count(), { timeout: 10_000 }).toBe(8);
    expect(await firstRow().getAttribute('data-result')).toBe('denied');
    // The log's denials say why in the same words as the socket's.
    expect(await page.getByTestId('feed-reason').nth(0).textContent()).toBe('Door inactive');
    expect(await page.getByTestId('feed-reason').nth(1).textContent()).toBe('Already inside');
    // The log's grant names its attendee by id: the console looks the name up.
    await expect
      .poll(() => page.locator('[data-testid=feed-row][data-result=granted]').getByTestId('feed-who').textContent())
      .toMatch(/^\S+ \S+$/);
  });

  it('a session logged out on the appliance goes back to sign-in, then to the page the user was on', async () => {
    // The same session ended from elsewhere: the appliance closes the page's socket with 4009.
    const cookies = await page.context().cookies();
    const cookie = cookies.map((c) => `${c.name}=${c.value}`).join('; ');
    const xsrf = decodeURIComponent(cookies.find((c) => c.name === 'XSRF-TOKEN')!.value);
    const out = await gh.request('DELETE', '/api/v1/auth/session', { headers: { cookie, 'x-xsrf-token': xsrf } });
    expect(out.status).toBe(204);
    await expect.poll(path, { timeout: 10_000 }).toBe('/signin?redirect=/doors?from=bookmark');
    expect(await page.getByTestId('session-ended').isVisible()).toBe(true);
    await shot('session-ended');
    await signIn();
    await expect.poll(path, { timeout: 10_000 }).toBe('/doors?from=bookmark');
    await expect.poll(() => page.getByTestId('feed-row').count(), { timeout: 10_000 }).toBe(8);
  });

  it('a session whose cookies are gone (expired) is found at the next load: sign-in, then back', async () => {
    await page.context().clearCookies();
    await page.goto(`${gh.url}/doors?from=expired`);
    await expect.poll(path, { timeout: 10_000 }).toBe('/signin?redirect=/doors?from=expired');
    await signIn();
    await expect.poll(path, { timeout: 10_000 }).toBe('/doors?from=expired');
    await expect.poll(() => page.getByTestId('live-state').textContent(), { timeout: 10_000 }).toBe('Live');
  });

  it('offers a project picker when the user reaches several projects, and follows the one chosen', async () => {
    const admin = client(gh, await gh.token());
    expect(
      (await admin.post('/api/v1/projects', { name: 'Side Stage', slug: 'side-stage', timezone: 'UTC' })).status,
    ).toBe(201);
    await page.reload();
    const picker = page.getByLabel('Project');
    await expect.poll(() => picker.isVisible(), { timeout: 10_000 }).toBe(true);
    await picker.selectOption({ label: 'Side Stage' });
    await expect
      .poll(() => page.getByText('No access zones in this project.').isVisible(), { timeout: 10_000 })
      .toBe(true);
    expect(await page.getByTestId('feed-row').count()).toBe(0);
    await expect.poll(() => page.getByTestId('live-state').textContent(), { timeout: 10_000 }).toBe('Live');
    await shot('project-picker');
    await picker.selectOption({ label: 'Default project' });
    await expect.poll(() => page.getByTestId('feed-row').count(), { timeout: 10_000 }).toBe(8);
  });

  it('answers a path it does not know with its not-found page and a way back', async () => {
    await page.goto(`${gh.url}/no-such-screen`);
    await expect
      .poll(() => page.getByRole('heading', { name: 'Page not found' }).isVisible(), { timeout: 10_000 })
      .toBe(true);
    await shot('not-found');
    expect(await accessibility()).toEqual([]);
    await page.getByRole('link', { name: 'Back to the live doors' }).click();
    await expect.poll(path).toBe('/doors');
  });

  it('signs out: back to sign-in, and the console asks for it again', async () => {
    await page.getByTestId('sign-out').click();
    await expect.poll(path).toBe('/signin');
    await page.goto(`${gh.url}/doors`);
    await expect.poll(path).toBe('/signin?redirect=/doors');
    expect((await client(gh, await gh.token()).get('/api/v1/me')).status).toBe(200); // the appliance itself is fine
  });

  it('logged no console errors (Chromium’s own line for each 401, 419, 422 or 429 the page handled aside)', () => {
    expect(ui.unexpectedErrors()).toEqual([]);
  });
});
