import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { type AddressInfo, createServer as createTcpServer, isIP, type Server as TcpServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ProcessAppliance, startProcessAppliance } from '../helpers/process-appliance.js';
import { selfSignedCertificate } from '../helpers/certificate.js';

// Outgoing webhooks must not make the box a way into its own network (docs/webhooks-outgoing.md
// "Receivers"; docs/security.md "A stolen edge": what held). The built appliance in its own
// process with the default policy (no webhook.allowInsecure), against:
// - a TCP service on 127.0.0.1, standing for what a forged receiver would reach on the box: it
//   counts connections, so a refusal that still connected would show;
// - https receivers on 127.0.0.2, the one network webhook.allowedNetworks lets through here
//   (their certificate trusted through NODE_EXTRA_CA_CERTS): the control that a delivery the
//   policy allows does go out, and the target of the redirects.

const A = '/api/v1/projects/default/default';

/** Every notation of a refused address the URL parser folds (WHATWG: hex, octal, short and integer IPv4; IPv6 spelled out; IPv4-mapped). */
const REFUSED_AT_CREATE: [host: string, why: RegExp][] = [
  ...[
    '127.0.0.1',
    '127.1',
    '127.0.1',
    '0x7f000001',
    '0x7f.0.0.1',
    '2130706433',
    '017700000001',
    '0177.0.0.1',
    '127.255.255.254',
    '127.0.0.1.',
  ].map((h) => [h, /loopback/] as [string, RegExp]),
  ...['[::1]', '[0:0:0:0:0:0:0:1]', '[::ffff:127.0.0.1]', '[::ffff:7f00:1]'].map(
    (h) => [h, /loopback/] as [string, RegExp],
  ),
  ...['localhost', 'LOCALHOST', 'api.localhost'].map((h) => [h, /localhost/] as [string, RegExp]),
  ...['169.254.1.1', '[fe80::1]'].map((h) => [h, /link-local/] as [string, RegExp]),
  ...[
    '169.254.169.254',
    '0xa9fea9fe',
    '2852039166',
    '0251.0376.0251.0376',
    '[::ffff:169.254.169.254]',
    '100.100.100.200',
    '[fd00:ec2::254]',
    '[fd00:ec2:0:0:0:0:0:254]',
  ].map((h) => [h, /cloud metadata/] as [string, RegExp]),
  ...['0.0.0.0', '0', '[::]', '224.0.0.1', '255.255.255.255', '[ff02::1]'].map(
    (h) => [h, /multicast or unspecified/] as [string, RegExp],
  ),
];

/** Names /etc/hosts maps to a loopback address that the create check cannot know (it does not resolve names). */
function loopbackNamesInHosts(): string[] {
  const names = new Set<string>();
  for (const line of readFileSync('/etc/hosts', 'utf8').split('\n')) {
    const [address, ...aliases] = line.replace(/#.*/, '').trim().split(/\s+/);
    if (!address || isIP(address) === 0) continue;
    if (!(address.startsWith('127.') || address === '::1')) continue;
    for (const name of aliases) if (name && !/(^|\.)localhost$/i.test(name)) names.add(name.toLowerCase());
  }
  return [...names];
}

interface TlsReceiver {
  port: number;
  url: string;
  received: string[];
  answer: (status: number, headers?: Record<string, string>) => void;
  close(): Promise<void>;
}

async function tlsReceiver(key: string, cert: string): Promise<TlsReceiver> {
  const received: string[] = [];
  let reply: { status: number; headers: Record<string, string> } = { status: 200, headers: {} };
  const server: HttpsServer = createHttpsServer({ key, cert }, (req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      received.push(body);
      res.writeHead(reply.status, reply.headers);
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.2', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `https://127.0.0.2:${port}/hook`,
    received,
    answer: (status, headers = {}) => void (reply = { status, headers }),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe('outgoing webhooks: what a subscription may not reach', () => {
  let gh: ProcessAppliance;
  let token: string;
  let projectId: number;
  let dir: string;
  let boxService: TcpServer;
  let boxPort: number;
  let boxConnections = 0;
  let allowed: TlsReceiver;
  let elsewhere: TlsReceiver;

  const subscribe = (url: string) =>
    gh.request('POST', '/api/v1/webhook/subscribe', {
      token,
      body: { url, events: ['attendee.deleted'], project_id: projectId },
    });
  const subscriptions = async () =>
    (await gh.request('GET', '/api/v1/webhook-subscriptions?per_page=100', { token })).body.data as {
      id: number;
      url: string;
    }[];
  const sendTest = async (id: number) => {
    const res = await gh.request('POST', `/api/v1/webhook-subscriptions/${id}/test`, { token });
    expect(res.status, res.text).toBe(200);
    return res.body.data as {
      attempts: number;
      last_status_code: number | null;
      attempt_history: { error: string | null }[];
    };
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-ssrf-'));
    const { key, cert } = selfSignedCertificate(dir, { cn: 'receiver', altNames: 'IP:127.0.0.2' });
    const config = join(dir, 'gatehouse.json');
    writeFileSync(config, JSON.stringify({ webhook: { allowedNetworks: ['127.0.0.2/32'], timeoutMs: 3000 } }));
    boxService = createTcpServer((socket) => {
      boxConnections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => boxService.listen(0, '127.0.0.1', resolve));
    boxPort = (boxService.address() as AddressInfo).port;
    allowed = await tlsReceiver(readFileSync(key, 'utf8'), readFileSync(cert, 'utf8'));
    elsewhere = await tlsReceiver(readFileSync(key, 'utf8'), readFileSync(cert, 'utf8'));
    gh = await startProcessAppliance({ GATEHOUSE_CONFIG: config, NODE_EXTRA_CA_CERTS: cert });
    token = await gh.token();
    projectId = (await gh.request('GET', A, { token })).body.data.id;
  }, 60_000);
  afterAll(async () => {
    await gh?.destroy();
    await allowed?.close();
    await elsewhere?.close();
    await new Promise((resolve) => boxService?.close(resolve));
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('refuses at create, 422 on url, a loopback, link-local or metadata address in every notation, and refuses changing a subscription to one', async () => {
    const before = (await subscriptions()).length;
    for (const [host, why] of REFUSED_AT_CREATE) {
      const res = await subscribe(`https://${host}:${boxPort}/hook`);
      expect(res.status, `${host}: ${res.text}`).toBe(422);
      expect(res.body.errors.url[0], host).toMatch(why);
    }
    expect(await subscriptions()).toHaveLength(before);

    const made = await subscribe(allowed.url);
    expect(made.status, made.text).toBe(201);
    for (const [host, why] of REFUSED_AT_CREATE) {
      const res = await gh.request('PUT', `/api/v1/webhook-subscriptions/${made.body.data.id}`, {
        token,
        body: { url: `https://${host}:${boxPort}/hook` },
      });
      expect(res.status, `${host}: ${res.text}`).toBe(422);
      expect(res.body.errors.url[0], host).toMatch(why);
    }
    expect((await subscriptions()).find((s) => s.id === made.body.data.id)?.url).toBe(allowed.url);
    expect(boxConnections).toBe(0);
  });

  it('takes the venue LAN, unique-local IPv6 included: the policy refuses only fd00:ec2::254 of fd00::/8', async () => {
    for (const host of ['10.0.0.5', '192.168.1.20', '172.16.0.9', '[fd00::1]', '[fd12:3456::9]']) {
      const res = await subscribe(`https://${host}/hook`);
      expect(res.status, `${host}: ${res.text}`).toBe(201);
      expect((await gh.request('DELETE', `/api/v1/webhook-subscriptions/${res.body.data.id}`, { token })).status).toBe(
        204,
      );
    }
  });

  it('delivers to a receiver the policy allows (the control for the refusals)', async () => {
    const sub = (await subscribe(allowed.url)).body.data;
    const delivery = await sendTest(sub.id);
    expect(delivery.last_status_code, JSON.stringify(delivery)).toBe(200);
    expect(allowed.received.some((b) => JSON.parse(b).event === 'webhook.test')).toBe(true);
  });

  const names = loopbackNamesInHosts();
  it.skipIf(names.length === 0)(
    `refuses at connect a name that resolves to this box (${names.join(', ') || 'none in /etc/hosts'}), and connects nowhere`,
    async () => {
      for (const name of names) {
        const made = await subscribe(`https://${name}:${boxPort}/hook`);
        expect(made.status, `${name}: ${made.text}`).toBe(201); // a name is not resolved at create: the connection is where it is checked
        const delivery = await sendTest(made.body.data.id);
        expect(delivery.last_status_code).toBeNull();
        expect(delivery.attempt_history.at(-1)?.error, name).toMatch(
          new RegExp(
            `receiver ${name.replace(/\./g, '\\.')} resolves to (127\\.\\d+\\.\\d+\\.\\d+|::1): a loopback.*not allowed`,
          ),
        );
      }
      expect(boxConnections).toBe(0);
    },
  );

  it('follows no redirect, to an allowed receiver or to this box: the 3xx is the failed attempt', async () => {
    const sub = (await subscribe(allowed.url)).body.data;
    for (const [status, location] of [
      [301, elsewhere.url],
      [302, elsewhere.url],
      [303, elsewhere.url],
      [307, elsewhere.url],
      [308, elsewhere.url],
      [307, `http://127.0.0.1:${boxPort}/hook`],
      [302, `https://localhost:${boxPort}/hook`],
    ] as const) {
      allowed.answer(status, { location });
      const delivery = await sendTest(sub.id);
      expect(delivery.last_status_code).toBe(status);
      expect(delivery.attempt_history.at(-1)?.error).toBe(`redirect (${status}) not followed`);
    }
    allowed.answer(200);
    expect(elsewhere.received).toEqual([]);
    expect(boxConnections).toBe(0);
  });
});
