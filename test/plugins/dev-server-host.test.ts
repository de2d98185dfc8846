import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { type RunningProcess, runCli, runGatehouse } from '../helpers/process.js';

// `gatehouse plugin dev` as a developer runs it (a child process of dist/main.js), asked as a page
// elsewhere on the network or a DNS-rebinding page would ask it (docs/plugins.md "Dev server and
// hot reload"; docs/security.md "A stolen edge": what held): a Host header that is not the dev
// server's own is refused, on its own files and on the paths it proxies to the appliance, and no
// spelling of /@fs (or a path around it) serves /etc/passwd. No token is given, so this holds
// whatever way a token reaches the dev server. The appliance behind --url is a stand-in that
// records what reaches it.

interface Answer {
  status: number;
  body: string;
}

/** A raw GET: the path is sent as written (no normalising of `..` or `%2e`), with the Host header given. */
function get(port: number, path: string, host: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers: { host }, agent: false }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Opens a WebSocket at `path` as a browser on `origin` would, naming `host`; answers whether it opened. */
function upgrade(
  port: number,
  path: string,
  host: string,
  origin: string,
  protocol?: string,
): Promise<'open' | number | string> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}${path}`, protocol, { headers: { host }, origin });
    ws.on('open', () => {
      ws.close();
      resolve('open');
    });
    ws.on('unexpected-response', (_req, res) => resolve(res.statusCode!));
    ws.on('error', (err) => resolve(err.message));
  });
}

describe('gatehouse plugin dev, asked from elsewhere', () => {
  let dir: string;
  let dev: RunningProcess;
  let port: number;
  let appliance: Server;
  const reached: string[] = [];
  const passwd = readFileSync('/etc/passwd', 'utf8').split('\n')[0]!;

  beforeAll(async () => {
    appliance = createServer((req, res) => {
      reached.push(`${req.method} ${req.url}`);
      res.end('{}');
    });
    appliance.on('upgrade', (req, socket) => {
      reached.push(`upgrade ${req.url}`);
      socket.end('HTTP/1.1 400 Bad Request\r\n\r\n');
    });
    await new Promise<void>((resolve) => appliance.listen(0, '127.0.0.1', resolve));
    dir = join(mkdtempSync(join(tmpdir(), 'gh-plugin-host-')), 'door-display');
    const init = await runCli(['plugin', 'init', dir, '--yes'], {});
    expect(init.code, init.stderr).toBe(0);
    dev = runGatehouse(
      ['plugin', 'dev', dir, '--url', `http://127.0.0.1:${(appliance.address() as AddressInfo).port}`, '--port', '0'],
      {},
    );
    port = Number(new URL((await dev.waitFor(/serving .* at (http:\/\/\S+)/, 60_000))[1]!).port);
  }, 120_000);
  afterAll(async () => {
    await dev?.stop();
    await new Promise((resolve) => appliance?.close(resolve));
    if (dir) rmSync(join(dir, '..'), { recursive: true, force: true });
  });

  it("serves the plugin's page to its own host (the control)", async () => {
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`]) {
      const page = await get(port, '/', host);
      expect(page.status, host).toBe(200);
      expect(page.body, host).toContain('<div id="app"');
    }
  });

  it('refuses a request whose Host header names another host, whatever it asks for', async () => {
    for (const host of [
      'evil.example',
      `evil.example:${port}`,
      `127.0.0.1.nip.io:${port}`,
      `attacker.localhost.evil.example:${port}`,
    ]) {
      for (const path of [
        '/',
        '/index.html',
        '/app-manifest.json',
        '/@vite/client',
        '/src/main.ts',
        '/@fs/etc/passwd',
        '/api/v1/me',
        '/broadcasting/auth',
        '/sanctum/csrf-cookie',
      ]) {
        const answer = await get(port, path, host);
        expect(answer.status, `${host} ${path}: ${answer.body.slice(0, 200)}`).toBe(403);
        expect(answer.body, `${host} ${path}`).toMatch(/Blocked request\. This host .* is not allowed/);
      }
    }
    expect(reached).toEqual([]); // nothing was proxied to the appliance
    expect((await get(port, '/api/v1/me', `127.0.0.1:${port}`)).status).toBe(200); // the control: its own host is
    expect(reached).toEqual(['GET /api/v1/me']);
    reached.length = 0;
  });

  it("refuses the hot-reload socket to a page of another host (a DNS-rebinding page's socket)", async () => {
    const evil = `evil.example:${port}`;
    expect(await upgrade(port, '/', evil, `http://${evil}`, 'vite-hmr')).toBe(400);
  });

  // Vite's proxy forwards a WebSocket upgrade without its host check: the dev server applies it
  // itself (src/plugins/vite/dev-access.ts), so a DNS-rebinding page cannot open the appliance's
  // Pusher socket through it.
  it('refuses a WebSocket to the proxied Pusher path from a page of another host, and forwards nothing', async () => {
    const evil = `evil.example:${port}`;
    reached.length = 0;
    const answer = await upgrade(port, '/app/key?protocol=7', evil, `http://${evil}`);
    expect(reached).toEqual([]);
    expect(answer).not.toBe('open');
  });

  it('serves /etc/passwd under no spelling of /@fs or of a path that climbs out of the plugin', async () => {
    const paths = [
      '/@fs/etc/passwd',
      '/@fs//etc/passwd',
      '/@fs/etc/passwd?raw',
      '/@fs/etc/passwd?import&raw',
      '/@fs/etc/passwd?raw??',
      '/@fs/etc/passwd?import&raw??',
      '/@fs/etc/passwd?import&?raw',
      '/@fs/etc/passwd?.svg?.wasm?init',
      '/@fs/etc/passwd?url',
      '/@fs/etc/passwd?inline',
      '/@fs/%65tc/passwd',
      `/@fs${dir}/../../../../../../etc/passwd`,
      `/@fs${dir}/..%2f..%2f..%2f..%2f..%2f..%2fetc/passwd`,
      '/etc/passwd',
      '/../../../../../../etc/passwd',
      '/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd',
      '/..%2f..%2f..%2f..%2f..%2f..%2fetc/passwd?raw',
      '/@id/../../../../../../etc/passwd',
      '/node_modules/../../../../../../etc/passwd?raw',
    ];
    for (const path of paths) {
      const answer = await get(port, path, `127.0.0.1:${port}`);
      expect(answer.body, `${path} answered ${answer.status}`).not.toContain(passwd);
      expect(answer.body, path).not.toContain('root:x:0:0');
    }
  });
});
