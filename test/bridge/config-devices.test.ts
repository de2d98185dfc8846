import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { PtyPair, rdm6300 } from '../helpers/pty.js';

// Devices in the config file (docs/bridge.md): found by name at start, read-only over REST
// (managed_by "config"), gone when taken out of the file; a config naming a project that does
// not exist stops the start with a clear message.

const A = '/api/v1/projects/default/default';

describe('bridge devices from the config file', () => {
  let dir: string;
  let dataDir: string;
  let pair: PtyPair;
  let gh: TestAppliance;
  const config = (devices: unknown[]) => {
    const file = join(dir, 'gatehouse.json');
    writeFileSync(
      file,
      JSON.stringify({ bridge: { reopenMinMs: 50, reopenMaxMs: 200, allowedPaths: [`${dir}/`], devices } }),
    );
    return file;
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-bridge-config-'));
    dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-test-'));
    pair = await PtyPair.open(dir, 'cfg');
  });
  afterAll(async () => {
    await pair.kill();
    await gh?.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('opens a device named in the config file, refuses to change it over REST, and drops it when the file no longer names it', async () => {
    const file = config([
      {
        name: 'Turnstile 1',
        path: pair.device,
        reader_identifier: 'CFG-1',
        framing: 'rdm6300',
        feedback: { grant: '06', deny: '15' },
      },
    ]);
    gh = await startAppliance({}, { configFile: file, dataDir });
    const api = client(gh, await gh.token());
    const listed = (await api.get(`${A}/bridge/devices`)).body.data;
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({
      name: 'Turnstile 1',
      managed_by: 'config',
      framing: 'rdm6300',
      debounce_ms: 2000,
      baud_rate: 9600,
    });
    const { id } = listed[0];
    const deadline = Date.now() + 10_000;
    while (!(await api.get(`${A}/bridge/devices/${id}`)).body.data.connected) {
      if (Date.now() > deadline) throw new Error('not connected');
      await new Promise((r) => setTimeout(r, 20));
    }
    // The reader it acts as was made, without an access point: its scans cannot be decided yet.
    await pair.write(rdm6300('62E3086CED'));
    expect((await pair.receivedBytes(1)).toString('hex')).toBe('15');
    const state = (await api.get(`${A}/bridge/devices/${id}`)).body.data;
    expect(state.errors).toBe(1);
    expect(state.last_error).toMatch(/not decided/);

    for (const [method, body] of [
      ['PUT', { enabled: false }],
      ['DELETE', undefined],
    ] as const) {
      const res = await gh.request(method, `${A}/bridge/devices/${id}`, { token: await gh.token(), body });
      expect(res.status).toBe(409);
      expect(res.body.message).toMatch(/config file/);
    }
    await gh.stop();

    // Restarted with the device gone from the file: gone from the list too.
    gh = await startAppliance({}, { configFile: config([]), dataDir });
    const again = client(gh, await gh.token());
    expect((await again.get(`${A}/bridge/devices`)).body.data).toEqual([]);
    await gh.stop();
  });

  it('does not start with a device in a project that does not exist, or with a bad device, and says which', async () => {
    await expect(
      startAppliance(
        {},
        {
          configFile: config([
            { name: 'Lost', path: '/dev/ttyS9', reader_identifier: 'X', framing: 'line', project: 'nope/nope' },
          ]),
          dataDir,
        },
      ),
    ).rejects.toThrow(/bridge\.devices: "Lost" names project "nope\/nope"/);
    await expect(
      startAppliance(
        {},
        {
          configFile: config([{ name: 'Bad', path: '/dev/ttyS9', reader_identifier: 'X', framing: 'smoke-signals' }]),
          dataDir,
        },
      ),
    ).rejects.toThrow(/bridge\.devices\.0\.framing/);
  });
});
