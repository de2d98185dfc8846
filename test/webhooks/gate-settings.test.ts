import { describe, expect, it } from 'vitest';
import { createUser, ManualClock, startAppliance } from '../helpers/appliance.js';
import { createSource, signedPost } from '../helpers/signed-webhooks.js';
import { allowed, buildAllowlist } from '../../src/webhooks/sources.js';

// The gate's settings (docs/webhooks-incoming.md): another product's header names, IPv4-mapped
// addresses in allowlists, unsigned development mode, and the log's retention bounds.

describe('incoming webhook settings', () => {
  it("takes another product's header names when configured", async () => {
    const gh = await startAppliance({ GATEHOUSE_INCOMING_WEBHOOKS_HEADER_PREFIX: 'Acme' });
    try {
      const token = await gh.token();
      await gh.request('POST', '/api/v1/projects/default/default/gateways', { token, body: { identifier: 'GW-1' } });
      const { secret } = await createSource(gh, token, 'gateway-status');
      const body = JSON.stringify({ gateway_id: 'GW-1', status: 'online' });
      const svc = await signedPost(gh, '/webhook/v1/mqtt-gateway-status', body, secret);
      expect(svc.status).toBe(401);
      expect(svc.body).toEqual({ error: 'missing_signature', message: expect.stringContaining('X-Acme-Signature') });
      const acme = await signedPost(gh, '/webhook/v1/mqtt-gateway-status', body, secret, {
        header: 'X-Acme-Signature',
        headers: { 'X-Acme-Timestamp': String(Math.floor(Date.now() / 1000) - 1000) },
      });
      expect(acme.body.error).toBe('stale_timestamp'); // the timestamp header follows the prefix too
      expect(
        (await signedPost(gh, '/webhook/v1/mqtt-gateway-status', `${body} `, secret, { header: 'X-Acme-Signature' }))
          .status,
      ).toBe(200);
      // ...and so does the header that marks a retry answered with its first answer.
      const retry = await signedPost(gh, '/webhook/v1/mqtt-gateway-status', `${body} `, secret, {
        header: 'X-Acme-Signature',
      });
      expect([retry.status, retry.headers.get('x-acme-replayed'), retry.headers.get('x-svc-replayed')]).toEqual([
        200,
        'true',
        null,
      ]);
    } finally {
      await gh.destroy();
    }
  });

  it('matches IPv4-mapped IPv6 addresses as IPv4, and IPv6 ranges', () => {
    const list = buildAllowlist(['10.0.0.0/8', '192.0.2.5', '2001:db8::/32']);
    expect(allowed(list, '::ffff:10.0.0.5')).toBe(true);
    expect(allowed(list, '10.255.1.1')).toBe(true);
    expect(allowed(list, '192.0.2.5')).toBe(true);
    expect(allowed(list, '192.0.2.6')).toBe(false);
    expect(allowed(list, '::ffff:192.0.2.6')).toBe(false);
    expect(allowed(list, '2001:db8:1::9')).toBe(true);
    expect(allowed(list, '2001:db9::1')).toBe(false);
    expect(allowed(list, 'not-an-address')).toBe(false);
  });

  it('admits unsigned requests only when allowUnsigned is set (development), naming no project', async () => {
    const gh = await startAppliance({ GATEHOUSE_INCOMING_WEBHOOKS_ALLOW_UNSIGNED: 'true' });
    try {
      const token = await gh.token();
      await gh.request('POST', '/api/v1/projects/default/default/gateways', { token, body: { identifier: 'GW-1' } });
      const res = await gh.request('POST', '/webhook/v1/mqtt-gateway-status', {
        body: { gateway_id: 'GW-1', status: 'online' },
      });
      expect(res.status).toBe(200);
      // A signature that is there is still checked.
      expect(
        (
          await signedPost(
            gh,
            '/webhook/v1/mqtt-gateway-status',
            { gateway_id: 'GW-1', status: 'offline' },
            'whsec_wrong',
          )
        ).status,
      ).toBe(401);
    } finally {
      await gh.destroy();
    }
  });

  it('bounds the log by age and by rows', async () => {
    const clock = new ManualClock(Date.parse('2026-11-23T12:00:00Z'));
    // Refused requests have their own row budget (docs/security.md, attack 10): these are all refused.
    const gh = await startAppliance(
      {
        GATEHOUSE_INCOMING_WEBHOOKS_LOG_MAX_NOT_APPLIED_ROWS: '100',
        GATEHOUSE_INCOMING_WEBHOOKS_LOG_RETENTION_DAYS: '30',
      },
      { clock },
    );
    try {
      const token = await gh.token();
      const count = async () =>
        (await gh.request('GET', '/api/v1/incoming-webhooks?per_page=1', { token })).body.meta.total as number;
      for (let i = 0; i < 105; i++) await gh.request('POST', '/webhook/v1/access-event', { body: { i } });
      expect(await count()).toBe(105);
      expect(gh.app.deps.webhookLog.prune()).toBe(5);
      expect(await count()).toBe(100);
      const listed = (await gh.request('GET', '/api/v1/incoming-webhooks?status=401&per_page=2', { token })).body;
      expect(listed.data[0]).toMatchObject({
        endpoint: '/webhook/v1/access-event',
        method: 'POST',
        status: 401,
        reason: 'missing_signature',
        source_id: null,
        project_id: null,
        body_head: '{"i":104}',
      });
      expect((await gh.request('GET', '/api/v1/incoming-webhooks?status=200', { token })).body.meta.total).toBe(0);
      clock.advance(31 * 86_400_000);
      expect(gh.app.deps.webhookLog.prune()).toBe(100);
      expect(await count()).toBe(0);
      // Unmatched requests are for administrators only.
      const staff = await createUser(gh, token, 'staff@example.test', ['*']);
      expect((await gh.request('GET', '/api/v1/incoming-webhooks', { token: staff.token })).status).toBe(403);
    } finally {
      await gh.destroy();
    }
  });
});
