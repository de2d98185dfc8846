import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';
import WebSocket from 'ws';
import { chromiumPath } from '../test/helpers/chromium.js';
import { freePort, sleep } from './process-stats.js';

// bench:console's browser: Debian's Chromium launched by playwright-core (headless, the tests' launch
// arguments), with the console's page opened in a browser context Playwright does not know, so that
// Playwright lets go of it, and driven over a DevTools connection of our own that enables only what
// the bench reads. Why: Playwright enables the Network domain on every page it drives, and Chromium
// then reports every WebSocket frame to it from the page's main thread. Measured here (a page taking
// 2,000 small JSON messages a second and nothing else): its renderer used 41 % of a core under
// Playwright against 21-22 % with no DevTools client, about 0.1 ms more per message on the very thread
// whose frames are counted, which a staff tablet does not pay. The console under load takes ~2,000
// socket messages a second (a grant and its zone's new count per scan).

type Params = Record<string, unknown>;

/** A minimal DevTools protocol client for one page target. */
export class CdpPage {
  readonly #ws: WebSocket;
  #nextId = 1;
  readonly #pending = new Map<
    number,
    { resolve: (result: unknown) => void; reject: (err: Error) => void; method: string }
  >();
  readonly #listeners = new Map<string, ((params: Params) => void)[]>();

  private constructor(ws: WebSocket) {
    this.#ws = ws;
    ws.on('message', (data) => {
      const message = JSON.parse(data.toString()) as {
        id?: number;
        result?: unknown;
        error?: { message: string };
        method?: string;
        params?: Params;
      };
      if (message.id !== undefined) {
        const call = this.#pending.get(message.id);
        this.#pending.delete(message.id);
        if (message.error) call?.reject(new Error(`${call.method}: ${message.error.message}`));
        else call?.resolve(message.result);
        return;
      }
      for (const listener of this.#listeners.get(message.method ?? '') ?? []) listener(message.params ?? {});
    });
    ws.on('close', () => {
      for (const call of this.#pending.values())
        call.reject(new Error(`${call.method}: the DevTools connection closed`));
      this.#pending.clear();
    });
  }

  static connect(url: string): Promise<CdpPage> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, { perMessageDeflate: false, maxPayload: 512 * 1024 * 1024 });
      ws.once('open', () => resolve(new CdpPage(ws)));
      ws.once('error', reject);
    });
  }

  send<T = Params>(method: string, params: Params = {}): Promise<T> {
    const id = this.#nextId++;
    return new Promise<T>((resolve, reject) => {
      this.#pending.set(id, { resolve: resolve as (result: unknown) => void, reject, method });
      this.#ws.send(JSON.stringify({ id, method, params }));
    });
  }

  on(method: string, listener: (params: Params) => void): void {
    this.#listeners.set(method, [...(this.#listeners.get(method) ?? []), listener]);
  }

  /** The value of `expression` (awaited when a promise); the page's exception as an error. */
  async evaluate<T>(expression: string): Promise<T> {
    const { result, exceptionDetails } = await this.send<{
      result: { value?: T };
      exceptionDetails?: { text: string; exception?: { description?: string } };
    }>('Runtime.evaluate', {
      expression,
      awaitPromise: true,
      returnByValue: true,
    });
    if (exceptionDetails)
      throw new Error(`in the page: ${exceptionDetails.exception?.description ?? exceptionDetails.text}`);
    return result.value as T;
  }

  /** Polls `expression` every 100 ms until it is truthy. */
  async waitFor(expression: string, what: string, timeoutMs = 30_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    while (!(await this.evaluate<boolean>(`Boolean(${expression})`))) {
      if (Date.now() > until) throw new Error(`the page did not show ${what} within ${timeoutMs / 1000} s`);
      await sleep(100);
    }
  }

  close(): void {
    this.#ws.close();
  }
}

export interface ConsoleBrowser {
  browser: Browser;
  page: CdpPage;
}

/** Chromium, and a blank page at `width` × `height` in a context of its own, ours alone. */
export async function openBrowser(width: number, height: number): Promise<ConsoleBrowser> {
  if (!existsSync(chromiumPath))
    throw new Error(`Chromium is not at ${chromiumPath}: apt-get install chromium, or set CHROMIUM_PATH`);
  const port = await freePort();
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ['--no-sandbox', '--disable-dev-shm-usage', `--remote-debugging-port=${port}`],
  });
  try {
    const session = await browser.newBrowserCDPSession();
    const { browserContextId } = await session.send('Target.createBrowserContext', { disposeOnDetach: false });
    const { targetId } = await session.send('Target.createTarget', {
      url: 'about:blank',
      browserContextId,
      width,
      height,
      newWindow: true,
    });
    const page = await CdpPage.connect(`ws://127.0.0.1:${port}/devtools/page/${targetId}`);
    await page.send('Emulation.setDeviceMetricsOverride', { width, height, deviceScaleFactor: 1, mobile: false });
    return { browser, page };
  } catch (err) {
    await browser.close();
    throw err;
  }
}
