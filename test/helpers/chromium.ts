import { existsSync } from 'node:fs';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';

// Debian's Chromium driven by playwright-core (browser downloads do not work here; .ci/run installs
// the chromium package). CHROMIUM_PATH overrides where it is.

export const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(chromiumPath))
    throw new Error(
      `Chromium is not at ${chromiumPath}: apt-get install chromium (.ci/run does), or set CHROMIUM_PATH`,
    );
  return chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ['--no-sandbox', '--disable-dev-shm-usage'],
  });
}

/** A page that fails the test on any console error or uncaught exception: they are collected in `errors`. In a context of its own when given one (axe-core's builder wants that). */
export async function watchedPage(browser: Browser | BrowserContext): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on('console', (msg) => {
    if (msg.type() === 'error') errors.push(msg.text());
  });
  page.on('pageerror', (err) => errors.push(err.message));
  return { page, errors };
}
