import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, watchedPage } from '../helpers/chromium.js';
import { CLOSING_SOCKET, EXPECTED_4XX } from '../helpers/console.js';
import { PROCESS_ADMIN, type ProcessAppliance, startProcessAppliance } from '../helpers/process-appliance.js';

// The console's defences as a browser meets them (docs/console.md; docs/security.md "A stolen edge":
// what held): the built appliance in its own process, Debian's Chromium. Markup that staff, imports,
// partners or an edge's upload put in names is shown as text on every screen that shows it, and runs
// nothing; the page's own policy (CSP, X-Frame-Options) holds against a page of another origin that
// frames it or posts to it; the session cookie is HttpOnly and SameSite, and a write without the
// CSRF header is 419.

const A = '/api/v1/projects/default/default';
const CONSOLE_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'";

/** Names that would run or make elements if any screen put them into the page as HTML (or compiled them as a Vue template). */
const MARKUP = {
  zone: `<img src=x onerror="window.__xss='zone'">Hall`,
  door: `<script>window.__xss='door'</script>Gate`,
  first: `Ada<svg onload="window.__xss='first'"></svg>`,
  last: `{{ constructor.constructor("window.__xss='last'")() }}`,
  reason: `<iframe srcdoc="<script>parent.__xss='reason'</script>"></iframe>`,
  source: `<a href="javascript:window.__xss='source'" id=xss-link>Partner</a>`,
  gateway: `<b id=xss-bold>GW</b>`,
};

describe('the console holds, in Chromium', () => {
  let gh: ProcessAppliance;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let errors: string[];
  let dialogs = 0;
  let elsewhere: Server;
  let elsewhereUrl: string;
  let elsewherePage = '';

  beforeAll(async () => {
    gh = await startProcessAppliance();
    const token = await gh.token();
    const post = async (path: string, body: unknown) => {
      const res = await gh.request('POST', path, { token, body });
      expect(res.status, `${path}: ${res.text}`).toBe(201);
      return res.body.data as { id: number };
    };
    const zone = await post(`${A}/access-zones`, { name: MARKUP.zone });
    const door = await post(`${A}/access-points`, { name: MARKUP.door, access_zone_id: zone.id, direction: 'in' });
    const type = (await post(`${A}/attendee-types`, { name: 'Guest', zone_ids: [zone.id] })) as unknown as {
      slug: string;
    };
    const attendee = await post(`${A}/attendees`, {
      first_name: MARKUP.first,
      last_name: MARKUP.last,
      attendee_type: type.slug,
    });
    const credential = await post(`${A}/attendees/${attendee.id}/credentials`, { value: 'T-1' });
    await post(`${A}/blocklist`, { attendee_id: attendee.id, reason: MARKUP.reason });
    await post(`${A}/integrations/webhooks`, { kind: 'access-event', name: MARKUP.source });
    await post(`${A}/gateways`, { identifier: 'GW-1', name: MARKUP.gateway });
    expect(credential.id).toBeGreaterThan(0);
    // A scan, so the live doors' log has a row naming the attendee and the gate.
    const scanned = await gh.request('POST', `${A}/access-points/${door.id}/scan`, {
      token,
      body: { credential_value: 'T-1' },
    });
    expect(scanned.status, scanned.text).toBe(200);

    // A page of another origin on the same host (the same site: ports do not make a site).
    elsewhere = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(elsewherePage);
    });
    await new Promise<void>((resolve) => elsewhere.listen(0, '127.0.0.1', resolve));
    elsewhereUrl = `http://127.0.0.1:${(elsewhere.address() as AddressInfo).port}/`;

    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1024, height: 900 } });
    ({ page, errors } = await watchedPage(context));
    page.on('dialog', (d) => {
      dialogs++;
      void d.dismiss();
    });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => elsewhere?.close(resolve));
    await gh?.destroy();
  });

  /** Nothing the names carried ran or became an element. */
  const nothingRan = async (where: string) => {
    const found = await page.evaluate(() => ({
      xss: (window as { __xss?: unknown }).__xss ?? null,
      elements: [
        ...document.querySelectorAll('img[src="x"], svg[onload], iframe, #xss-link, #xss-bold, [onerror], [onload]'),
      ].map((e) => e.outerHTML),
      inlineScripts: [...document.querySelectorAll('script:not([src])')].length,
    }));
    expect(found, where).toEqual({ xss: null, elements: [], inlineScripts: 0 });
    expect(dialogs, where).toBe(0);
  };
  const shows = async (texts: string[], where: string) => {
    for (const text of texts)
      await expect
        .poll(() => page.locator('main').textContent(), { message: `${where}: ${text}`, timeout: 10_000 })
        .toContain(text);
  };

  it('serves its pages with the strict policy and refuses to be framed', async () => {
    const res = await page.goto(`${gh.url}/signin`);
    expect(res!.headers()['content-security-policy']).toBe(CONSOLE_CSP);
    expect(res!.headers()['x-frame-options']).toBe('DENY');
    await page.getByLabel('Email').fill(PROCESS_ADMIN.email);
    await page.getByLabel('Password').fill(PROCESS_ADMIN.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => new URL(page.url()).pathname).toBe('/doors');

    const { page: framing, errors: framingErrors } = await watchedPage(context);
    elsewherePage = `<!doctype html><title>elsewhere</title><iframe id=f src="${gh.url}/doors" width=800 height=600></iframe>`;
    await framing.goto(elsewhereUrl);
    // Chromium judges frame-ancestors first (X-Frame-Options is for browsers without CSP 2).
    await expect
      .poll(
        () =>
          framingErrors.some((e) =>
            /Framing .* violates .*"frame-ancestors 'none'"\. The request has been blocked/.test(e),
          ),
        { timeout: 10_000 },
      )
      .toBe(true);
    const frame = framing.frames().find((f) => f !== framing.mainFrame());
    expect(frame!.url()).toBe('chrome-error://chromewebdata/');
    expect(await frame!.locator('main').count()).toBe(0); // the console never rendered inside it
    await framing.close();
  });

  it('keeps the session cookie from scripts (HttpOnly) and from other sites (SameSite)', async () => {
    const cookies = await context.cookies(gh.url);
    const session = cookies.find((c) => c.name === 'gatehouse_session');
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Lax' });
    expect(cookies.find((c) => c.name === 'XSRF-TOKEN')).toMatchObject({ httpOnly: false, sameSite: 'Lax' });
    expect(await page.evaluate(() => document.cookie)).not.toContain('gatehouse_session');
  });

  it('answers 419 to a write of the signed-in browser without the CSRF header, from the page or from a page of another origin', async () => {
    const before = (await gh.request('GET', `${A}/access-zones`, { token: await gh.token() })).body.data.length;
    const fromPage = await page.evaluate(async (path) => {
      const res = await fetch(path, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ name: 'Forged' }),
      });
      return { status: res.status, body: await res.json() };
    }, `${A}/access-zones`);
    expect(fromPage).toEqual({ status: 419, body: { message: 'Token Mismatch' } });

    const forger = await context.newPage();
    elsewherePage = `<!doctype html><form method=post action="${gh.url}${A}/access-zones" enctype="text/plain"><input name='{"name":"Forged","x":"' value='"}'></form><script>document.forms[0].submit()</script>`;
    const answered = forger.waitForResponse((r) => r.url().endsWith(`${A}/access-zones`));
    await forger.goto(elsewhereUrl);
    expect((await answered).status()).toBe(419);
    await forger.close();
    expect((await gh.request('GET', `${A}/access-zones`, { token: await gh.token() })).body.data).toHaveLength(before);
  });

  it('shows markup in names as text on every screen that shows them, and runs none of it', async () => {
    await page.goto(`${gh.url}/doors`);
    await shows([MARKUP.zone, MARKUP.door, MARKUP.first], 'live doors');
    await nothingRan('live doors');

    await page.goto(`${gh.url}/access`);
    await shows([MARKUP.zone, MARKUP.door, MARKUP.reason], 'access');
    await page.getByLabel('Name, email or ticket id').fill('Ada');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await shows([MARKUP.first, MARKUP.last], 'access, attendees');
    await nothingRan('access');

    await page.goto(`${gh.url}/devices`);
    await shows([MARKUP.gateway], 'devices');
    await nothingRan('devices');

    await page.goto(`${gh.url}/webhooks`);
    await shows([MARKUP.source], 'webhooks');
    await nothingRan('webhooks');

    await page.goto(`${gh.url}/analytics`);
    await expect
      .poll(() => page.getByLabel('Zone', { exact: true }).locator('option').allTextContents())
      .toContain(MARKUP.zone);
    await nothingRan('analytics');

    const forged = /^Failed to load resource: the server responded with a status of 419/; // the forged fetch above
    expect(errors.filter((e) => !EXPECTED_4XX.test(e) && !CLOSING_SOCKET.test(e) && !forged.test(e))).toEqual([]);
  });
});
