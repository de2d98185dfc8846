import BetterSqlite3 from 'better-sqlite3';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type AddressInfo, createServer } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli, runGatehouse } from '../helpers/process.js';

const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-proc-'));
  dirs.push(dir);
  return dir;
};
afterAll(() =>
  dirs.forEach((d) => {
    rmSync(d, { recursive: true, force: true });
  }),
);

async function json(url: string, init: RequestInit = {}) {
  const res = await fetch(url, {
    ...init,
    headers: { accept: 'application/json', 'content-type': 'application/json', ...init.headers },
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

describe('the appliance process', () => {
  it('is started with the V8 flags of scripts/node-flags.json everywhere it is started', () => {
    const flags = JSON.parse(readFileSync('scripts/node-flags.json', 'utf8')) as string[];
    expect(flags.length).toBeGreaterThan(0);
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> };
    const starts = {
      'npm start': pkg.scripts.start!,
      'npm run gatehouse': pkg.scripts.gatehouse!,
      Dockerfile: readFileSync('Dockerfile', 'utf8')
        .split('\n')
        .find((l) => l.startsWith('CMD'))!,
      'main.ts hashbang': readFileSync('src/main.ts', 'utf8').split('\n')[0]!,
    };
    for (const [where, command] of Object.entries(starts)) {
      for (const flag of flags) expect(command, where).toContain(flag);
    }
  });

  it('first start creates the store, an administrator with a generated password, a default project, and logs the URL; a restart keeps everything', async () => {
    const dataDir = join(tempDir(), 'data');
    const first = runGatehouse([], { GATEHOUSE_DATA_DIR: dataDir });
    const [, url] = await first.waitFor(/Gatehouse ready at (http:\/\/\S+?)"/);
    const password = (await first.waitFor(/generated password: (\S+?)"/))[1]!;
    await first.waitFor(/role: standalone: nothing syncs/); // docs/sync.md: says so at start
    expect(existsSync(join(dataDir, 'gatehouse.db'))).toBe(true);

    const login = await json(`${url}/api/v1/auth/token`, {
      method: 'POST',
      body: JSON.stringify({ email: 'admin@gatehouse.local', password, device_name: 'proc' }),
    });
    expect(login.status).toBe(201);
    const auth = { authorization: `Bearer ${login.body.token}` };
    expect(
      (await json(`${url}/api/v1/projects`, { headers: auth })).body.data.map((p: { slug: string }) => p.slug),
    ).toEqual(['default']);
    const user = await json(`${url}/api/v1/users`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ name: 'Kept', email: 'kept@example.test', password: 'kept password' }),
    });
    expect(user.status).toBe(201);
    expect(await first.stop('SIGTERM')).toBe(0);
    expect(first.output.join('\n')).toContain('store closed');

    const db = new BetterSqlite3(join(dataDir, 'gatehouse.db'), { readonly: true });
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(db.pragma('user_version', { simple: true })).toBeGreaterThan(0);
    db.close();

    const second = runGatehouse([], { GATEHOUSE_DATA_DIR: dataDir });
    const [, url2] = await second.waitFor(/Gatehouse ready at (http:\/\/\S+?)"/);
    expect((await json(`${url2}/api/v1/me`, { headers: auth })).status).toBe(200);
    expect(
      (await json(`${url2}/api/v1/users`, { headers: auth })).body.data.map((u: { email: string }) => u.email),
    ).toContain('kept@example.test');
    const again = await json(`${url2}/api/v1/auth/token`, {
      method: 'POST',
      body: JSON.stringify({ email: 'kept@example.test', password: 'kept password', device_name: 'x' }),
    });
    expect(again.status).toBe(201);
    expect(second.output.join('\n')).not.toContain('generated password');
    expect(await second.stop('SIGINT')).toBe(0);
  });

  it('takes the administrator from GATEHOUSE_ADMIN_EMAIL and GATEHOUSE_ADMIN_PASSWORD', async () => {
    const proc = runGatehouse([], {
      GATEHOUSE_DATA_DIR: tempDir(),
      GATEHOUSE_ADMIN_EMAIL: 'boss@venue.test',
      GATEHOUSE_ADMIN_PASSWORD: 'venue password',
    });
    const [, url] = await proc.waitFor(/Gatehouse ready at (http:\/\/\S+?)"/);
    const login = await json(`${url}/api/v1/auth/token`, {
      method: 'POST',
      body: JSON.stringify({ email: 'boss@venue.test', password: 'venue password', device_name: 'x' }),
    });
    expect(login.status).toBe(201);
    expect(proc.output.join('\n')).not.toContain('venue password');
    await proc.stop();
  });

  it('says at start that GATEHOUSE_ADMIN_PASSWORD was ignored when the administrator exists with another password, and names the command that sets it', async () => {
    const dataDir = tempDir();
    const first = runGatehouse([], { GATEHOUSE_DATA_DIR: dataDir });
    await first.waitFor(/administrator created with generated password/);
    await first.waitFor(/Gatehouse ready at/);
    await first.stop();
    const second = runGatehouse([], { GATEHOUSE_DATA_DIR: dataDir, GATEHOUSE_ADMIN_PASSWORD: 'tour password' });
    const [warning] = await second.waitFor(/GATEHOUSE_ADMIN_PASSWORD .*ignored.*/);
    expect(warning).toContain("npm run gatehouse -- users update admin@gatehouse.local --password '<the password>'");
    expect(warning).not.toContain('tour password');
    await second.stop();
    // The command it names does it; a start with the password it now has says nothing.
    const set = await runCli(['users', 'update', 'admin@gatehouse.local', '--password', 'tour password'], {
      GATEHOUSE_DATA_DIR: dataDir,
    });
    expect(set.code, set.stderr).toBe(0);
    const third = runGatehouse([], { GATEHOUSE_DATA_DIR: dataDir, GATEHOUSE_ADMIN_PASSWORD: 'tour password' });
    const [, url] = await third.waitFor(/Gatehouse ready at (http:\/\/\S+?)"/);
    const login = await json(`${url}/api/v1/auth/token`, {
      method: 'POST',
      body: JSON.stringify({ email: 'admin@gatehouse.local', password: 'tour password', device_name: 'x' }),
    });
    expect(login.status).toBe(201);
    expect(third.output.join('\n')).not.toMatch(/ignored/);
    await third.stop();
  });

  it('lets an in-flight request finish on SIGTERM, then exits 0', async () => {
    const proc = runGatehouse([], { GATEHOUSE_DATA_DIR: tempDir(), GATEHOUSE_ADMIN_PASSWORD: 'drain password' });
    const [, url] = await proc.waitFor(/Gatehouse ready at (http:\/\/\S+?)"/);
    const body = JSON.stringify({ email: 'admin@gatehouse.local', password: 'drain password', device_name: 'slow' });
    const half = Math.floor(body.length / 2);
    const response = new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = httpRequest(
        `${url}/api/v1/auth/token`,
        { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': String(body.length) } },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode!, text }));
        },
      );
      req.on('error', reject);
      req.write(body.slice(0, half));
      setTimeout(() => {
        proc.proc.kill('SIGTERM');
        setTimeout(() => req.end(body.slice(half)), 300);
      }, 100);
    });
    const res = await response;
    expect(res.status).toBe(201);
    expect(JSON.parse(res.text).token).toMatch(/^\d+\|/);
    expect(await proc.exit).toBe(0);
    // New connections are refused once it has stopped.
    await expect(fetch(`${url}/health`)).rejects.toThrow();
  });

  it('refuses to start on a wrong config value, naming the key, the value and what is expected', async () => {
    const result = await runCli([], {
      GATEHOUSE_DATA_DIR: tempDir(),
      GATEHOUSE_HTTP_PORT: 'http',
      GATEHOUSE_RATE_LIMIT_BULK: '-1',
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/http\.port = "http" \(from GATEHOUSE_HTTP_PORT\): .*expected number/);
    expect(result.stderr).toMatch(/rateLimit\.bulk = -1 \(from GATEHOUSE_RATE_LIMIT_BULK\): .*>=0/);
    const flag = await runCli(['--log-level', 'chatty'], { GATEHOUSE_DATA_DIR: tempDir() });
    expect(flag.code).toBe(2);
    expect(flag.stderr).toMatch(/log\.level = "chatty" \(from --log-level\)/);
  });

  it('exits 1 with a clear log line when its port is taken', async () => {
    const first = runGatehouse([], { GATEHOUSE_DATA_DIR: tempDir() });
    const [, url] = await first.waitFor(/Gatehouse ready at (http:\/\/\S+?)"/);
    const port = new URL(url!).port;
    const second = runGatehouse([], { GATEHOUSE_DATA_DIR: tempDir(), GATEHOUSE_HTTP_PORT: port });
    expect(await second.exit).toBe(1);
    expect(second.output.join('\n')).toContain(
      `gatehouse: start-up failed: port ${port} on 127.0.0.1 is already in use (http.port): another Gatehouse may be running here`,
    );
    expect(second.output.join('\n')).toMatch(
      /set GATEHOUSE_HTTP_PORT \(or http\.port in the config file, or --http-port\) to another port/,
    );
    expect((await fetch(`${url}/health`)).status).toBe(200);
    await first.stop();
  });

  it('exits 1 when the MQTT port is taken by another server (a mosquitto on 1883), naming the port and the setting that moves it, once what started has stopped', async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as AddressInfo).port;
    try {
      const proc = runGatehouse([], { GATEHOUSE_DATA_DIR: tempDir(), GATEHOUSE_MQTT_PORT: String(port) });
      expect(await proc.exit).toBe(1);
      const output = proc.output.join('\n');
      expect(output).toContain(`gatehouse: start-up failed: port ${port} on 127.0.0.1 is already in use (mqtt.port)`);
      expect(output).toMatch(/another Gatehouse may be running here.*set GATEHOUSE_MQTT_PORT/);
      expect(output).not.toMatch(/Gatehouse ready/);
    } finally {
      holder.close();
    }
  });

  it('manages users and projects from the command line on the same data directory', async () => {
    const dataDir = tempDir();
    const env = { GATEHOUSE_DATA_DIR: dataDir };
    const created = await runCli(['users', 'create', '--email', 'cli@example.test', '--name', 'Cli User'], env);
    expect(created.code, created.stderr).toBe(0);
    const user = JSON.parse(created.stdout);
    expect(user).toMatchObject({ email: 'cli@example.test', is_admin: false, is_active: true });
    expect(user.generated_password).toMatch(/^\S{16,}$/);

    const project = await runCli(['projects', 'create', '--name', 'Summer Fest', '--timezone', 'Europe/Paris'], env);
    expect(project.code, project.stderr).toBe(0);
    expect(JSON.parse(project.stdout)).toMatchObject({
      slug: 'summer-fest',
      team_slug: 'default',
      timezone: 'Europe/Paris',
    });
    const grant = await runCli(['users', 'grant', 'cli@example.test', '--project', 'default/summer-fest'], env);
    expect(JSON.parse(grant.stdout).projects).toEqual(['default/summer-fest']);

    const proc = runGatehouse([], env);
    const [, url] = await proc.waitFor(/Gatehouse ready at (http:\/\/\S+?)"/);
    const login = await json(`${url}/api/v1/auth/token`, {
      method: 'POST',
      body: JSON.stringify({ email: 'cli@example.test', password: user.generated_password, device_name: 'x' }),
    });
    expect(login.status).toBe(201);
    const auth = { authorization: `Bearer ${login.body.token}` };
    expect(
      (await json(`${url}/api/v1/projects`, { headers: auth })).body.data.map((p: { slug: string }) => p.slug),
    ).toEqual(['summer-fest']);
    // Deactivated from the shell while the appliance runs: the token stops at once.
    expect((await runCli(['users', 'deactivate', 'cli@example.test'], env)).code).toBe(0);
    expect((await json(`${url}/api/v1/me`, { headers: auth })).status).toBe(401);
    await proc.stop();

    // The refusals read nothing of each other: three processes at once.
    const [bad, dup, unknown] = await Promise.all([
      runCli(['users', 'create', '--email', 'not-an-email'], env),
      runCli(['users', 'create', '--email', 'cli@example.test'], env),
      runCli(['users', 'explode'], env),
    ]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('not an email address');
    expect(dup.stderr).toContain('already taken');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown command');
    // A dozen processes, each starting node and opening the store: seconds on an idle box, many
    // more on one whose cores are all busy.
  }, 120_000);
});
