import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AxeBuilder } from '@axe-core/playwright';
import type { Browser, Page } from 'playwright-core';
import { expect } from 'vitest';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startAppliance, type TestAppliance } from './appliance.js';
import { launchChromium, watchedPage } from './chromium.js';
import { runCli } from './process.js';

// The staff console's tests (docs/console.md "Tests"): a real appliance serving dist/console (built
// by the test global setup), the demo venue seeded by `gatehouse demo seed` unless asked not to,
// Debian's Chromium at tablet width (768 × 1024), screenshots under the git-ignored artifacts/console/.

export const CONSOLE_ARTIFACTS = join('artifacts', 'console');
/** The demo venue's project, as REST paths name it. */
export const DEMO_PROJECT = '/api/v1/projects/default/default';

/** What Chromium itself logs for an answered 401 / 403 / 419 / 422 / 429 that the page handled (a 419:
 * a request in flight when the session's cookies went, which ends the session as a 401 does:
 * console/src/session.ts). */
export const EXPECTED_4XX = /^Failed to load resource: the server responded with a status of (401|403|419|422|429)/;
/**
 * What Chromium itself logs when pusher-js's deferred send (a frame sent a tick after queueing it)
 * meets a socket the appliance is closing (4009 when a session ends, or the page closing it on sign-out
 * or a project switch): nothing is lost, the connection is over either way. Seen once in a CI run.
 */
export const CLOSING_SOCKET = /^WebSocket is already in CLOSING or CLOSED state\.$/;

export interface ConsoleHarness {
  gh: TestAppliance;
  browser: Browser;
  page: Page;
  /** Console errors and uncaught exceptions of `page`. */
  errors: string[];
  /** The errors left once Chromium's own lines for handled answers are set aside: a test expects []. */
  unexpectedErrors(): string[];
  /** The page's path and query, the query decoded. */
  path(): string;
  /** A full-page screenshot, artifacts/console/<name>.png. */
  shot(name: string): Promise<unknown>;
  /** axe-core's serious and critical violations on the page as it is now. */
  accessibility(): Promise<string[]>;
  /** Types into the sign-in form and submits it (the page must be on /signin). */
  signIn(email?: string, password?: string): Promise<void>;
  /** Opens `path` and signs in when sent to sign-in; waits for the page's first heading. */
  open(path: string, email?: string, password?: string): Promise<void>;
  close(): Promise<void>;
}

export async function startConsole(
  options: { demo?: boolean; env?: Record<string, string> } = {},
): Promise<ConsoleHarness> {
  const dataDir = mkdtempSync(join(tmpdir(), 'gh-console-'));
  if (options.demo !== false) {
    const seeded = await runCli(['demo', 'seed'], { GATEHOUSE_DATA_DIR: dataDir });
    expect(seeded.code, seeded.stderr).toBe(0);
  }
  const gh = await startAppliance(options.env ?? {}, { dataDir });
  mkdirSync(CONSOLE_ARTIFACTS, { recursive: true });
  const browser = await launchChromium();
  const { page, errors } = await watchedPage(await browser.newContext({ viewport: { width: 768, height: 1024 } }));

  const path = () => {
    const url = new URL(page.url());
    return url.pathname + (url.search ? `?${[...url.searchParams].map(([k, v]) => `${k}=${v}`).join('&')}` : '');
  };
  async function signIn(email = ADMIN_EMAIL, password = ADMIN_PASSWORD): Promise<void> {
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
  }
  return {
    gh,
    browser,
    page,
    errors,
    unexpectedErrors: () => errors.filter((e) => !EXPECTED_4XX.test(e) && !CLOSING_SOCKET.test(e)),
    path,
    shot: (name) => page.screenshot({ path: join(CONSOLE_ARTIFACTS, `${name}.png`), fullPage: true }),
    async accessibility() {
      const { violations } = await new AxeBuilder({ page }).analyze();
      return violations
        .filter((v) => v.impact === 'serious' || v.impact === 'critical')
        .map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
    },
    signIn,
    async open(to, email, password) {
      await page.goto(`${gh.url}${to}`);
      await page.locator('main h1').first().waitFor();
      if (new URL(page.url()).pathname === '/signin') {
        await signIn(email, password);
        // Signing in is a request and a route change: give a box whose cores are busy its time.
        await expect.poll(() => new URL(page.url()).pathname, { timeout: 15_000 }).toBe(to.split('?')[0]);
      }
      await page.locator('main h1').first().waitFor();
    },
    async close() {
      await browser.close();
      await gh.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
