import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONSOLE_CSP } from '../../src/http/console-files.js';
import { startAppliance, type TestAppliance } from '../helpers/appliance.js';

// The staff console's files at / (docs/console.md): dist/console as the test
// global setup's scripts/build.mjs wrote it, served by a real appliance. Types, cache headers,
// the history-routing fallback, the console's CSP, and every route and prefix of the appliance
// left as it was.

const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

describe('the console served at /', () => {
  let gh: TestAppliance;
  let assets: string[];

  beforeAll(async () => {
    gh = await startAppliance();
    const html = readFileSync('dist/console/index.html', 'utf8');
    assets = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]!);
  });
  afterAll(() => gh.destroy());

  const get = (path: string, headers: Record<string, string> = {}) =>
    fetch(gh.url + path, { headers, redirect: 'manual' });

  it('answers index.html at / with no-cache and a policy that lets the page load its own scripts, styles and socket', async () => {
    const res = await get('/', { accept: BROWSER_ACCEPT });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    expect(res.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
    for (const directive of [
      "script-src 'self'",
      "style-src 'self'",
      "connect-src 'self'",
      "frame-ancestors 'none'",
      "object-src 'none'",
    ]) {
      expect(CONSOLE_CSP).toContain(directive);
    }
    expect(CONSOLE_CSP).not.toContain('unsafe');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    const body = await res.text();
    expect(body).toContain('<div id="app"></div>');
    expect(body).not.toMatch(/https?:\/\//); // nothing from another origin: every asset is the box's
  });

  it("serves the build's hashed assets with their types, cached for a year", async () => {
    expect(assets.some((a) => a.endsWith('.js'))).toBe(true);
    expect(assets.some((a) => a.endsWith('.css'))).toBe(true);
    for (const asset of assets) {
      const res = await get(asset);
      expect(res.status, asset).toBe(200);
      expect(res.headers.get('content-type'), asset).toMatch(
        asset.endsWith('.js') ? /^(text|application)\/javascript; charset=utf-8$/ : /^text\/css; charset=utf-8$/,
      );
      expect(res.headers.get('cache-control'), asset).toBe('public, max-age=31536000, immutable');
      expect(res.headers.get('x-content-type-options'), asset).toBe('nosniff');
      expect(Number(res.headers.get('content-length'))).toBe((await res.arrayBuffer()).byteLength);
    }
  });

  it('serves unhashed files (the manifest assets, the favicon) revalidated on every load, and answers 304 to a matching ETag', async () => {
    const logo = await get('/logo.svg');
    expect(logo.status).toBe(200);
    expect(logo.headers.get('content-type')).toBe('image/svg+xml');
    expect(logo.headers.get('cache-control')).toBe('no-cache');
    const etag = logo.headers.get('etag')!;
    expect(etag).toBeTruthy();
    // As a browser revalidates (fetch() alone adds Cache-Control: no-cache to a conditional request, which asks for the body).
    const again = await get('/logo.svg', { 'if-none-match': etag, 'cache-control': 'max-age=0' });
    expect(again.status).toBe(304);
    const index = await get('/');
    expect((await get('/', { 'if-none-match': index.headers.get('etag')!, 'cache-control': 'max-age=0' })).status).toBe(
      304,
    );
  });

  it('answers index.html for console pages it does not know (history routing), GET and HEAD', async () => {
    for (const path of ['/doors', '/signin?redirect=%2Fdoors', '/devices/readers/3']) {
      const res = await get(path, { accept: BROWSER_ACCEPT });
      expect(res.status, path).toBe(200);
      expect(res.headers.get('content-type'), path).toBe('text/html; charset=utf-8');
      expect(res.headers.get('content-security-policy'), path).toBe(CONSOLE_CSP);
      expect(await res.text(), path).toContain('<div id="app"></div>');
    }
    const head = await fetch(`${gh.url}/doors`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(Number(head.headers.get('content-length'))).toBe(readFileSync('dist/console/index.html').length);
    expect(await head.text()).toBe('');
  });

  it('counts its answers under one metrics label, "console"', async () => {
    await get('/doors');
    await get(assets[0]!);
    const text = await (await get('/metrics')).text();
    expect(text).toMatch(/gatehouse_http_requests_total\{method="GET",route="console",status="200"\} \d+/);
    expect(text).not.toMatch(/route="\/doors"|route="\/assets/);
  });

  it('answers 404 in the JSON envelope for a missing file, a dot file, a path out of the folder and other methods', async () => {
    for (const path of [
      '/assets/missing-abc123.js',
      '/favicon.ico',
      '/.build-stamp',
      '/..%2f..%2fpackage.json',
      '/%2e%2e/package.json',
      '/assets/..%2f..%2f..%2fpackage.json',
    ]) {
      const res = await get(path);
      expect(res.status, path).toBe(404);
      expect(res.headers.get('content-type'), path).toMatch(/^application\/json/);
    }
    const post = await fetch(`${gh.url}/doors`, { method: 'POST' });
    expect(post.status).toBe(404);
    expect(post.headers.get('content-type')).toMatch(/^application\/json/);
  });

  it('never shadows a route or prefix of the appliance: API, broadcasting, Pusher, webhooks, Sanctum, metrics, health', async () => {
    const json = async (path: string, status: number, init: RequestInit = {}) => {
      const res = await fetch(gh.url + path, { headers: { accept: BROWSER_ACCEPT }, ...init });
      expect(res.status, path).toBe(status);
      expect(res.headers.get('content-type') ?? '', path).not.toMatch(/text\/html/);
      return res;
    };
    await json('/api', 404);
    await json('/api/v1/nothing-here', 404);
    await json('/api/v1/me', 401);
    await json('/broadcasting/auth', 405);
    await json('/broadcasting/nothing', 404);
    await json('/app/some-key', 404);
    await json('/apps/1/events', 405);
    await json('/webhook/v1/nothing', 404);
    await json('/sanctum/csrf-cookie', 204);
    await json('/sanctum/other', 404);
    await json('/health', 200);
    await json('/ready', 200);
    await json('/mqtt', 404);
    const metrics = await json('/metrics', 200);
    expect(metrics.headers.get('content-type')).toMatch(/^text\/plain/);
    // The API's own strict policy and no-store stay on its answers.
    const me = await json('/api/v1/me', 401);
    expect(me.headers.get('content-security-policy')).toBe("default-src 'none'; frame-ancestors 'none'");
    expect(me.headers.get('cache-control')).toBe('no-store');
  });
});

describe('the console before it is built', () => {
  let gh: TestAppliance;
  const empty = mkdtempSync(join(tmpdir(), 'gh-no-console-'));

  beforeAll(async () => {
    gh = await startAppliance({ GATEHOUSE_HTTP_CONSOLE_DIR: empty });
  });
  afterAll(async () => {
    await gh.destroy();
    rmSync(empty, { recursive: true, force: true });
  });

  it('answers 503 saying how to build it: a page for a browser, the error envelope otherwise; the API is unaffected', async () => {
    const page = await fetch(`${gh.url}/`, { headers: { accept: BROWSER_ACCEPT } });
    expect(page.status).toBe(503);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(await page.text()).toContain('run npm run build');
    const api = await gh.request('GET', '/doors');
    expect(api.status).toBe(503);
    expect(api.body).toEqual({ message: expect.stringContaining('The staff console is not built') });
    expect((await gh.request('GET', '/health')).status).toBe(200);
    expect((await gh.request('GET', '/api/v1/me')).status).toBe(401);
  });
});
