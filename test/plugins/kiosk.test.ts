import { mkdirSync, mkdtempSync, readdirSync, rmdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { launchChromium, watchedPage } from '../helpers/chromium.js';
import { type RunningProcess, runCli, runGatehouse } from '../helpers/process.js';

// The example door kiosk (examples/door-kiosk) against the demo venue, as the README runs it:
// `gatehouse plugin dev examples/door-kiosk`, the page in Chromium. A scan typed into its field
// is decided by the appliance (callApi through the dev server's proxy), the banner shows the
// manifest's string and asset for the result, and the zone's count follows the appliance's
// ZoneOccupancyChanged socket events, also for scans made elsewhere. The appliance keeps its data
// where `npm start` does, under the checkout's data/ (a folder of its own there), so the dev
// server, serving a folder of the checkout, is asked for that database.

const A = '/api/v1/projects/default/default';

describe('the example door kiosk, in Chromium', () => {
  const checkoutData = join(process.cwd(), 'data');
  mkdirSync(checkoutData, { recursive: true });
  const dataDir = mkdtempSync(join(checkoutData, 'kiosk-test-'));
  let gh: TestAppliance;
  let token: string;
  let dev: RunningProcess;
  let url: string;
  let browser: Browser;
  let page: Page;
  let errors: string[];

  beforeAll(async () => {
    const seeded = await runCli(['demo', 'seed'], { GATEHOUSE_DATA_DIR: dataDir });
    expect(seeded.code, seeded.stderr).toBe(0);
    gh = await startAppliance({}, { dataDir });
    token = await gh.token();
    dev = runGatehouse(['plugin', 'dev', 'examples/door-kiosk', '--url', gh.url, '--token', token, '--port', '0'], {});
    url = (await dev.waitFor(/serving .* at (http:\/\/\S+)/, 60_000))[1]!;
    browser = await launchChromium();
    ({ page, errors } = await watchedPage(browser));
    await page.goto(url);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await dev?.stop();
    await gh?.stop();
    rmSync(dataDir, { recursive: true, force: true });
    if (readdirSync(checkoutData).length === 0) rmdirSync(checkoutData); // made for this test
  });

  const count = () => page.getByTestId('zone-count').locator('strong').textContent();
  const headline = () => page.getByTestId('banner').locator('.headline').textContent();

  async function scan(code: string): Promise<void> {
    const field = page.getByLabel('Scan a ticket');
    await expect.poll(() => field.isEnabled()).toBe(true);
    await field.fill(code);
    await field.press('Enter');
  }

  it("finds its access point and shows the zone's count", async () => {
    await expect.poll(count, { timeout: 15_000 }).toBe('0 / 5000');
    expect(await page.getByTestId('zone-count').textContent()).toContain('Arena');
    expect(await headline()).toBe('Ready for the next guest');
  });

  it('a granted scan shows the welcome string and icon, and the count moves by the socket event', async () => {
    await scan('GH-000001');
    await expect.poll(headline).toBe('Welcome in!');
    expect(await page.getByTestId('banner').locator('img').getAttribute('src')).toBe('granted.svg');
    expect(await page.getByTestId('banner').textContent()).toContain('Ada Okafor');
    await expect.poll(count).toBe('1 / 5000');
  });

  it("welcomes a guest scanned in before once more (the README tour's scan): re-entry is allowed unless the zone refuses it", async () => {
    await expect.poll(headline, { timeout: 15_000 }).toBe('Ready for the next guest');
    await scan('GH-000001');
    await expect.poll(headline).toBe('Welcome in!');
    expect(await page.getByTestId('banner').textContent()).toContain('Ada Okafor');
    expect(await count()).toBe('1 / 5000'); // counted in once
  });

  it('says in words that a guest is already inside when the zone refuses re-entry', async () => {
    const api = client(gh, token);
    const arena = (await api.get(`${A}/access-zones?per_page=100`)).body.data.find(
      (z: { name: string }) => z.name === 'Arena',
    ).id as number;
    expect((await api.put(`${A}/access-zones/${arena}`, { anti_passback: true })).status).toBe(200);
    try {
      await scan('GH-000001');
      await expect.poll(headline).toBe('Not admitted');
      expect(await page.getByTestId('banner').locator('.reason').textContent()).toBe('Reason: Already inside');
      expect(await count()).toBe('1 / 5000');
    } finally {
      expect((await api.put(`${A}/access-zones/${arena}`, { anti_passback: false })).status).toBe(200);
    }
  });

  it('a blocklisted ticket is refused with its reason, in words', async () => {
    await expect.poll(headline, { timeout: 15_000 }).toBe('Ready for the next guest'); // the last banner gone
    await scan('GH-000013');
    await expect.poll(headline).toBe('Not admitted');
    expect(await page.getByTestId('banner').locator('img').getAttribute('src')).toBe('denied.svg');
    expect(await page.getByTestId('banner').locator('.reason').textContent()).toBe('Reason: Blocklisted');
    expect(await count()).toBe('1 / 5000');
  });

  it('follows scans made elsewhere: the count moves without the kiosk asking', async () => {
    const gate = (await client(gh, token).get(`${A}/access-points?per_page=1`)).body.data[0];
    const answer = await client(gh, token).post(`${A}/access-points/${gate.id}/scan`, {
      credential_value: 'GH-000002',
      scan_type: 'qr',
    });
    expect(answer.body.access_granted).toBe(true);
    await expect.poll(count, { timeout: 10_000 }).toBe('2 / 5000');
  });

  it('serves no file of the checkout but the kiosk and the toolkit under /@fs, the database least of all, and no token', async () => {
    const checkout = process.cwd();
    for (const file of [
      `${dataDir}/gatehouse.db`,
      `${checkout}/package.json`,
      `${checkout}/config/default.json`,
      `${checkout}/src/errors.ts`,
      `${checkout}/node_modules/vue/package.json`,
      `${checkout}/examples/door-kiosk/../../package.json`,
    ]) {
      const res = await fetch(`${url}@fs${file}`);
      const text = await res.text();
      expect([403, 404], file).toContain(res.status);
      expect(text, file).not.toMatch(/SQLite format 3|"name": "(gatehouse|vue)"|"role"/);
    }
    expect((await fetch(`${url}@fs${checkout}/examples/door-kiosk/app-manifest.json`)).status).toBe(200);
    expect((await fetch(`${url}@fs${checkout}/src/plugins/toolkit/call-api.ts`)).status).toBe(200);
    expect(await (await fetch(`${url}@id/__x00__virtual:gatehouse/plugin`)).text()).not.toContain(token.split('|')[1]!);
  });

  it('logged no console errors', () => {
    expect(errors).toEqual([]);
  });
});
