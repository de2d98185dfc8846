import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { runCli } from '../helpers/process.js';

// `gatehouse bridge simulate` (docs/bridge.md): the built CLI against a real appliance on a free
// port. It makes a socat pty pair, registers one end as a bridge device over REST, plays real
// frames into the other and prints each decision read back from the feedback bytes. It runs with
// the appliance's data directory, as it does from the same checkout and config: the pair is made
// under <dataDir>/bridge-simulator/, the one place besides serial ports the bridge opens without
// bridge.allowedPaths (docs/bridge.md: Device paths).

const A = '/api/v1/projects/default/default';

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('gatehouse bridge simulate', () => {
  let gh: TestAppliance;
  let api: ReturnType<typeof client>;
  let token: string;
  let gate: number;

  const simulate = (...args: string[]) =>
    runCli(['bridge', 'simulate', '--url', gh.url, ...args], { GATEHOUSE_DATA_DIR: gh.dataDir });
  const bridgeScans = async () =>
    (
      (await api.get(`${A}/access-events?per_page=100`)).body.data as {
        source: string;
        credential_value: string;
        granted: boolean;
        access_point_id: number;
      }[]
    ).filter((e) => e.source === 'bridge');

  beforeAll(async () => {
    gh = await startAppliance();
    token = await gh.token();
    api = client(gh, token);
    const zone = (await api.post(`${A}/access-zones`, { name: 'Hall' })).body.data.id;
    gate = (await api.post(`${A}/access-points`, { name: 'Door', access_zone_id: zone, direction: 'both' })).body.data
      .id;
    const imported = await api.post(`${A}/attendees/import`, [
      { first_name: 'Lena', last_name: 'Bell', credential_value: 'TICKET-77' },
      { first_name: 'Wim', last_name: 'Cole', credential_value: 'TICKET-78' },
      { first_name: 'Ida', last_name: 'Dunn', credential_value: 'TICKET-79' },
      { first_name: 'Rita', last_name: 'Zimmer', credential_value: '62E3086CED' },
    ]);
    expect(imported.status, imported.text).toBeLessThan(300);
  });
  afterAll(() => gh?.destroy());

  it('plays rdm6300 frames into a pty the appliance reads, prints each decision from the feedback bytes and a JSON summary, then removes the device', async () => {
    const run = await simulate(
      '--framing',
      'rdm6300',
      '--token',
      token,
      '--values',
      '62E3086CED,0000000001',
      '--interval-ms',
      '0',
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^62E3086CED {2}granted$/m);
    expect(run.stdout).toMatch(/^0000000001 {2}denied$/m);
    const summary = JSON.parse(run.stdout.slice(run.stdout.indexOf('{')));
    expect(summary).toEqual({
      device_id: expect.any(Number),
      path: expect.stringMatching(/^\/.+\/reader$/),
      scans: 2,
      granted: 1,
      denied: 1,
      unanswered: 0,
    });
    expect(summary.path.startsWith(`${gh.dataDir}/bridge-simulator/run-`)).toBe(true);
    expect(existsSync(dirname(summary.path))).toBe(false); // the run's folder goes with it

    // The first access point of the project, as no --access-point was given; source `bridge`.
    const events = (await bridgeScans()).filter((e) => ['62E3086CED', '0000000001'].includes(e.credential_value));
    expect(events.map((e) => [e.credential_value, e.granted, e.access_point_id]).sort()).toEqual([
      ['0000000001', false, gate],
      ['62E3086CED', true, gate],
    ]);
    expect((await api.get(`${A}/bridge/devices/${summary.device_id}`)).status).toBe(404);
    expect((await api.get(`${A}/bridge/devices`)).body.data).toEqual([]);
  });

  it("plays the first attendees' credential values and an unknown one in line framing by default, logging in with --email and --password", async () => {
    const run = await runCli(
      [
        'bridge',
        'simulate',
        '--framing',
        'line',
        '--url',
        gh.url,
        '--email',
        'admin@example.test',
        '--password',
        'correct horse battery',
        '--interval-ms',
        '0',
      ],
      {
        GATEHOUSE_DATA_DIR: gh.dataDir,
      },
    );
    expect(run.code, run.stderr).toBe(0);
    // The attendee list's order (by last name): the first three, then SIM-UNKNOWN.
    expect(run.stdout.split('\n').slice(0, 4)).toEqual([
      'TICKET-77    granted',
      'TICKET-78    granted',
      'TICKET-79    granted',
      'SIM-UNKNOWN  denied',
    ]);
    expect(JSON.parse(run.stdout.slice(run.stdout.indexOf('{')))).toMatchObject({
      scans: 4,
      granted: 3,
      denied: 1,
      unanswered: 0,
    });
    expect((await api.get(`${A}/bridge/devices`)).body.data).toEqual([]);
  });

  it('keeps the device with --keep', async () => {
    const run = await simulate(
      '--framing',
      'wiegand26',
      '--token',
      token,
      '--values',
      '123:45678',
      '--interval-ms',
      '0',
      '--access-point',
      String(gate),
      '--keep',
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^123:45678 {2}denied$/m);
    const { device_id } = JSON.parse(run.stdout.slice(run.stdout.indexOf('{')));
    expect((await api.get(`${A}/bridge/devices/${device_id}`)).body.data).toMatchObject({
      reader_identifier: 'SIM-wiegand26',
      framing: 'wiegand26',
      frames: 1,
      bad_frames: 0,
    });
    expect((await api.del(`${A}/bridge/devices/${device_id}`)).status).toBe(204);
  });

  it('refuses bad input with exit code 2 and one clear line on stderr', async () => {
    const port = await closedPort();
    const cases: [string[], Record<string, string>, RegExp][] = [
      [
        ['--framing', 'hid_pos', '--token', 'x'],
        {},
        /^gatehouse: --framing must be one of line, rdm6300, id12, wiegand26, wiegand34 \(not hid_pos\)$/,
      ],
      [
        ['--framing', 'rdm6300', '--token', 'x', '--values', 'zz'],
        {},
        /^gatehouse: --values: "zz" cannot be sent as rdm6300, which carries 10 hex digits/,
      ],
      [
        ['--framing', 'wiegand26', '--token', 'x', '--values', '256:1'],
        {},
        /^gatehouse: --values: "256:1" cannot be sent as wiegand26/,
      ],
      [
        ['--framing', 'rdm6300'],
        {},
        /^gatehouse: a token is needed: --token T \(or GATEHOUSE_TOKEN\), or --email E --password P$/,
      ],
      [
        ['--framing', 'rdm6300', '--token', 'x', '--url', `http://127.0.0.1:${port}`],
        {},
        /^gatehouse: cannot reach the appliance at http:\/\/127\.0\.0\.1:\d+ \(is it running\? --url\): .*ECONNREFUSED/,
      ],
      [
        ['--framing', 'rdm6300', '--token', 'not-a-token', '--url', gh.url],
        {},
        /^gatehouse: GET \/api\/v1\/projects\/default\/default\/access-points\?per_page=1 answered 401: /,
      ],
      [
        ['--framing', 'line', '--token', 'x'],
        { PATH: '/nonexistent' },
        /^gatehouse: socat is not on PATH: install socat/,
      ],
    ];
    const runs = await Promise.all(cases.map(([args, env]) => runCli(['bridge', 'simulate', ...args], env)));
    for (const [i, run] of runs.entries()) {
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr.trim(), cases[i]![0].join(' ')).toMatch(cases[i]![2]);
      expect(run.stdout).toBe('');
    }
    const other = await runCli(['bridge', 'unplug'], {});
    expect(other.code).toBe(2);
    expect(other.stderr).toMatch(/^gatehouse: unknown command: bridge unplug\nUsage: /);
    expect((await api.get(`${A}/bridge/devices`)).body.data).toEqual([]);
  });

  it("needs the appliance's data directory, and says so when given another one or none", async () => {
    const elsewhere = mkdtempSync(join(tmpdir(), 'gatehouse-not-the-appliance-'));
    try {
      const other = await runCli(
        ['bridge', 'simulate', '--url', gh.url, '--framing', 'line', '--token', token, '--values', 'X'],
        { GATEHOUSE_DATA_DIR: elsewhere },
      );
      expect(other.code).toBe(2);
      expect(other.stderr.trim()).toMatch(
        /^gatehouse: POST \/api\/v1\/projects\/default\/default\/bridge\/devices answered 422: The path is not a serial port .* The appliance does not use \/.+ as its data directory: run the simulator with its config \(dataDir, GATEHOUSE_DATA_DIR\)\.$/,
      );
      const missing = await runCli(
        ['bridge', 'simulate', '--url', gh.url, '--framing', 'line', '--token', token, '--values', 'X'],
        { GATEHOUSE_DATA_DIR: join(elsewhere, 'absent') },
      );
      expect(missing.code).toBe(2);
      expect(missing.stderr.trim()).toMatch(
        /^gatehouse: the appliance's data directory \/.+\/absent is not here: run the simulator on the appliance's box with the appliance's config/,
      );
    } finally {
      rmSync(elsewhere, { recursive: true, force: true });
    }
    expect((await api.get(`${A}/bridge/devices`)).body.data).toEqual([]);
  });

  it('says to run the demo when the project has no access point', async () => {
    expect((await api.post('/api/v1/projects', { name: 'Empty', slug: 'empty' })).status).toBe(201);
    const run = await simulate('--framing', 'rdm6300', '--token', token, '--project', 'default/empty');
    expect(run.code).toBe(2);
    expect(run.stderr.trim()).toBe(
      'gatehouse: the project default/empty has no access points: run `npm run demo` first, or name one with --access-point',
    );
  });
});
