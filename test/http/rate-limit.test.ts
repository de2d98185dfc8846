import { afterEach, describe, expect, it } from 'vitest';
import { startAppliance, type TestAppliance } from '../helpers/appliance.js';

describe('rate limits', () => {
  let gh: TestAppliance | undefined;
  afterEach(async () => {
    await gh?.destroy();
    gh = undefined;
  });

  it('answers 429 at the 61st standard request in a minute, with Retry-After and the X-RateLimit headers', async () => {
    gh = await startAppliance({ GATEHOUSE_RATE_LIMIT_STANDARD: '60' });
    const token = await gh.token(); // token creation counts against the client address, not the token
    for (let i = 1; i <= 60; i++) {
      const res = await gh.request('GET', '/api/v1/me', { token });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-ratelimit-limit')).toBe('60');
      expect(res.headers.get('x-ratelimit-remaining')).toBe(String(60 - i));
    }
    const limited = await gh.request('GET', '/api/v1/me', { token });
    expect(limited.status).toBe(429);
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(Number(limited.headers.get('x-ratelimit-reset'))).toBeGreaterThanOrEqual(Math.floor(Date.now() / 1000));
    expect(limited.body).toEqual({ message: 'Too Many Attempts.', retry_after: retryAfter });

    // Each token has its own budget.
    const other = await gh.token();
    expect((await gh.request('GET', '/api/v1/me', { token: other })).status).toBe(200);
  });

  it('gives a Retry-After that is honest: refused before it, served after it', async () => {
    gh = await startAppliance({ GATEHOUSE_RATE_LIMIT_STANDARD: '3', GATEHOUSE_RATE_LIMIT_WINDOW_SECONDS: '2' });
    for (let i = 0; i < 3; i++) expect((await gh.request('GET', '/sanctum/csrf-cookie')).status).toBe(204);
    const limited = await gh.request('GET', '/sanctum/csrf-cookie');
    expect(limited.status).toBe(429);
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(2);
    expect((await gh.request('GET', '/sanctum/csrf-cookie')).status).toBe(429);
    await new Promise((r) => setTimeout(r, retryAfter * 1000 + 50));
    expect((await gh.request('GET', '/sanctum/csrf-cookie')).status).toBe(204);
  });

  it('limits unauthenticated and badly authenticated requests per client address', async () => {
    gh = await startAppliance({ GATEHOUSE_RATE_LIMIT_STANDARD: '5' });
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await gh.request('GET', '/api/v1/me', { token: `${i}|guess` })).status);
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429]);
  });

  it('counts the attendee list against the search budget only when it searches; a plain list, a filter or an empty search is standard', async () => {
    gh = await startAppliance({ GATEHOUSE_RATE_LIMIT_STANDARD: '60', GATEHOUSE_RATE_LIMIT_SEARCH: '2' });
    const token = await gh.token();
    const list = (query = '') => gh!.request('GET', `/api/v1/projects/default/default/attendees${query}`, { token });
    for (const query of ['', '?page=2', '?status=active', '?search=', '?search=%20%20', '', '?attendee_type=vip']) {
      const res = await list(query);
      expect(res.status, query).toBe(200);
      expect(res.headers.get('x-ratelimit-limit'), query).toBe('60');
    }
    const first = await list('?search=Ada');
    expect(first.status).toBe(200);
    expect([first.headers.get('x-ratelimit-limit'), first.headers.get('x-ratelimit-remaining')]).toEqual(['2', '1']);
    expect((await list('?search=Grace&status=active')).status).toBe(200);
    expect((await list('?search=Alan')).status).toBe(429);
    // The search budget spent, the list still answers.
    const plain = await list();
    expect(plain.status).toBe(200);
    expect(plain.headers.get('x-ratelimit-remaining')).toBe('52');
  });

  it('never limits operations endpoints, and sends no limit headers when limits are off', async () => {
    gh = await startAppliance({ GATEHOUSE_RATE_LIMIT_STANDARD: '2' });
    for (let i = 0; i < 5; i++) expect((await gh.request('GET', '/health')).status).toBe(200);
    await gh.destroy();
    gh = await startAppliance({ GATEHOUSE_RATE_LIMIT_STANDARD: '0' });
    const token = await gh.token();
    for (let i = 0; i < 80; i++) {
      const res = await gh.request('GET', '/api/v1/me', { token });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-ratelimit-limit')).toBeNull();
    }
  });
});

describe('rate classes', () => {
  it('keeps separate budgets: 10 bulk and 20 search requests a minute by default, apart from standard', async () => {
    const { RateLimits } = await import('../../src/http/rate-limit.js');
    const limits = new RateLimits({
      standard: 60,
      bulk: 10,
      search: 20,
      windowSeconds: 60,
      sync: 600,
      syncWindowSeconds: 10,
    });
    const run = async (cls: 'bulk' | 'search' | 'standard', n: number) => {
      let ok = 0;
      for (let i = 0; i < n; i++) {
        try {
          await limits.consume(cls, 'token:1');
          ok++;
        } catch (err) {
          expect((err as { status: number }).status).toBe(429);
        }
      }
      return ok;
    };
    expect(await run('bulk', 12)).toBe(10);
    expect(await run('search', 25)).toBe(20);
    expect(await run('standard', 61)).toBe(60);
    expect(await run('bulk', 1)).toBe(0);
  });
});
