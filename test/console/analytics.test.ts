import type { MqttClient } from 'mqtt';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, type TestAppliance } from '../helpers/appliance.js';
import { watchedPage } from '../helpers/chromium.js';
import { type ConsoleHarness, DEMO_PROJECT, startConsole } from '../helpers/console.js';
import { connectReader, type Inbox, readerLogin } from '../helpers/mqtt.js';

// The console's Analytics screen (docs/console.md "Analytics") against a real
// appliance with the demo venue, after grants and denials scanned over MQTT: the tables show what
// POST .../analytics/metrics answers for the same zone, interval and dates, the charts are drawn
// (Chart.js under the console's CSP: no inline style), 15 min and hour buckets, a bad range's 422
// under its field, a project switch, axe-core and screenshots.

const A = DEMO_PROJECT;

interface Bucket {
  bucket: string;
  entries: number;
  exits: number;
  occupancy: number;
}

describe('the console’s Analytics screen', () => {
  let ui: ConsoleHarness;
  let gh: TestAppliance;
  let page: Page;
  let admin: ReturnType<typeof client>;
  const readers: Record<string, { client: MqttClient; inbox: Inbox; scansTopic: string }> = {};

  beforeAll(async () => {
    ui = await startConsole();
    ({ gh, page } = ui);
    const token = await gh.token();
    admin = client(gh, token);
    for (const identifier of ['GATE-IN-1', 'GATE-OUT-1', 'BACKSTAGE-1']) {
      const creds = await readerLogin(gh, token, A, identifier);
      readers[identifier] = { ...(await connectReader(gh, creds)), scansTopic: creds.mqtt.scans_topic };
    }
  }, 120_000);

  afterAll(async () => {
    for (const r of Object.values(readers)) r.client.end(true);
    await ui?.close();
  });

  async function scan(at: string, credential: string): Promise<{ access_granted: boolean; reason?: string }> {
    const r = readers[at]!;
    const request_id = `analytics-${credential}-${Date.now()}-${Math.random()}`;
    r.client.publish(
      r.scansTopic,
      JSON.stringify({
        request_id,
        credential_value: credential,
        scan_type: 'qr',
        timestamp: new Date().toISOString(),
      }),
      { qos: 1 },
    );
    return (await r.inbox.next((m) => m.payload.request_id === request_id, 5000)).payload;
  }

  /** What the page asked for: its zone, interval and dates, read from its own controls. */
  async function chosen() {
    return {
      zone_id: Number(await page.getByLabel('Zone', { exact: true }).inputValue()),
      interval: (await page.getByTestId('interval-15min').isChecked()) ? '15min' : 'hour',
      start_date: await page.getByLabel('From', { exact: true }).inputValue(),
      end_date: await page.getByLabel('To (included)').inputValue(),
    };
  }
  async function occupancyFromRest(): Promise<Bucket[]> {
    const res = await admin.post(`${A}/analytics/metrics`, { metric: 'zone_occupancy', ...(await chosen()) });
    expect(res.status).toBe(200);
    return res.body.data.series;
  }
  async function occupancyTable(): Promise<Bucket[]> {
    return page.getByTestId('occupancy-row').evaluateAll((rows) =>
      rows.map((r) => ({
        bucket: r.getAttribute('data-bucket')!,
        entries: Number(r.querySelector('[data-testid=entries]')!.textContent),
        exits: Number(r.querySelector('[data-testid=exits]')!.textContent),
        occupancy: Number(r.querySelector('[data-testid=inside]')!.textContent),
      })),
    );
  }
  /** Whether every chart canvas on the page has drawn something (a pixel that is not transparent). */
  const chartsDrawn = () =>
    page.getByTestId('chart').evaluateAll((canvases) =>
      canvases.map((c) => {
        const canvas = c as HTMLCanvasElement;
        if (canvas.width === 0 || canvas.height === 0) return false;
        const pixels = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height).data;
        for (let i = 3; i < pixels.length; i += 4) if (pixels[i] !== 0) return true;
        return false;
      }),
    );
  const noSideScroll = () =>
    page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth);

  it('shows zone occupancy and the access summary of today after scans, the tables matching the REST answers', async () => {
    expect((await scan('GATE-IN-1', 'GH-000001')).access_granted).toBe(true);
    expect((await scan('GATE-IN-1', 'GH-000002')).access_granted).toBe(true);
    expect((await scan('GATE-IN-1', 'GH-000003')).access_granted).toBe(true);
    expect((await scan('GATE-OUT-1', 'GH-000002')).access_granted).toBe(true);
    expect((await scan('BACKSTAGE-1', 'GH-000008')).access_granted).toBe(true);
    expect(await scan('BACKSTAGE-1', 'GH-000001')).toMatchObject({ access_granted: false, reason: 'not_authorized' });
    expect(await scan('GATE-IN-1', 'NOT-A-TICKET')).toMatchObject({
      access_granted: false,
      reason: 'invalid_credential',
    });

    await ui.open('/analytics');
    await expect.poll(() => page.getByTestId('occupancy-row').count(), { timeout: 10_000 }).toBeGreaterThan(0);
    expect(await page.getByLabel('Zone', { exact: true }).locator('option:checked').textContent()).toBe('Arena');
    const series = await occupancyFromRest();
    expect(await occupancyTable()).toEqual(series);
    // The Arena: 3 entries (GH-000008 went in with a crew ticket through Backstage, another zone), 1 exit, 2 inside.
    expect(series.reduce((n, b) => n + b.entries, 0)).toBe(3);
    expect(series.reduce((n, b) => n + b.exits, 0)).toBe(1);
    expect(series.at(-1)!.occupancy).toBe(2);

    await expect.poll(() => page.getByTestId('total-granted').textContent()).toBe('5');
    const summary = (
      await admin.post(`${A}/analytics/metrics`, {
        metric: 'access_summary',
        start_date: (await chosen()).start_date,
        end_date: (await chosen()).end_date,
      })
    ).body.data;
    expect(summary).toMatchObject({ granted: 5, denied: 2 });
    expect(await page.getByTestId('total-denied').textContent()).toBe(String(summary.denied));
    expect(await page.getByTestId('total-unique').textContent()).toBe(String(summary.unique_attendees));
    const points = await page.getByTestId('point-row').evaluateAll((rows) =>
      rows.map((r) => ({
        name: r.getAttribute('data-name'),
        granted: Number(r.querySelector('[data-testid=granted]')!.textContent),
        denied: Number(r.querySelector('[data-testid=denied]')!.textContent),
      })),
    );
    expect(points).toEqual(
      summary.by_access_point.map((p: { name: string; granted: number; denied: number }) => ({
        name: p.name,
        granted: p.granted,
        denied: p.denied,
      })),
    );
    expect(
      await page.locator('[data-testid=reason-row][data-reason=not_authorized] [data-testid=count]').textContent(),
    ).toBe('1');
    expect(
      await page.locator('[data-testid=reason-row][data-reason=invalid_credential] [data-testid=count]').textContent(),
    ).toBe('1');

    // Two charts, drawn, each an image with a text alternative.
    await expect.poll(chartsDrawn).toEqual([true, true]);
    expect(
      await page
        .getByTestId('chart')
        .evaluateAll((cs) => cs.map((c) => [c.getAttribute('role'), c.getAttribute('aria-label')])),
    ).toEqual([
      ['img', expect.stringMatching(/^Occupancy of Arena: 3 entries, 1 exits, at most 2 inside/)],
      [
        'img',
        'Granted and denied scans per access point: 5 granted, 2 denied in all. The numbers are in the table below.',
      ],
    ]);
    expect(await noSideScroll()).toBe(true);
    await ui.shot('analytics');
    expect(await ui.accessibility()).toEqual([]);
  });

  it('switches between hour and 15 minute buckets', async () => {
    const hours = await occupancyTable();
    await page.getByTestId('interval-15min').check();
    await expect.poll(() => page.getByTestId('occupancy-row').count(), { timeout: 10_000 }).toBe(hours.length * 4);
    const quarters = await occupancyTable();
    expect(quarters).toEqual(await occupancyFromRest());
    expect(quarters.map((b) => b.bucket.slice(14, 16))).toContain('45');
    expect(quarters.reduce((n, b) => n + b.entries, 0)).toBe(3);
    // The table, opened, is what assistive technology reads.
    await page.getByText('The numbers as a table').click();
    expect(await page.getByTestId('occupancy-table').isVisible()).toBe(true);
    await expect.poll(chartsDrawn).toEqual([true, true]);
    expect(await noSideScroll()).toBe(true);
    await ui.shot('analytics-15min');
    expect(await ui.accessibility()).toEqual([]);
    await page.getByTestId('interval-hour').check();
    await expect.poll(() => page.getByTestId('occupancy-row').count()).toBe(hours.length);
  });

  it('follows the zone chosen', async () => {
    await page.getByLabel('Zone', { exact: true }).selectOption({ label: 'Backstage' });
    await expect
      .poll(async () => (await occupancyTable()).reduce((n, b) => n + b.entries, 0), { timeout: 10_000 })
      .toBe(1);
    expect(await occupancyTable()).toEqual(await occupancyFromRest());
    await expect
      .poll(() => page.getByTestId('chart').first().getAttribute('aria-label'))
      .toMatch(/^Occupancy of Backstage: 1 entries, 0 exits, at most 1 inside/);
  });

  it('shows a range that ends before it starts as the appliance’s error under the field', async () => {
    const today = await page.getByLabel('From', { exact: true }).inputValue();
    const yesterday = new Date(Date.parse(`${today}T12:00:00Z`) - 86_400_000).toISOString().slice(0, 10);
    await page.getByLabel('To (included)').fill(yesterday);
    await expect
      .poll(() => page.getByTestId('analytics-to-error').textContent(), { timeout: 10_000 })
      .toBe('The end_date must be after the start_date.');
    expect(await page.getByLabel('To (included)').getAttribute('aria-invalid')).toBe('true');
    expect(await ui.accessibility()).toEqual([]);
    await page.getByLabel('To (included)').fill(today);
    await expect.poll(() => page.getByTestId('analytics-to-error').count()).toBe(0);
    await expect.poll(chartsDrawn).toEqual([true, true]);
  });

  it('draws the charts again for another project and lets them go when the page is left', async () => {
    expect(
      (await admin.post('/api/v1/projects', { name: 'Side Stage', slug: 'side-stage', timezone: 'UTC' })).status,
    ).toBe(201);
    await page.reload();
    await page.getByLabel('Project').selectOption({ label: 'Side Stage' });
    await expect.poll(() => page.getByText('No scans in this range.').isVisible(), { timeout: 10_000 }).toBe(true);
    expect(await page.getByText('No access zones in this project.').isVisible()).toBe(true);
    expect(await page.getByTestId('chart').count()).toBe(0);
    await ui.shot('analytics-empty');
    expect(await ui.accessibility()).toEqual([]);
    await page.getByLabel('Project').selectOption({ label: 'Default project' });
    await expect.poll(chartsDrawn, { timeout: 10_000 }).toEqual([true, true]);
    await page.getByRole('link', { name: 'Live doors' }).click();
    await expect.poll(() => page.getByTestId('chart').count()).toBe(0);
    await page.getByRole('link', { name: 'Analytics' }).click();
    await expect.poll(chartsDrawn, { timeout: 10_000 }).toEqual([true, true]);
  });

  it('shows a read-only account the same numbers (the metrics are a read, though a POST)', async () => {
    const made = await admin.post('/api/v1/users', {
      name: 'Numbers Reader',
      email: 'numbers@example.test',
      password: 'a long enough password',
    });
    expect(made.status).toBe(201);
    expect((await admin.put(`/api/v1/users/${made.body.data.id}`, { read_only: true })).status).toBe(200);
    expect((await admin.post(`/api/v1/users/${made.body.data.id}/teams`, { team_slug: 'default' })).status).toBe(200);
    const context = await ui.browser.newContext({ viewport: { width: 768, height: 1024 } });
    const { page: other, errors } = await watchedPage(context);
    try {
      await other.goto(`${gh.url}/analytics`);
      await other.getByLabel('Email').fill('numbers@example.test');
      await other.getByLabel('Password').fill('a long enough password');
      await other.getByRole('button', { name: 'Sign in' }).click();
      await expect.poll(() => new URL(other.url()).pathname, { timeout: 10_000 }).toBe('/analytics');
      if ((await other.getByLabel('Project').count()) > 0)
        await other.getByLabel('Project').selectOption({ label: 'Default project' });
      await expect.poll(() => other.getByTestId('total-granted').textContent(), { timeout: 10_000 }).toBe('5');
      expect(await other.getByTestId('total-denied').textContent()).toBe('2');
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('logged no console errors: no CSP violation from Chart.js (Chromium’s own line for the 422 the page handled aside)', () => {
    expect(ui.errors.filter((e) => /Content Security Policy|Refused to/i.test(e))).toEqual([]);
    expect(ui.unexpectedErrors()).toEqual([]);
  });
});
