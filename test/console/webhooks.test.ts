import { sign } from '@octokit/webhooks-methods';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  formErrors,
  logQuery,
  noLogFilters,
  OUTGOING_EVENTS,
  parseAllowlist,
  zonedToIso,
} from '../../console/src/webhooks.js';
import { CATALOGUE } from '../../src/feed/catalogue.js';
import { client, type TestAppliance } from '../helpers/appliance.js';
import { type ConsoleHarness, DEMO_PROJECT, startConsole } from '../helpers/console.js';
import { type Receiver, startReceiver } from '../helpers/receiver.js';

// The console's webhooks screen (docs/console.md "Webhooks") as staff use it: a
// real appliance with the demo venue, Debian's Chromium at 768 × 1024, a real receiver (node:http
// on 127.0.0.1, allowed by GATEHOUSE_WEBHOOK_ALLOW_INSECURE) that first answers 500 and then 200.
// A source made in the page signs real requests with the secret the page showed once; the request
// log shows them and its filters narrow it; a failed delivery resent from the page is delivered.

const A = DEMO_PROJECT;
const GATEWAY = 'GW-CONSOLE';

describe('the webhooks screen’s logic', () => {
  it('offers every event of the outgoing catalogue', () => {
    expect([...OUTGOING_EVENTS].sort()).toEqual([...CATALOGUE].sort());
  });

  it('reads the allowlist as typed, one entry a line (or commas), and puts its 422 under the field naming the entry', () => {
    expect(parseAllowlist(' 10.0.0.0/8\n\n2001:db8::/32 , 192.168.1.5\n')).toEqual([
      '10.0.0.0/8',
      '2001:db8::/32',
      '192.168.1.5',
    ]);
    expect(parseAllowlist('   ')).toEqual([]);
    const errors = formErrors(
      { 'ip_allowlist.1': ['not an address'], name: ['The name field is required.'] },
      { ip_allowlist: ['10.0.0.0/8', '300.1.2.3'] },
    );
    expect(errors).toEqual({ ip_allowlist: ['“300.1.2.3”: not an address'], name: ['The name field is required.'] });
  });

  it('reads the time filters as wall time in the project’s time zone', () => {
    expect(zonedToIso('2026-11-26T14:30', 'UTC')).toBe('2026-11-26T14:30:00.000Z');
    expect(zonedToIso('2026-11-26T14:30', 'Europe/Berlin')).toBe('2026-11-26T13:30:00.000Z'); // CET, +1
    expect(zonedToIso('2026-07-01T00:00', 'America/New_York')).toBe('2026-07-01T04:00:00.000Z'); // EDT, -4
    const q = logQuery({ ...noLogFilters(), result: 'failure', sourceId: '3', from: '2026-11-26T14:30' }, 'UTC', 2, 25);
    expect(q).toEqual({ page: 2, per_page: 25, result: 'failure', source_id: 3, from: '2026-11-26T14:30:00.000Z' });
  });
});

describe('the webhooks screen, in Chromium', () => {
  let ui: ConsoleHarness;
  let gh: TestAppliance;
  let page: Page;
  let token: string;
  let receiver: Receiver;
  let answer = 500;
  /** The secret the page showed for the source made in it, and its id. */
  const made = { id: 0, secret: '', rotated: '' };

  beforeAll(async () => {
    receiver = await startReceiver();
    receiver.respond((_req, res) => {
      res.writeHead(answer, { 'content-type': 'text/plain' });
      res.end(answer === 200 ? 'ok' : 'receiver down');
    });
    ui = await startConsole({ env: { GATEHOUSE_WEBHOOK_ALLOW_INSECURE: '1' } });
    ({ gh, page } = ui);
    token = await gh.token();
    expect((await client(gh, token).post(`${A}/gateways`, { identifier: GATEWAY })).status).toBe(201);
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: gh.url });
  }, 120_000);

  afterAll(async () => {
    await receiver?.close();
    await ui?.close();
  });

  const rest = () => client(gh, token);
  const noSideScroll = () =>
    page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth);
  const tab = async (name: 'incoming' | 'sources' | 'outgoing') => {
    await page.getByTestId(`tab-${name}`).click();
    await expect.poll(() => page.getByTestId(`tab-${name}`).getAttribute('aria-selected')).toBe('true');
  };
  let reports = 0;
  // Each report is another body (its timestamp): the same bytes again would be answered as a retry.
  const gatewayReport = (secret: string, gatewayId = GATEWAY) => {
    const raw = JSON.stringify({
      gateway_id: gatewayId,
      status: 'online',
      timestamp: new Date(Date.now() - ++reports * 1000).toISOString(),
    });
    return sign(secret, raw).then((signature) =>
      gh.request('POST', '/webhook/v1/mqtt-gateway-status', {
        rawBody: raw,
        headers: { 'content-type': 'application/json', 'X-Svc-Signature': signature },
      }),
    );
  };
  const logRows = () => page.getByTestId('log-row');
  const source = (name: string) => page.locator(`[data-testid=source][data-source="${name}"]`);
  const deliveries = () => page.getByTestId('delivery');

  it('opens on an empty request log, and says that outgoing webhooks are not configured', async () => {
    await ui.open('/webhooks');
    expect(ui.path()).toBe('/webhooks');
    await expect.poll(() => page.getByTestId('log-count').textContent()).toBe('0 requests');
    expect(await page.getByText('No incoming webhook requests match.').isVisible()).toBe(true);
    expect(await noSideScroll()).toBe(true);
    expect(await ui.accessibility()).toEqual([]);
    await tab('outgoing');
    expect(ui.path()).toBe('/webhooks?tab=outgoing');
    await expect.poll(() => page.getByTestId('subscriptions-empty').isVisible()).toBe(true);
    expect(await page.getByTestId('subscriptions-empty').textContent()).toMatch(/not configured/);
    // The tabs are keyboard tabs: arrows move between them.
    await page.getByTestId('tab-outgoing').focus();
    await page.keyboard.press('ArrowLeft');
    await expect.poll(() => ui.path()).toBe('/webhooks?tab=sources');
    expect(await page.evaluate(() => document.activeElement?.getAttribute('data-tab'))).toBe('sources');
    expect(
      await page.getByText('No webhook sources: nothing can post incoming webhooks to this project yet.').isVisible(),
    ).toBe(true);
  });

  it('refuses a source without a name: the 422 under its field, focused', async () => {
    await page.getByTestId('source-add').click();
    await expect.poll(() => page.locator('#source-name').getAttribute('aria-invalid')).toBe('true');
    expect(await page.locator('#source-name-error').textContent()).toMatch(/name/);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('source-name');
    expect(await ui.accessibility()).toEqual([]);
    expect((await rest().get(`${A}/integrations/webhooks`)).body.data).toEqual([]);
  });

  it('adds a source and shows its secret once, with a copy button; the secret signs a real gateway report', async () => {
    await page.locator('#source-kind').selectOption('gateway-status');
    await page.locator('#source-name').fill('Door gateways');
    await page.getByTestId('source-add').click();
    const secret = page.getByTestId('secret-value');
    await expect.poll(() => secret.inputValue()).toMatch(/^whsec_/);
    made.secret = await secret.inputValue();
    expect(await page.locator('#source-name').getAttribute('aria-invalid')).toBeNull();
    await page.getByTestId('secret-copy').click();
    await expect.poll(() => page.getByText('Copied to the clipboard.').isVisible()).toBe(true);
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(made.secret);
    await expect.poll(() => source('Door gateways').isVisible()).toBe(true);
    expect(await noSideScroll()).toBe(true);
    await ui.shot('webhooks-source-secret');
    expect(await ui.accessibility()).toEqual([]);

    const listed = (await rest().get(`${A}/integrations/webhooks`)).body.data;
    expect(listed).toMatchObject([{ name: 'Door gateways', kind: 'gateway-status', ip_allowlist: [] }]);
    expect(JSON.stringify(listed)).not.toContain(made.secret);
    made.id = listed[0].id;
    expect((await gatewayReport(made.secret)).status).toBe(200);

    // Once: gone when dismissed, and not shown again after a reload.
    await page.getByTestId('secret-done').click();
    await expect.poll(() => page.getByTestId('secret-once').count()).toBe(0);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('wh-sources-title'); // focus back on the section
    await page.reload();
    await source('Door gateways').waitFor();
    expect(await page.content()).not.toContain(made.secret);
  });

  it('rotates the secret: the new one shown once; the old one still verifies during the grace period', async () => {
    await source('Door gateways').getByTestId('source-rotate').click();
    expect(await page.evaluate(() => document.activeElement?.id)).toBe(`grace-${made.id}`);
    await source('Door gateways').getByTestId('source-confirm').click();
    const secret = page.getByTestId('secret-value');
    await expect.poll(() => secret.inputValue()).toMatch(/^whsec_/);
    made.rotated = await secret.inputValue();
    expect(made.rotated).not.toBe(made.secret);
    expect(await page.getByTestId('secret-once').getByRole('heading').textContent()).toBe(
      'New secret of “Door gateways”',
    );
    await expect
      .poll(() => source('Door gateways').getByTestId('source-grace').textContent())
      .toMatch(/^still verifies until /);
    expect((await gatewayReport(made.rotated)).status).toBe(200);
    expect((await gatewayReport(made.secret)).status).toBe(200); // the grace period (60 minutes)
    await page.getByTestId('secret-done').click();
  });

  it('edits the allowlist: a bad address is refused under the field (422) and nothing changes; a good list is saved', async () => {
    await source('Door gateways').getByTestId('source-edit-allowlist').click();
    const input = source('Door gateways').getByTestId('allowlist-input');
    expect(await page.evaluate(() => document.activeElement?.getAttribute('data-testid'))).toBe('allowlist-input');
    await input.fill('10.0.0.0/8\n300.1.2.3/40');
    await source('Door gateways').getByTestId('source-confirm').click();
    await expect.poll(() => input.getAttribute('aria-invalid')).toBe('true');
    expect(await source('Door gateways').getByTestId('allowlist-error').textContent()).toMatch(
      /^“300\.1\.2\.3\/40”: .*not an IPv4 or IPv6 address or CIDR range/,
    );
    expect(await page.evaluate(() => document.activeElement?.getAttribute('data-testid'))).toBe('allowlist-input');
    expect(await noSideScroll()).toBe(true);
    await ui.shot('webhooks-allowlist-error');
    expect(await ui.accessibility()).toEqual([]);
    expect((await rest().get(`${A}/integrations/webhooks/${made.id}`)).body.data.ip_allowlist).toEqual([]);

    await input.fill('127.0.0.1\n10.0.0.0/8');
    await source('Door gateways').getByTestId('source-confirm').click();
    await expect
      .poll(() => source('Door gateways').getByTestId('source-allowlist').textContent())
      .toBe('127.0.0.1, 10.0.0.0/8');
    expect(await source('Door gateways').getByTestId('allowlist-input').count()).toBe(0);
    expect((await rest().get(`${A}/integrations/webhooks/${made.id}`)).body.data.ip_allowlist).toEqual([
      '127.0.0.1',
      '10.0.0.0/8',
    ]);
    expect((await gatewayReport(made.rotated)).status).toBe(200); // the test posts from 127.0.0.1
  });

  it('shows the requests posted to the appliance in the request log, and its filters narrow it', async () => {
    expect((await gatewayReport(made.rotated, 'GW-UNKNOWN')).status).toBe(404); // verified, refused: logged under the project
    expect(
      (await gh.request('POST', '/webhook/v1/mqtt-gateway-status', { body: { gateway_id: GATEWAY } })).status,
    ).toBe(401); // no source: not the project's
    await tab('incoming');
    await page.getByTestId('log-refresh').click();
    await expect.poll(() => page.getByTestId('log-count').textContent()).toBe('5 requests');
    expect(await logRows().count()).toBe(5);
    const newest = logRows().first();
    expect(await newest.getAttribute('data-status')).toBe('404');
    expect(await newest.getByTestId('log-reason').textContent()).toBe('unknown gateway');
    expect(await newest.getByTestId('log-source').textContent()).toBe('Door gateways');
    expect(await newest.textContent()).toContain('POST mqtt-gateway-status');
    expect(await newest.getByText('Body (first KB)').isVisible()).toBe(true);
    expect(await noSideScroll()).toBe(true);
    await ui.shot('webhooks-incoming');
    expect(await ui.accessibility()).toEqual([]);

    await page.locator('#log-result').selectOption('failure');
    await page.getByTestId('log-apply').click();
    await expect.poll(() => page.getByTestId('log-count').textContent()).toBe('1 request');
    expect(await logRows().first().getAttribute('data-status')).toBe('404');
    await page.locator('#log-result').selectOption('success');
    await page.locator('#log-source').selectOption({ label: 'Door gateways' });
    await page.getByTestId('log-apply').click();
    await expect.poll(() => page.getByTestId('log-count').textContent()).toBe('4 requests');
    expect(new Set(await logRows().evaluateAll((rows) => rows.map((r) => r.getAttribute('data-status'))))).toEqual(
      new Set(['200']),
    );
    // A time range that ends before anything was received.
    await page.locator('#log-to').fill('2020-01-01T00:00');
    await page.getByTestId('log-apply').click();
    await expect.poll(() => page.getByTestId('log-count').textContent()).toBe('0 requests');
    expect(await page.getByText('No incoming webhook requests match.').isVisible()).toBe(true);
    // A filter the API refuses: its 422 under the field.
    await page.locator('#log-status').fill('abc');
    await page.getByTestId('log-apply').click();
    await expect.poll(() => page.locator('#log-status').getAttribute('aria-invalid')).toBe('true');
    expect(await page.locator('#log-status-error').textContent()).toMatch(/status/);
    expect(await ui.accessibility()).toEqual([]);
    await page.getByRole('button', { name: 'Clear filters' }).click();
    await expect.poll(() => page.getByTestId('log-count').textContent()).toBe('5 requests');
    // The same as the appliance answers over REST.
    expect((await rest().get(`${A}/incoming-webhooks?result=failure`)).body.meta.total).toBe(1);

    // More than a page (25): Newer / Older through it, "Page n of m" between them.
    for (let i = 0; i < 21; i++) expect((await gatewayReport(made.rotated)).status).toBe(200);
    await page.getByTestId('log-refresh').click();
    await expect.poll(() => page.getByTestId('log-count').textContent()).toBe('26 requests');
    const pages = page.getByRole('navigation', { name: 'Request log pages' });
    expect(await pages.textContent()).toContain('Page 1 of 2');
    expect(await logRows().count()).toBe(25);
    expect(await pages.getByRole('button', { name: 'Newer' }).isDisabled()).toBe(true);
    await pages.getByRole('button', { name: 'Older' }).click();
    await expect.poll(() => pages.textContent()).toContain('Page 2 of 2');
    expect(await logRows().count()).toBe(1);
    expect(await logRows().first().getAttribute('data-status')).toBe('200'); // the oldest: the first report
    expect(await pages.getByRole('button', { name: 'Older' }).isDisabled()).toBe(true);
    await pages.getByRole('button', { name: 'Newer' }).click();
    await expect.poll(() => pages.textContent()).toContain('Page 1 of 2');
    expect(await ui.accessibility()).toEqual([]);
  });

  it('refuses a receiver URL the appliance will not send to, under its field', async () => {
    await tab('outgoing');
    await page.locator('#sub-url').fill('ftp://tickets.example/hooks');
    await page.getByTestId('sub-add').click();
    await expect.poll(() => page.locator('#sub-url').getAttribute('aria-invalid')).toBe('true');
    expect(await page.getByTestId('sub-url-error').textContent()).toMatch(/https/);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('sub-url');
    expect(await ui.accessibility()).toEqual([]);
  });

  it('subscribes a receiver (secret once); a test event it answers 500 fails, and resending it from the page delivers it', async () => {
    await page.locator('#sub-url').fill(receiver.url);
    await page.getByTestId('sub-add').click();
    await expect.poll(() => page.getByTestId('secret-value').inputValue()).toMatch(/^[0-9a-f]{64}$/); // the sha256 scheme's secret
    await expect.poll(() => page.getByTestId('subscription').count()).toBe(1);
    const subscription = page.getByTestId('subscription').first();
    expect(await subscription.textContent()).toContain(receiver.url);
    expect(await subscription.textContent()).toContain('all events');
    await page.getByTestId('secret-done').click();

    answer = 500;
    await subscription.getByTestId('sub-test').click();
    await expect
      .poll(() => subscription.getByTestId('subscription-outcome').textContent())
      .toMatch(/^Test event sent: Failed \(500, \d+ ms\)\.$/);
    await receiver.waitFor(1, 'webhook.test');
    await expect.poll(() => deliveries().count()).toBe(1);
    const failed = deliveries().first();
    expect(await failed.getAttribute('data-status')).toBe('failed');
    expect(await failed.getByTestId('delivery-code').textContent()).toBe('Code 500');
    expect(await failed.getByTestId('delivery-attempts').textContent()).toBe('1 attempt');
    expect(await failed.getByTestId('delivery-time').textContent()).toMatch(/^\d+ ms$/);
    await failed.getByTestId('delivery-payload').locator('summary').click();
    expect(await failed.getByTestId('delivery-payload').locator('pre').textContent()).toContain(
      '"event": "webhook.test"',
    );
    expect(await noSideScroll()).toBe(true);
    await ui.shot('webhooks-delivery-failed');
    expect(await ui.accessibility()).toEqual([]);

    answer = 200;
    const id = Number(await failed.getAttribute('data-id'));
    await failed.getByTestId('delivery-resend').click();
    await expect
      .poll(() => deliveries().first().getByTestId('delivery-outcome').textContent())
      .toBe('Resent: Delivered (200).');
    expect(await deliveries().first().getAttribute('data-status')).toBe('delivered');
    expect(await deliveries().first().getByTestId('delivery-attempts').textContent()).toBe('2 attempts');
    expect(await deliveries().first().getByTestId('delivery-resend').count()).toBe(0);
    const [first, again] = await receiver.waitFor(2, 'webhook.test');
    expect(again!.headers['x-svc-delivery-id']).toBe(first!.headers['x-svc-delivery-id']); // the same delivery, sent again
    expect((await rest().get(`${A}/webhook-deliveries/${id}`)).body.data).toMatchObject({
      status: 'delivered',
      attempts: 2,
      last_status_code: 200,
    });
    // Still delivered after a refresh of the log.
    await page.getByTestId('deliveries-refresh').click();
    await expect.poll(() => deliveries().first().getAttribute('data-status')).toBe('delivered');
  });

  it('sends a test event that arrives at the receiver and shows delivered in the log', async () => {
    const before = receiver.received.length;
    await page.getByTestId('subscription').first().getByTestId('sub-test').click();
    await expect
      .poll(() => page.getByTestId('subscription-outcome').textContent())
      .toMatch(/^Test event sent: Delivered \(200, \d+ ms\)\.$/);
    await expect.poll(() => receiver.received.length).toBe(before + 1);
    const got = receiver.received.at(-1)!;
    expect(got.body).toMatchObject({ event: 'webhook.test', project_id: 1 });
    await expect.poll(() => page.getByTestId('deliveries-count').textContent()).toBe('2 deliveries');
    expect(await deliveries().first().getAttribute('data-status')).toBe('delivered');
    // The log's status filter.
    await page.locator('#del-status').selectOption('failed');
    await page.getByTestId('deliveries-apply').click();
    await expect.poll(() => page.getByTestId('deliveries-count').textContent()).toBe('0 deliveries');
    await page.locator('#del-status').selectOption('delivered');
    await page.getByTestId('deliveries-apply').click();
    await expect.poll(() => page.getByTestId('deliveries-count').textContent()).toBe('2 deliveries');
    await ui.shot('webhooks-outgoing');
  });

  it('deletes a subscription once confirmed', async () => {
    const extra = await rest().post('/api/v1/webhook/subscribe', {
      url: `${receiver.url}/second`,
      events: ['attendee.created'],
      project_id: 1,
    });
    expect(extra.status).toBe(201);
    await page.reload();
    await expect.poll(() => page.getByTestId('subscription').count()).toBe(2);
    const second = page.locator(`[data-testid=subscription][data-id="${extra.body.data.id}"]`);
    expect(await second.textContent()).toContain('attendee.created');
    await second.getByTestId('sub-delete').click();
    expect(await ui.accessibility()).toEqual([]);
    await second.getByTestId('sub-delete-confirm').click();
    await expect.poll(() => page.getByTestId('subscription').count()).toBe(1);
    expect((await rest().get(`/api/v1/webhook-subscriptions/${extra.body.data.id}`)).status).toBe(404);
  });

  it('shows a read-only account the logs, sources and subscriptions, but no control that changes anything', async () => {
    const password = 'a long enough password';
    const made = await rest().post('/api/v1/users', { name: 'Door staff', email: 'viewer@example.test', password });
    expect(made.status).toBe(201);
    expect(
      (
        await rest().post(`/api/v1/users/${made.body.data.id}/projects`, {
          team_slug: 'default',
          project_slug: 'default',
        })
      ).status,
    ).toBe(200);
    expect((await rest().put(`/api/v1/users/${made.body.data.id}`, { read_only: true })).status).toBe(200);
    await page.getByTestId('sign-out').click();
    await expect.poll(() => ui.path()).toMatch(/^\/signin/);
    await ui.open('/webhooks', 'viewer@example.test', password);
    const controls =
      '[data-testid=source-create], [data-testid=source-rotate], [data-testid=source-edit-allowlist], [data-testid=source-toggle], [data-testid=source-delete], [data-testid=subscription-create], [data-testid=sub-test], [data-testid=sub-delete], [data-testid=sub-toggle], [data-testid=delivery-resend]';

    await expect.poll(() => page.getByTestId('log-count').textContent()).toBe('26 requests');
    expect(await page.locator(controls).count()).toBe(0);
    expect(await ui.accessibility()).toEqual([]);
    await tab('sources');
    await expect.poll(() => source('Door gateways').isVisible()).toBe(true);
    expect(await page.locator(controls).count()).toBe(0);
    expect(await ui.accessibility()).toEqual([]);
    await tab('outgoing');
    await expect.poll(() => page.getByTestId('deliveries-count').textContent()).toBe('2 deliveries');
    expect(await page.getByTestId('subscription').count()).toBe(1);
    expect(await page.locator(controls).count()).toBe(0);
    expect(await noSideScroll()).toBe(true);
    await ui.shot('webhooks-read-only');
    expect(await ui.accessibility()).toEqual([]);
  });

  it('logged no unexpected console errors', () => {
    expect(ui.unexpectedErrors()).toEqual([]);
  });
});
