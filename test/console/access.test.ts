import type { MqttClient } from 'mqtt';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { client, startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { watchedPage } from '../helpers/chromium.js';
import { type ConsoleHarness, DEMO_PROJECT, EXPECTED_4XX, startConsole } from '../helpers/console.js';
import { connectReader, type Inbox, readerLogin } from '../helpers/mqtt.js';
import { runCli } from '../helpers/process.js';

// The console's Access screen (docs/console.md "Access") against a real
// appliance with the demo venue, in Chromium at tablet width: an attendee found by name with their
// credential, the credential revoked through the page and then refused at a reader over MQTT, a
// credential blocklisted and taken off again (checked over REST), a zone refused with its 422 under
// the field and then created, an access point renamed, a reader deleted after its confirmation, and
// a read-only account that sees the same data without a single edit control.

const A = DEMO_PROJECT;

describe('the console’s Access screen', () => {
  let ui: ConsoleHarness;
  let gh: TestAppliance;
  let page: Page;
  let admin: ReturnType<typeof client>;
  let reader: { client: MqttClient; inbox: Inbox; scansTopic: string };

  beforeAll(async () => {
    ui = await startConsole();
    ({ gh, page } = ui);
    const token = await gh.token();
    admin = client(gh, token);
    const creds = await readerLogin(gh, token, A, 'GATE-IN-1');
    reader = { ...(await connectReader(gh, creds)), scansTopic: creds.mqtt.scans_topic };
  }, 120_000);

  afterAll(async () => {
    reader?.client.end(true);
    await ui?.close();
  });

  async function scan(credential: string): Promise<{ access_granted: boolean; reason?: string }> {
    const request_id = `access-${credential}-${Date.now()}-${Math.random()}`;
    reader.client.publish(
      reader.scansTopic,
      JSON.stringify({
        request_id,
        credential_value: credential,
        scan_type: 'qr',
        timestamp: new Date().toISOString(),
      }),
      { qos: 1 },
    );
    return (await reader.inbox.next((m) => m.payload.request_id === request_id, 5000)).payload;
  }
  const attendees = () => page.getByTestId('attendee');
  const credential = (value: string) => page.locator(`[data-testid=credential][data-value="${value}"]`);
  const row = (table: string, name: string) => page.locator(`[data-testid=${table}-row][data-name="${name}"]`);
  const noSideScroll = () =>
    page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth);

  async function search(text: string) {
    await page.getByLabel('Name, email or ticket id').fill(text);
    await page.getByRole('button', { name: 'Search', exact: true }).click();
  }

  it('shows the venue: zones, access points, readers and the blocklist, accessible and without sideways scrolling', async () => {
    await ui.open('/access');
    await expect.poll(() => page.getByTestId('zones-row').count(), { timeout: 10_000 }).toBe(4);
    expect(await page.getByTestId('points-row').count()).toBe(5);
    expect(await page.getByTestId('readers-row').count()).toBe(6);
    expect(await row('zones', 'Backstage').textContent()).toContain('60');
    // The demo's blocklisted attendee, named by a lookup.
    await expect
      .poll(() => page.getByTestId('blocklist-entry').first().textContent())
      .toMatch(/Attendee \S+ \S+.*lighting rig/);
    expect(await page.getByTestId('read-only').count()).toBe(0);
    expect(await page.getByTestId('cloud-managed').count()).toBe(0);
    expect(await noSideScroll()).toBe(true);
    await ui.shot('access');
    expect(await ui.accessibility()).toEqual([]);
  });

  it('finds attendees by name a page at a time and shows a credential of theirs', async () => {
    // The demo names repeat every 400 attendees: 13 are called Ada Schmidt (DEMO-00021, 421, … 4821).
    await search('Ada Schmidt');
    await expect.poll(() => attendees().count(), { timeout: 10_000 }).toBe(10);
    expect(await attendees().getByTestId('attendee-name').allTextContents()).toEqual(Array(10).fill('Ada Schmidt'));
    await page.getByTestId('page-next').click();
    await expect.poll(() => attendees().count()).toBe(3);
    // 13 found, 10 a page: the last page says so and has no next.
    expect(await page.getByTestId('page-number').textContent()).toBe('Page 2 of 2');
    expect(await page.getByTestId('page-next').isDisabled()).toBe(true);
    await page.getByTestId('page-prev').click();
    await expect.poll(() => page.getByTestId('page-number').textContent()).toBe('Page 1 of 2');
    const first = attendees().first();
    expect(await first.textContent()).toContain('DEMO-00021');
    await first.getByTestId('toggle-credentials').click();
    await expect.poll(() => credential('GH-000021').isVisible()).toBe(true);
    expect(await first.getByTestId('toggle-credentials').getAttribute('aria-expanded')).toBe('true');
    expect(await credential('GH-000021').getByTestId('credential-status').textContent()).toBe('Active');
    expect(await noSideScroll()).toBe(true);
    await ui.shot('access-search');
    expect(await ui.accessibility()).toEqual([]);
  });

  it('revokes a credential after a confirmation; a reader then refuses it', async () => {
    expect((await scan('GH-000021')).access_granted).toBe(true);
    await credential('GH-000021').getByTestId('revoke').click();
    expect(await credential('GH-000021').textContent()).toContain('Revoke GH-000021? It stops opening doors at once.');
    expect(await ui.accessibility()).toEqual([]);
    await credential('GH-000021').getByTestId('revoke-confirm').click();
    await expect.poll(() => credential('GH-000021').getByTestId('credential-status').textContent()).toBe('Revoked');
    expect(await credential('GH-000021').getByTestId('revoke').count()).toBe(0);
    const answer = await scan('GH-000021');
    expect(answer.access_granted).toBe(false);
    const attendeeId = Number(await attendees().first().getAttribute('data-attendee'));
    const listed = await admin.get(`${A}/attendees/${attendeeId}/credentials`);
    expect(listed.body.data).toEqual([expect.objectContaining({ value: 'GH-000021', status: 'revoked' })]);
  });

  it('adds a credential to the blocklist (a reason is required: its 422 under the field) and takes it off again', async () => {
    const second = attendees().nth(1);
    expect(await second.textContent()).toContain('DEMO-00421');
    await second.getByTestId('toggle-credentials').click();
    const cred = credential('GH-000421');
    await expect.poll(() => cred.isVisible()).toBe(true);
    const id = Number(await cred.getAttribute('data-credential'));
    await cred.getByTestId('credential-block').click();
    const reason = cred.getByLabel('Reason');
    await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute('name'))).toBe('reason');
    await cred.getByTestId('block-submit').click();
    await expect.poll(() => cred.getByTestId('block-reason-error').textContent()).toBeTruthy();
    expect(await reason.getAttribute('aria-invalid')).toBe('true');
    await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute('name'))).toBe('reason');
    await ui.shot('access-blocklist-error');
    await reason.fill('Passed the ticket over the fence');
    await cred.getByTestId('block-submit').click();
    await expect.poll(() => cred.getByTestId('credential-blocked').isVisible()).toBe(true);
    const entries = (await admin.get(`${A}/blocklist`)).body.data as {
      id: number;
      credential_id: number | null;
      reason: string;
    }[];
    expect(entries.filter((e) => e.credential_id === id)).toEqual([
      expect.objectContaining({ reason: 'Passed the ticket over the fence' }),
    ]);
    expect(await scan('GH-000421')).toMatchObject({ access_granted: false, reason: 'blocklisted' });
    // The blocklist panel names it by its value.
    await expect
      .poll(() => page.locator(`[data-testid=blocklist-entry][data-credential="${id}"]`).textContent())
      .toContain('GH-000421');
    expect(await ui.accessibility()).toEqual([]);

    await cred.getByTestId('credential-unblock').click();
    await expect.poll(() => cred.getByTestId('credential-blocked').count()).toBe(0);
    expect(
      ((await admin.get(`${A}/blocklist`)).body.data as { credential_id: number | null }[]).filter(
        (e) => e.credential_id === id,
      ),
    ).toEqual([]);
    expect((await scan('GH-000421')).access_granted).toBe(true);
  });

  it('refuses a zone without a name with the appliance’s error under the field, then creates a good one', async () => {
    const form = page.getByTestId('zones-create');
    await form.getByLabel('Capacity (blank: no limit)').fill('25');
    await form.getByRole('button', { name: 'Create' }).click();
    const name = form.getByLabel('Name');
    await expect.poll(() => name.getAttribute('aria-invalid')).toBe('true');
    expect(await page.getByTestId('zones-new-name-error').textContent()).toBeTruthy();
    expect(await name.getAttribute('aria-describedby')).toBe('zones-new-name-error');
    await expect.poll(() => page.evaluate(() => document.activeElement?.id)).toBe('zones-new-name');
    await ui.shot('access-zone-error');
    expect(await ui.accessibility()).toEqual([]);
    await name.fill('Gallery');
    await form.getByLabel('Ticket required').check();
    await form.getByLabel('Refuse re-entry (anti-passback)').check();
    await form.getByRole('button', { name: 'Create' }).click();
    await expect.poll(() => row('zones', 'Gallery').count()).toBe(1);
    expect(await name.inputValue()).toBe(''); // the form is ready for the next one
    expect(await name.getAttribute('aria-invalid')).toBeNull();
    const zones = (await admin.get(`${A}/access-zones?per_page=100`)).body.data as {
      name: string;
      capacity: number | null;
      requires_ticket: boolean;
      anti_passback: boolean;
    }[];
    expect(zones.find((z) => z.name === 'Gallery')).toMatchObject({
      capacity: 25,
      requires_ticket: true,
      anti_passback: true,
    });
    expect(zones.find((z) => z.name === 'Arena')).toMatchObject({ anti_passback: false }); // the demo's: off unless asked
    expect(await row('zones', 'Gallery').textContent()).toMatch(/Yes.*Yes/);
  });

  it('renames an access point in place', async () => {
    await row('points', 'Press Entrance').getByTestId('points-edit').click();
    const editing = page.getByTestId('points').locator('form[data-form^="edit-"]');
    const name = editing.getByLabel('Name');
    await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute('name'))).toBe('name');
    expect(await name.inputValue()).toBe('Press Entrance');
    await name.fill('Press Gate');
    await editing.getByRole('button', { name: 'Save' }).click();
    await expect.poll(() => row('points', 'Press Gate').count()).toBe(1);
    expect(await row('points', 'Press Entrance').count()).toBe(0);
    const points = (await admin.get(`${A}/access-points?per_page=100`)).body.data as {
      name: string;
      location: string;
      direction: string;
    }[];
    // Only the name changed.
    expect(points.find((p) => p.name === 'Press Gate')).toMatchObject({ location: 'Media centre', direction: 'in' });
  });

  it('deletes a reader only once the deletion is confirmed', async () => {
    const reader2 = (await admin.get(`${A}/readers?per_page=100`)).body.data.find(
      (r: { identifier: string }) => r.identifier === 'GATE-IN-2',
    ) as { id: number };
    await row('readers', 'GATE-IN-2').getByTestId('readers-delete').click();
    expect(await row('readers', 'GATE-IN-2').textContent()).toContain('Delete GATE-IN-2?');
    await expect.poll(() => page.evaluate(() => document.activeElement?.textContent)).toBe('Delete');
    await ui.shot('access-delete-confirm');
    expect(await ui.accessibility()).toEqual([]);
    // Cancel keeps it.
    await row('readers', 'GATE-IN-2').getByRole('button', { name: 'Cancel' }).click();
    expect((await admin.get(`${A}/readers/${reader2.id}`)).status).toBe(200);
    await row('readers', 'GATE-IN-2').getByTestId('readers-delete').click();
    await row('readers', 'GATE-IN-2').getByTestId('readers-confirm-delete').click();
    await expect.poll(() => row('readers', 'GATE-IN-2').count()).toBe(0);
    expect(await page.getByTestId('readers-row').count()).toBe(5);
    expect((await admin.get(`${A}/readers/${reader2.id}`)).status).toBe(404);
    expect(await noSideScroll()).toBe(true);
  });

  it('shows a read-only account the same data and no edit control', async () => {
    const made = await admin.post('/api/v1/users', {
      name: 'Door Watcher',
      email: 'watcher@example.test',
      password: 'a long enough password',
    });
    expect(made.status).toBe(201);
    expect((await admin.put(`/api/v1/users/${made.body.data.id}`, { read_only: true })).status).toBe(200);
    expect((await admin.post(`/api/v1/users/${made.body.data.id}/teams`, { team_slug: 'default' })).status).toBe(200);

    const context = await ui.browser.newContext({ viewport: { width: 768, height: 1024 } });
    const { page: other, errors } = await watchedPage(context);
    try {
      await other.goto(`${gh.url}/access`);
      await other.getByLabel('Email').fill('watcher@example.test');
      await other.getByLabel('Password').fill('a long enough password');
      await other.getByRole('button', { name: 'Sign in' }).click();
      await expect.poll(() => new URL(other.url()).pathname, { timeout: 10_000 }).toBe('/access');
      await expect.poll(() => other.getByTestId('zones-row').count(), { timeout: 10_000 }).toBe(5);
      expect(await other.getByTestId('read-only').isVisible()).toBe(true);
      expect(await other.getByTestId('readers-row').count()).toBe(5);
      await other.getByLabel('Name, email or ticket id').fill('DEMO-00021');
      await other.getByRole('button', { name: 'Search', exact: true }).click();
      await expect.poll(() => other.getByTestId('attendee').count(), { timeout: 10_000 }).toBe(1);
      await other.getByTestId('toggle-credentials').click();
      await expect.poll(() => other.locator('[data-testid=credential][data-value="GH-000021"]').isVisible()).toBe(true);
      // Searching and showing credentials are reads; nothing that changes anything is offered.
      const editControls =
        '[data-testid$=-edit], [data-testid$=-delete], [data-testid$=-create], [data-testid=revoke], [data-testid$=-block], [data-testid$=-unblock], [data-testid=blocklist-remove]';
      expect(await other.locator(editControls).count()).toBe(0);
      expect(await other.locator('main form').count()).toBe(1); // the search form
      await ui.shot('access-read-only');
      expect(errors.filter((e) => !EXPECTED_4XX.test(e))).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('logged no console errors (Chromium’s own line for each 422 the page handled aside)', () => {
    expect(ui.unexpectedErrors()).toEqual([]);
  });
});

describe('the console’s Access screen on an edge', () => {
  // A cloud with the demo venue and an edge that syncs it (docs/sync.md): the edge's console shows the
  // cloud-owned venue and blocklist without edit controls, and says where they are changed.
  let cloud: TestAppliance;
  let cloudDir: string;
  let ui: ConsoleHarness;

  beforeAll(async () => {
    cloudDir = mkdtempSync(join(tmpdir(), 'gh-console-cloud-'));
    const seeded = await runCli(['demo', 'seed'], { GATEHOUSE_DATA_DIR: cloudDir });
    expect(seeded.code, seeded.stderr).toBe(0);
    cloud = await startAppliance({ GATEHOUSE_ROLE: 'cloud' }, { dataDir: cloudDir });
    const issued = await client(cloud, await cloud.token()).post(`${A}/sync/edges`, { name: 'north-gate' });
    expect(issued.status).toBe(201);
    ui = await startConsole({
      demo: false,
      env: { GATEHOUSE_ROLE: 'edge', GATEHOUSE_CLOUD_URL: cloud.url, GATEHOUSE_SYNC_TOKEN: issued.body.data.token },
    });
  }, 120_000);

  afterAll(async () => {
    await ui?.close();
    await cloud?.stop();
    if (cloudDir) rmSync(cloudDir, { recursive: true, force: true });
  });

  it('shows the venue and the blocklist read-only, with a line saying they are managed in the cloud; credentials can still be revoked', async () => {
    const edge = client(ui.gh, await ui.gh.token());
    // The edge's first download brings the venue.
    await expect
      .poll(async () => (await edge.get(`${A}/readers?per_page=100`)).body?.data?.length, { timeout: 30_000 })
      .toBe(6);
    await ui.open('/access');
    const { page } = ui;
    await expect.poll(() => page.getByTestId('cloud-managed').isVisible(), { timeout: 10_000 }).toBe(true);
    expect(await page.getByTestId('cloud-managed').textContent()).toContain('managed in the cloud');
    await expect.poll(() => page.getByTestId('zones-row').count()).toBe(4);
    expect(await page.getByTestId('points-row').count()).toBe(5);
    expect(await page.getByTestId('readers-row').count()).toBe(6);
    await expect.poll(() => page.getByTestId('blocklist-entry').count()).toBe(1);
    expect(
      await page
        .locator('[data-testid$=-edit], [data-testid$=-delete], [data-testid$=-create], [data-testid=blocklist-remove]')
        .count(),
    ).toBe(0);
    expect(await page.getByTestId('read-only').count()).toBe(0); // the account may write: the venue is the cloud's
    // The appliance agrees: a write of a cloud-owned resource is refused here.
    const zone = (await edge.get(`${A}/access-zones`)).body.data[0];
    const refused = await edge.put(`${A}/access-zones/${zone.id}`, { name: 'Renamed' });
    expect([refused.status, refused.body.message]).toEqual([409, expect.stringContaining('change them on the cloud')]);
    // Attendees and credentials stay local: revoking is offered, blocklisting is not.
    await page.getByLabel('Name, email or ticket id').fill('DEMO-00021');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await expect.poll(() => page.getByTestId('attendee').count(), { timeout: 10_000 }).toBe(1);
    await page.getByTestId('toggle-credentials').click();
    await expect.poll(() => page.getByTestId('revoke').count()).toBe(1);
    expect(await page.locator('[data-testid=credential-block], [data-testid=attendee-block]').count()).toBe(0);
    await ui.shot('access-edge');
    expect(await ui.accessibility()).toEqual([]);
    expect(ui.unexpectedErrors()).toEqual([]);
  });
});
