import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { WebSocket } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_EMAIL, ADMIN_PASSWORD, client, startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { launchChromium, watchedPage } from '../helpers/chromium.js';
import { type RunningProcess, runCli, runGatehouse } from '../helpers/process.js';

// `gatehouse plugin init` and `gatehouse plugin dev` as a developer runs them (child processes of
// dist/main.js), the page in real Chromium: the manifest's strings, callApi through the dev
// server's proxy, hot reload of app-manifest.json without a page reload, an invalid manifest shown
// in the page while the last good state stays, and a page opened after an edit.

describe('gatehouse plugin dev, in Chromium', () => {
  let gh: TestAppliance;
  let dir: string;
  let dev: RunningProcess;
  let url: string;
  let browser: Browser;
  let token: string;
  const errors: string[] = [];
  const manifestFile = () => join(dir, 'app-manifest.json');
  // The last valid manifest written: each test edits from it, so a test that fails while the file
  // is invalid does not hand its invalid file to the next one.
  let lastGood: string | null = null;
  const readManifest = () => JSON.parse(lastGood ?? readFileSync(manifestFile(), 'utf8'));
  const writeManifest = (m: unknown) => {
    lastGood = `${JSON.stringify(m, null, 2)}\n`;
    writeFileSync(manifestFile(), lastGood);
  };

  async function open(): Promise<Page> {
    const { page, errors: pageErrors } = await watchedPage(browser);
    page.on('close', () => errors.push(...pageErrors));
    await page.goto(url);
    await page.locator('h1').waitFor();
    return page;
  }

  beforeAll(async () => {
    gh = await startAppliance();
    token = await gh.token();
    const api = client(gh, token);
    const zone = (await api.post('/api/v1/projects/default/default/access-zones', { name: 'Hall' })).body.data.id;
    await api.post('/api/v1/projects/default/default/access-points', {
      name: 'North Door',
      access_zone_id: zone,
      direction: 'in',
    });

    dir = join(mkdtempSync(join(tmpdir(), 'gh-plugin-')), 'door-display');
    const init = await runCli(['plugin', 'init', dir, '--yes'], {});
    expect(init.code, init.stderr).toBe(0);
    expect(JSON.parse(init.stdout).files).toContain('app-manifest.json');

    dev = runGatehouse(['plugin', 'dev', dir, '--url', gh.url, '--token', token, '--port', '0'], {});
    url = (await dev.waitFor(/serving .* at (http:\/\/\S+)/, 60_000))[1]!;
    browser = await launchChromium();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await dev?.stop();
    await gh?.stop();
    if (dir) rmSync(join(dir, '..'), { recursive: true, force: true });
  });

  it('shows the manifest strings and settings, and callApi reaches the appliance through the proxy', async () => {
    const page = await open();
    expect(await page.locator('h1').textContent()).toBe('Access points');
    expect(await page.locator('p[svc-settings]').textContent()).toBe('My venue');
    await page.getByRole('button', { name: 'Load access points' }).click();
    await expect.poll(() => page.locator('li').allTextContents()).toEqual(['North Door']);
    await page.close();
  });

  it('serves no token: the page module and the page carry none, and callApi still reaches the appliance', async () => {
    const module = await (await fetch(`${url}@id/__x00__virtual:gatehouse/plugin`)).text();
    expect(module).toMatch(
      /export const context = \{"baseUrl":"","teamSlug":"default","projectSlug":"default","token":null\}/,
    );
    const secret = token.split('|')[1]!;
    for (const path of ['', '@id/__x00__virtual:gatehouse/plugin', 'src/main.ts', 'index.html']) {
      const text = await (await fetch(`${url}${path}`)).text();
      expect(text, path).not.toContain(secret);
    }
    // The page still calls the API: the dev server adds the token on its way to the appliance.
    const page = await open();
    await page.getByRole('button', { name: 'Load access points' }).click();
    await expect.poll(() => page.locator('li').allTextContents()).toEqual(['North Door']);
    await page.close();
  });

  it("adds the token only to the appliance's API paths, for requests from the dev page's origin, and never over a credential the request brings", async () => {
    const origin = new URL(url).origin;
    const points = (headers: Record<string, string>) =>
      fetch(`${url}api/v1/projects/default/default/access-points`, {
        headers: { accept: 'application/json', ...headers },
      }).then((r) => r.status);
    // A browser's fetch from the page says so (Sec-Fetch-Site; Origin or Referer over plain http to a LAN address).
    expect(await points({ 'sec-fetch-site': 'same-origin' })).toBe(200);
    expect(await points({ origin })).toBe(200);
    expect(await points({ referer: `${origin}/` })).toBe(200);
    // Anything else goes through without it: a program that says nothing, another site, another origin on this box.
    expect(await points({})).toBe(401);
    expect(await points({ 'sec-fetch-site': 'cross-site' })).toBe(401);
    expect(await points({ 'sec-fetch-site': 'same-site', origin: 'http://localhost:9999' })).toBe(401);
    expect(await points({ origin: 'http://evil.example' })).toBe(401);
    expect(await points({ 'sec-fetch-site': 'same-origin', origin: 'http://evil.example' })).toBe(401);
    expect(await points({ referer: 'http://evil.example/page' })).toBe(401);
    // The request's own credential is kept.
    expect(await points({ 'sec-fetch-site': 'same-origin', authorization: 'Bearer 1|not-a-token' })).toBe(401);
    // Channel auth is an appliance API path too (pusher-js posts it from the page).
    const auth = await fetch(`${url}broadcasting/auth`, {
      method: 'POST',
      headers: {
        'sec-fetch-site': 'same-origin',
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
      },
      body: 'socket_id=1.1&channel_name=private-dashboard.project.default.access',
    });
    expect(auth.status, await auth.text()).toBe(200);
  });

  it('forwards no token on the paths that are not the API, whoever asks', async () => {
    // An "appliance" that records what reaches it, behind a second dev server over the same plugin.
    const seen: { url: string; authorization: string | undefined }[] = [];
    const recorder = createServer((req, res) => {
      seen.push({ url: req.url ?? '', authorization: req.headers.authorization });
      res.writeHead(204).end();
    });
    await new Promise<void>((done) => recorder.listen(0, '127.0.0.1', done));
    const target = `http://127.0.0.1:${(recorder.address() as AddressInfo).port}`;
    // A copy of the plugin: the two dev servers keep their own dependency caches (a shared one re-optimised reloads the first one's pages).
    const copy = join(dir, '..', 'recorded');
    cpSync(dir, copy, { recursive: true, filter: (src) => !src.includes('node_modules') });
    const second = runGatehouse(
      ['plugin', 'dev', copy, '--url', target, '--token', '7|recorded-secret', '--port', '0'],
      {},
    );
    try {
      const at = (await second.waitFor(/serving .* at (http:\/\/\S+)/, 60_000))[1]!;
      const page = { 'sec-fetch-site': 'same-origin', origin: new URL(at).origin };
      for (const path of [
        'api/v1/projects',
        'broadcasting/auth',
        'sanctum/csrf-cookie',
        'api/v1/projects?from=program',
      ]) {
        await fetch(`${at}${path}`, {
          method: path.startsWith('broadcasting') ? 'POST' : 'GET',
          headers: path.endsWith('program') ? {} : page,
        });
      }
      expect(seen).toEqual([
        { url: '/api/v1/projects', authorization: 'Bearer 7|recorded-secret' },
        { url: '/broadcasting/auth', authorization: 'Bearer 7|recorded-secret' },
        { url: '/sanctum/csrf-cookie', authorization: undefined },
        { url: '/api/v1/projects?from=program', authorization: undefined },
      ]);
    } finally {
      await second.stop();
      await new Promise((done) => recorder.close(done));
    }
  }, 90_000);

  it('serves no file outside the plugin and the toolkit under /@fs: not the database, not the checkout', async () => {
    const checkout = process.cwd();
    const refused = [
      `${gh.dataDir}/gatehouse.db`,
      `${checkout}/package.json`,
      `${checkout}/config/default.json`,
      `${checkout}/src/errors.ts`,
      `${checkout}/node_modules/vue/package.json`,
      '/etc/passwd',
      `${dir}/../outside.txt`,
    ];
    writeFileSync(join(dir, '..', 'outside.txt'), 'not the plugin');
    for (const file of refused) {
      const res = await fetch(`${url}@fs${file}`);
      const text = await res.text();
      expect([403, 404], file).toContain(res.status);
      expect(text, file).not.toMatch(/SQLite format 3|"name": "gatehouse"|not the plugin|root:/);
    }
    expect((await fetch(`${url}@fs${dir}/app-manifest.json`)).status).toBe(200);
    expect((await fetch(`${url}@fs${checkout}/src/plugins/toolkit/manifest.ts`)).status).toBe(200);
  });

  it('proxies the cookie-session flow, so a plugin can sign a person in on the dev server (the console does)', async () => {
    const csrf = await fetch(`${url}sanctum/csrf-cookie`);
    expect(csrf.status).toBe(204);
    const cookies = csrf.headers.getSetCookie().map((c) => c.split(';')[0]!);
    const xsrf = decodeURIComponent(cookies.find((c) => c.startsWith('XSRF-TOKEN='))!.slice('XSRF-TOKEN='.length));
    const login = await fetch(`${url}api/v1/auth/session`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json',
        cookie: cookies.join('; '),
        'x-xsrf-token': xsrf,
      },
      body: JSON.stringify({ email: ADMIN_EMAIL, password: ADMIN_PASSWORD }),
    });
    expect(login.status).toBe(200);
  });

  it('an edit of app-manifest.json updates the open page without a reload', async () => {
    const page = await open();
    await page.evaluate(() => {
      (window as unknown as { notReloaded: boolean }).notReloaded = true;
    });
    const manifest = readManifest();
    manifest.strings.default.title = 'Doors of the venue';
    manifest.settings.venueName = 'Riverside Hall';
    writeManifest(manifest);
    await expect.poll(() => page.locator('h1').textContent(), { timeout: 10_000 }).toBe('Doors of the venue');
    expect(await page.locator('p[svc-settings]').textContent()).toBe('Riverside Hall');
    expect(await page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded)).toBe(true);
    await page.close();
  });

  it('an invalid manifest shows its error in the page and keeps the last good state; fixing it clears the error', async () => {
    const page = await open();
    const good = readManifest();
    const title = await page.locator('h1').textContent();
    writeFileSync(
      manifestFile(),
      JSON.stringify({ ...good, Settings: { venueName: 'typo' }, strings: { default: { title: 42 } } }, null, 2),
    );
    const notice = page.getByTestId('gatehouse-manifest-errors');
    await notice.waitFor({ timeout: 10_000 });
    // Never a half-written read's syntax error: the first errors shown are this file's own.
    const text = await notice.textContent();
    expect(text).not.toContain('invalid JSON');
    expect(text).toContain('$.strings.default.title');
    expect(text).toContain('did you mean "settings"');
    expect(await page.locator('h1').textContent()).toBe(title);

    // A page opened while the file is invalid starts from the last good manifest, with the errors shown.
    const later = await open();
    expect(await later.locator('h1').textContent()).toBe(title);
    await later.getByTestId('gatehouse-manifest-errors').waitFor();
    await later.close();

    writeManifest({ ...good, strings: { default: { ...good.strings.default, title: 'Fixed' } } });
    await expect.poll(() => page.locator('h1').textContent(), { timeout: 10_000 }).toBe('Fixed');
    await expect.poll(() => notice.count()).toBe(0);
    await page.close();
  });

  it('a manifest that is not JSON shows where it breaks once the file stands still, and a fix clears it', async () => {
    const page = await open();
    const good = readManifest();
    const title = await page.locator('h1').textContent();
    writeFileSync(manifestFile(), '{\n  "name": "doors",\n  "strings": {');
    const notice = page.getByTestId('gatehouse-manifest-errors');
    await notice.waitFor({ timeout: 10_000 });
    expect(await notice.textContent()).toContain('invalid JSON at line 3');
    expect(await page.locator('h1').textContent()).toBe(title);
    writeManifest(good);
    await expect.poll(() => notice.count(), { timeout: 10_000 }).toBe(0);
    await page.close();
  });

  it('a page opened after an edit gets the current manifest', async () => {
    const manifest = readManifest();
    manifest.strings.default.title = 'Opened later';
    writeManifest(manifest);
    // The dev server reads the edit when its watcher sees it; the page is opened after that.
    await expect
      .poll(
        async () => {
          const page = await open();
          const title = await page.locator('h1').textContent();
          await page.close();
          return title;
        },
        { timeout: 10_000 },
      )
      .toBe('Opened later');
  });

  it('a page whose HMR socket opens after an edit was pushed gets that edit when it says which revision it was served', async () => {
    const manifest = readManifest();
    manifest.strings.default.title = 'Seen late';
    writeManifest(manifest);
    // The module as a page would load it now, after the watcher has read the edit.
    const moduleUrl = `${url}@id/__x00__virtual:gatehouse/plugin`;
    await expect
      .poll(async () => (await (await fetch(moduleUrl)).text()).includes('Seen late'), { timeout: 20_000 })
      .toBe(true);
    const current = Number(/revision: (\d+)/.exec(await (await fetch(moduleUrl)).text())![1]);

    const hmr = new WebSocket(url.replace(/^http/, 'ws'), 'vite-hmr');
    const received: {
      event?: string;
      data?: { since?: number; manifest?: { strings: { default: { title: string } } } };
    }[] = [];
    hmr.on('message', (raw) => received.push(JSON.parse(String(raw))));
    await new Promise((done) => hmr.once('open', done));
    const hello = (revision: number) =>
      hmr.send(JSON.stringify({ type: 'custom', event: 'gatehouse:manifest-hello', data: { revision } }));
    // Served the current revision: nothing to catch up on.
    hello(current);
    // Served an older one (its socket opened after the edit went out): the latest read comes back.
    hello(current - 1);
    const answers = () => received.filter((m) => m.event === 'gatehouse:manifest');
    // Generous: under load (every core busy) the answer over the HMR socket has taken over a second.
    await expect.poll(() => answers().length, { timeout: 10_000 }).toBeGreaterThan(0);
    // Answers go out in the order of the hellos: the first one seen is the older revision's.
    expect(answers()[0]!.data!.since).toBe(current - 1);
    expect(answers()[0]!.data!.manifest!.strings.default.title).toBe('Seen late');
    hmr.close();
  }, 45_000);

  it('Ctrl+Shift+D opens the inspector; a double-click edit updates the bound element at once; Escape cancels', async () => {
    const page = await open();
    const panel = page.getByTestId('inspector');
    expect(await panel.count()).toBe(0);
    await page.keyboard.press('Control+Shift+D');
    await panel.waitFor();
    expect(
      await page.getByTestId('inspector-section').evaluateAll((els) => els.map((e) => e.getAttribute('data-section'))),
    ).toEqual(['pluginVars', 'stringsList', 'assetList', 'triggerState']);

    const value = page.locator('[data-testid=inspector-value][data-section=stringsList][data-key=load]');
    await value.dblclick();
    const input = page.locator('[data-testid=inspector-input][data-key=load]');
    await input.fill('Fetch the doors');
    await input.press('Enter');
    await expect.poll(() => page.locator('main button').textContent()).toBe('Fetch the doors');

    // A typed section: a number stays a number, an object is refused and nothing changes.
    const venue = page.locator('[data-testid=inspector-value][data-section=pluginVars][data-key=refreshSeconds]');
    await venue.dblclick();
    const refresh = page.locator('[data-testid=inspector-input][data-key=refreshSeconds]');
    await refresh.fill('{"not": "a setting"}');
    await refresh.press('Enter');
    await page.getByTestId('inspector-error').waitFor();
    await refresh.fill('45');
    await refresh.press('Enter');
    await expect.poll(() => venue.textContent()).toBe('45');

    // Escape cancels an edit: the element keeps its value.
    await value.dblclick();
    await input.fill('Never saved');
    await input.press('Escape');
    expect(await page.locator('main button').textContent()).toBe('Fetch the doors');

    await page.keyboard.press('Escape'); // no edit open: closes the panel
    await expect.poll(() => panel.count()).toBe(0);
    await page.keyboard.press('Control+Shift+D');
    await panel.waitFor();
    await page.keyboard.press('Control+Shift+D');
    await expect.poll(() => panel.count()).toBe(0);
    await page.close();
  });

  it('logged no console errors', () => {
    expect(errors).toEqual([]);
  });
});
