import { networkInterfaces } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { startAppliance, type TestAppliance } from '../helpers/appliance.js';

// Who may read /metrics (docs/security.md, attack 12): metrics.access is `open` (the default, so existing
// scrapers keep working), `loopback` (clients on the box itself, by the socket's address) or
// `token` (a bearer token of its own, metrics.token). Requests over real sockets; the loopback
// mode is tested from this machine's own non-loopback address.

const METRICS_TOKEN = 'scrape-me-0123456789abcdef';
/** An address of this machine that is not loopback, if it has one. */
const external = Object.values(networkInterfaces())
  .flat()
  .find((i) => i && i.family === 'IPv4' && !i.internal)?.address;

describe('metrics access', () => {
  let gh: TestAppliance | undefined;
  afterEach(async () => {
    await gh?.destroy();
    gh = undefined;
  });

  const scrape = (base: string, headers: Record<string, string> = {}) => fetch(`${base}/metrics`, { headers });

  it('serves anyone by default, as before', async () => {
    gh = await startAppliance();
    const res = await scrape(gh.url);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('# HELP');
  });

  it.skipIf(!external)(
    'serves only clients on the box itself in loopback mode, whatever X-Forwarded-For says',
    async () => {
      gh = await startAppliance({
        GATEHOUSE_HTTP_HOST: '0.0.0.0',
        GATEHOUSE_METRICS_ACCESS: 'loopback',
        GATEHOUSE_HTTP_TRUST_PROXY: 'true',
      });
      const local = await scrape(`http://127.0.0.1:${gh.app.httpPort}`);
      expect(local.status).toBe(200);
      expect(await local.text()).toContain('# HELP');
      const remote = await scrape(`http://${external}:${gh.app.httpPort}`, { 'x-forwarded-for': '127.0.0.1' });
      expect(remote.status).toBe(403);
      expect(await remote.json()).toEqual({
        message: 'Metrics are served to clients on this box only (metrics.access is "loopback").',
      });
      // The other operations endpoints stay open: a supervisor elsewhere still probes them.
      expect((await fetch(`http://${external}:${gh.app.httpPort}/health`)).status).toBe(200);
      expect((await fetch(`http://${external}:${gh.app.httpPort}/ready`)).status).toBe(200);
    },
  );

  it('asks for the metrics token in token mode, and takes no other', async () => {
    gh = await startAppliance({ GATEHOUSE_METRICS_ACCESS: 'token', GATEHOUSE_METRICS_TOKEN: METRICS_TOKEN });
    const ok = await scrape(gh.url, { authorization: `Bearer ${METRICS_TOKEN}` });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain('# HELP');
    const apiToken = await gh.token();
    for (const authorization of [
      undefined,
      'Bearer',
      `Bearer ${METRICS_TOKEN}x`,
      `Bearer ${METRICS_TOKEN.slice(0, -1)}`,
      `Basic ${Buffer.from(`x:${METRICS_TOKEN}`).toString('base64')}`,
      `Bearer ${apiToken}`,
    ]) {
      const res = await scrape(gh.url, authorization ? { authorization } : {});
      expect(res.status, authorization).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer realm="metrics"');
      expect(await res.json()).toEqual({ message: 'Unauthenticated.' });
    }
  });

  it('refuses to start in token mode without a token', async () => {
    const outcome = (env: Record<string, string>) =>
      startAppliance(env).then(
        async (started) => (await started.destroy(), 'started'),
        (err: Error) => err.message,
      );
    expect(await outcome({ GATEHOUSE_METRICS_ACCESS: 'token' })).toMatch(/metrics\.token/);
    expect(await outcome({ GATEHOUSE_METRICS_ACCESS: 'token', GATEHOUSE_METRICS_TOKEN: 'short' })).toMatch(
      /metrics\.token/,
    );
  });
});
