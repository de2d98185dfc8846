import { createServer, type Server } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROTOCOL_VERSION } from '../../src/http/sync-protocol-version.js';
import { startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { rawClient, subscribeAs, wsUrl } from '../helpers/pusher.js';
import { startReceiver } from '../helpers/receiver.js';
import { until } from '../helpers/sync-world.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { selfSignedCertificate } from '../helpers/certificate.js';

// The edge's link to its cloud (docs/sync.md), cloud and edges in this process:
// link down and up told as webhooks and on the console channel, a revoked edge refused, a cloud
// of another protocol version (sync stops, nothing applied), TLS with a private CA file, an
// edge whose clock is ten minutes ahead.

const P = '/api/v1/projects/default/default';
const FAST = {
  GATEHOUSE_SYNC_REQUEST_TIMEOUT_MS: '1000',
  GATEHOUSE_SYNC_BACKOFF_MIN_MS: '50',
  GATEHOUSE_SYNC_BACKOFF_MAX_MS: '300',
  GATEHOUSE_SYNC_LONG_POLL_SECONDS: '2',
};

describe('the cloud link', () => {
  let cloud: TestAppliance;
  let cloudToken: string;
  const stops: (() => Promise<unknown>)[] = [];
  const onCloud = (method: string, path: string, body?: unknown) =>
    cloud.request(method, `${P}${path}`, { token: cloudToken, ...(body === undefined ? {} : { body }) });
  const issue = async (name: string) =>
    (await onCloud('POST', '/sync/edges', { name })).body.data as { id: number; token: string };
  const edgeWith = async (env: Record<string, string>, options: Parameters<typeof startAppliance>[1] = {}) => {
    const edge = await startAppliance({ GATEHOUSE_ROLE: 'edge', ...FAST, ...env }, options);
    stops.push(() => edge.destroy());
    return { edge, token: await edge.token() };
  };

  beforeAll(async () => {
    cloud = await startAppliance({ GATEHOUSE_ROLE: 'cloud' });
    cloudToken = await cloud.token();
    const zone = (await onCloud('POST', '/access-zones', { name: 'Hall' })).body.data.id;
    await onCloud('POST', '/access-points', { name: 'Gate', access_zone_id: zone });
    await onCloud('POST', '/attendee-types', { name: 'Guest', zone_ids: [zone] });
    const attendee = (await onCloud('POST', '/attendees', { first_name: 'Ada', attendee_type: 'guest' })).body.data.id;
    await onCloud('POST', `/attendees/${attendee}/credentials`, { value: 'CLOCK-1' });
  });
  afterAll(async () => {
    for (const stop of stops.reverse()) await stop();
    await cloud.destroy();
  });

  it('tells sync.link_down and sync.link_up once per outage, as webhooks and on the console channel', async () => {
    const proxy = new TcpProxy(Number(new URL(cloud.url).port));
    await proxy.start();
    stops.push(() => proxy.stop());
    const { edge, token } = await edgeWith({
      GATEHOUSE_CLOUD_URL: proxy.url,
      GATEHOUSE_SYNC_TOKEN: (await issue('told')).token,
      GATEHOUSE_WEBHOOK_ALLOW_INSECURE: '1',
    });
    await until(
      'online',
      () => edge.request('GET', `${P}/sync/status`, { token }),
      (r) => r.body.data.online === true,
    );
    const receiver = await startReceiver();
    stops.push(() => receiver.close());
    const projectId = (await edge.request('GET', P, { token })).body.data.id;
    expect(
      (
        await edge.request('POST', '/api/v1/webhook/subscribe', {
          token,
          body: { url: receiver.url, events: ['sync.link_down', 'sync.link_up'], project_id: projectId },
        })
      ).status,
    ).toBe(201);
    const ws = await rawClient(wsUrl(edge));
    await subscribeAs(edge, ws, { token }, 'private-console.project.default.devices');

    proxy.set('cut');
    const downFrame = await ws.next('SyncLinkDown', 15_000);
    expect(downFrame.data).toMatchObject({ edge_id: expect.any(Number), reason: expect.any(String) });
    await new Promise((r) => setTimeout(r, 1500)); // several failed rounds: still one link_down
    proxy.set('pass');
    await ws.next('SyncLinkUp', 15_000);
    const [down, up] = await receiver.waitFor(2);
    expect(down!.body).toMatchObject({ event: 'sync.link_down', data: { since: expect.any(String) } });
    expect(up!.body).toMatchObject({ event: 'sync.link_up', data: { down_since: down!.body.data.since } });
    await new Promise((r) => setTimeout(r, 500));
    expect(receiver.received.map((r) => r.body.event)).toEqual(['sync.link_down', 'sync.link_up']);
    ws.ws.close();
  }, 60_000);

  it('refuses a revoked edge at its next request; the edge stops and says why', async () => {
    const issued = await issue('revoked');
    const { edge, token } = await edgeWith({ GATEHOUSE_CLOUD_URL: cloud.url, GATEHOUSE_SYNC_TOKEN: issued.token });
    await until(
      'online',
      () => edge.request('GET', `${P}/sync/status`, { token }),
      (r) => r.body.data.online === true,
    );
    const revoked = await onCloud('DELETE', `/sync/edges/${issued.id}`);
    expect(revoked.status).toBe(200);
    expect(revoked.body.data.revoked_at).not.toBeNull();
    const status = await until(
      'refused',
      () => edge.request('GET', `${P}/sync/status`, { token }),
      (r) => r.body.data.state === 'refused',
      15_000,
    );
    expect(status.body.data.last_error).toMatch(/401/);
    const hello = await cloud.request('GET', '/api/v1/sync/hello', {
      token: issued.token,
      headers: { 'Gatehouse-Sync-Protocol': '1' },
    });
    expect(hello.status).toBe(401);
    // Listed with its revocation and last contact.
    const listed = (await onCloud('GET', '/sync/edges')).body.data.find((e: { id: number }) => e.id === issued.id);
    expect(listed).toMatchObject({ name: 'revoked', protocol_version: PROTOCOL_VERSION });
    expect(listed.last_contact_at).not.toBeNull();
  }, 30_000);

  it('stops syncing, saying so, when the cloud speaks another protocol version; nothing is uploaded or applied', async () => {
    let requests = 0;
    let uploads = 0;
    const fake: Server = createServer((req, res) => {
      requests++;
      if (req.url?.includes('/upload')) uploads++;
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          data: {
            protocol: PROTOCOL_VERSION + 1,
            supported_protocols: [PROTOCOL_VERSION + 1],
            edge: { id: 7, name: 'x' },
            project: { id: 1, team_slug: 'default', slug: 'default', name: 'Default', timezone: 'UTC' },
            server_time: new Date().toISOString(),
          },
        }),
      );
    });
    await new Promise<void>((r) => fake.listen(0, '127.0.0.1', r));
    stops.push(() => new Promise((r) => fake.close(r)));
    const port = (fake.address() as { port: number }).port;
    const { edge, token } = await edgeWith({
      GATEHOUSE_CLOUD_URL: `http://127.0.0.1:${port}`,
      GATEHOUSE_SYNC_TOKEN: '7|whatever',
    });
    const status = await until(
      'incompatible',
      () => edge.request('GET', `${P}/sync/status`, { token }),
      (r) => r.body.data.state === 'incompatible',
      15_000,
    );
    expect(status.body.data.last_error).toContain(`protocol ${PROTOCOL_VERSION + 1}, this edge ${PROTOCOL_VERSION}`);
    const seen = requests;
    await new Promise((r) => setTimeout(r, 1000));
    expect(requests).toBe(seen); // stopped, not retrying
    expect(uploads).toBe(0);
    expect(status.body.data.edge_id).toBeNull(); // never linked to what it could not read
  }, 30_000);

  it('reaches a cloud over TLS with a private CA given in cloud.caFile, and refuses it without', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-ca-'));
    stops.push(async () => rmSync(dir, { recursive: true, force: true }));
    const { key, cert } = selfSignedCertificate(dir, { cn: 'localhost', altNames: 'DNS:localhost,IP:127.0.0.1' });
    const tlsCloud = await startAppliance({
      GATEHOUSE_ROLE: 'cloud',
      GATEHOUSE_HTTPS_PORT: '0',
      GATEHOUSE_HTTPS_CERT_FILE: cert,
      GATEHOUSE_HTTPS_KEY_FILE: key,
    });
    stops.push(() => tlsCloud.destroy());
    const admin = await tlsCloud.token();
    const issued = (await tlsCloud.request('POST', `${P}/sync/edges`, { token: admin, body: { name: 'tls' } })).body
      .data;
    const url = `https://127.0.0.1:${tlsCloud.app.httpsPort}`;
    const trusting = await edgeWith({
      GATEHOUSE_CLOUD_URL: url,
      GATEHOUSE_SYNC_TOKEN: issued.token,
      GATEHOUSE_CLOUD_CA_FILE: cert,
    });
    await until(
      'online over TLS',
      () => trusting.edge.request('GET', `${P}/sync/status`, { token: trusting.token }),
      (r) => r.body.data.online === true,
      15_000,
    );
    const doubting = await edgeWith({ GATEHOUSE_CLOUD_URL: url, GATEHOUSE_SYNC_TOKEN: issued.token });
    const status = await until(
      'refusing the certificate',
      () => doubting.edge.request('GET', `${P}/sync/status`, { token: doubting.token }),
      (r) => r.body.data.state === 'offline',
      15_000,
    );
    expect(status.body.data.last_error).toMatch(/SELF_SIGNED|CERT|certificate/i);
  }, 60_000);

  it('reports an edge clock ten minutes ahead, flags its events unsynchronised and keeps their raw time', async () => {
    const ahead = 10 * 60_000;
    const { edge, token } = await edgeWith(
      { GATEHOUSE_CLOUD_URL: cloud.url, GATEHOUSE_SYNC_TOKEN: (await issue('fast clock')).token },
      { clock: { now: () => Date.now() + ahead } },
    );
    const status = await until(
      'online',
      () => edge.request('GET', `${P}/sync/status`, { token }),
      (r) => r.body.data.online === true && r.body.data.clock_offset_ms !== null,
    );
    expect(Math.abs(status.body.data.clock_offset_ms + ahead)).toBeLessThan(2000);
    expect(status.body.data.clock_synchronised).toBe(false);
    await until(
      'the ticket',
      () => edge.request('GET', `${P}/attendees?search=Ada`, { token }),
      (r) => r.body.data?.length === 1,
    );
    const answer = (
      await edge.request('POST', `${P}/access-points/1/scan`, { token, body: { credential_value: 'CLOCK-1' } })
    ).body;
    const scanned = answer.data ?? answer;
    const event = await until(
      'the event on the cloud',
      async () =>
        ((await onCloud('GET', '/access-events?per_page=100')).body.data as Record<string, unknown>[]).find(
          (e) => e.uuid === scanned.event_id,
        ),
      (e) => e !== undefined,
    );
    expect(event!.clock_unsynchronised).toBe(true);
    expect(Math.abs((event!.clock_offset_ms as number) + ahead)).toBeLessThan(2000);
    expect(Date.parse(event!.scanned_at as string) - Date.parse(event!.uploaded_at as string)).toBeGreaterThan(
      ahead - 5000,
    ); // raw, never corrected
    const listed = (await onCloud('GET', '/sync/status')).body.data.edges.find(
      (e: { name: string }) => e.name === 'fast clock',
    );
    expect(Math.abs(listed.clock_offset_ms + ahead)).toBeLessThan(2000);
  }, 30_000);
});
