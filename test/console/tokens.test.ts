import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, type TestAppliance } from '../helpers/appliance.js';
import { type ConsoleHarness, DEMO_PROJECT, startConsole } from '../helpers/console.js';

// Settings → API tokens in the console (docs/console.md) and read-only accounts (docs/auth.md "Read-only accounts"), in
// Chromium against a real appliance: a token created with chosen abilities, its value shown once and
// copied, used over REST, its last use listed, revoked and then refused; the 422s under their fields;
// a read-only account sees its tokens and no edit control.

const VIEWER = { email: 'viewer@example.test', password: 'a long enough password' };

describe('the console’s API tokens, in Chromium', () => {
  let ui: ConsoleHarness;
  let gh: TestAppliance;
  let page: Page;
  let created = '';

  beforeAll(async () => {
    ui = await startConsole();
    ({ gh, page } = ui);
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: gh.url });
  }, 120_000);
  afterAll(() => ui?.close());

  const row = (name: string) => page.locator(`[data-testid=token-row][data-name="${name}"]`);
  const noSidewaysScroll = () =>
    page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth);

  it('shows each field’s error under it for a token without a name or an ability', async () => {
    await ui.open('/settings/tokens');
    await page.getByRole('button', { name: 'Create token' }).click();
    await page.locator('#token-name-error').waitFor();
    expect(await page.getByLabel('Name').getAttribute('aria-invalid')).toBe('true');
    expect(await page.locator('#token-abilities-error').textContent()).not.toBe('');
    expect(await page.getByTestId('tokens-error').textContent()).not.toBe('');
    expect(await ui.accessibility()).toEqual([]);
  });

  it('creates a token with the abilities ticked, shows its value once with a copy button, and the token works over REST as given', async () => {
    await page.getByLabel('Name').fill('door display');
    await page.getByRole('checkbox', { name: /access:read/ }).check();
    await page.getByRole('button', { name: 'Create token' }).click();
    const value = page.getByTestId('token-value');
    await value.waitFor();
    const token = await value.inputValue();
    created = token;
    expect(token).toMatch(/^\d+\|\S{20,}$/);
    expect(await row('door display').locator('.abilities').textContent()).toBe('access:read');
    expect(await row('door display').getByTestId('token-last-used').textContent()).toBe('Never');

    await page.getByTestId('token-copy').click();
    await expect.poll(() => page.getByText('Copied to the clipboard.').count()).toBe(1);
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(token);
    await ui.shot('tokens');
    expect(await ui.accessibility()).toEqual([]);
    expect(await noSidewaysScroll()).toBe(true);

    const api = client(gh, token);
    expect((await api.get(`${DEMO_PROJECT}/access-zones`)).status).toBe(200);
    expect((await api.post(`${DEMO_PROJECT}/access-zones`, { name: 'Not with this token' })).status).toBe(401);

    // Shown once: after a reload the list has the token, never its value; its last use is known.
    await page.reload();
    await row('door display').waitFor();
    expect(await page.getByTestId('token-value').count()).toBe(0);
    expect(await page.content()).not.toContain(token.split('|')[1]);
    expect(await row('door display').getByTestId('token-last-used').textContent()).not.toBe('Never');
  });

  it('revokes a token after a confirmation in place, and the appliance refuses it from then on', async () => {
    const token = (await client(gh, await gh.token()).get('/api/v1/me/tokens')).body.data.find(
      (t: { name: string }) => t.name === 'door display',
    );
    expect(token).toBeDefined();
    await row('door display').getByTestId('token-revoke').click();
    await row('door display').getByRole('button', { name: 'Cancel' }).click();
    expect(await row('door display').count()).toBe(1);
    await row('door display').getByTestId('token-revoke').click();
    await row('door display').getByTestId('token-revoke-confirm').click();
    await expect.poll(() => row('door display').count()).toBe(0);
    const listed = (await client(gh, await gh.token()).get('/api/v1/me/tokens')).body.data;
    expect(listed.some((t: { id: number }) => t.id === token.id)).toBe(false);
    expect((await client(gh, created).get(`${DEMO_PROJECT}/access-zones`)).status).toBe(401);
  });

  it('a read-only account sees its tokens and the read-only badge, and no control that changes anything', async () => {
    const admin = client(gh, await gh.token());
    const made = await admin.post('/api/v1/users', { name: 'Door staff', ...VIEWER, read_only: true });
    expect(made.status).toBe(201);
    await admin.post(`/api/v1/users/${made.body.data.id}/teams`, { team_slug: 'default' });
    await gh.token(['read'], VIEWER.email, VIEWER.password);

    await page.getByTestId('sign-out').click();
    await page.getByLabel('Email').waitFor();
    await ui.open('/settings/tokens', VIEWER.email, VIEWER.password);
    await page.getByTestId('token-row').first().waitFor();
    expect(await page.getByTestId('read-only-badge').isVisible()).toBe(true);
    expect(await page.getByTestId('read-only').isVisible()).toBe(true);
    expect(await page.getByTestId('token-form').count()).toBe(0);
    expect(await page.getByTestId('token-revoke').count()).toBe(0);
    await ui.shot('tokens-read-only');
    expect(await ui.accessibility()).toEqual([]);
  });

  it('logged no console errors (Chromium’s own line for each 4xx the page handled aside)', () => {
    expect(ui.unexpectedErrors()).toEqual([]);
  });
});
