import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { PtyPair } from '../helpers/pty.js';

// Which files a bridge device may name (docs/bridge.md: Device paths; docs/security.md: Local
// and device inputs). An access:write token could name any file the appliance's user can open —
// a logged-in terminal (/dev/pts/N): lines typed there became access events that a read token
// lists, and each decision's feedback bytes (an escape sequence) were written into it. Only
// serial ports (and /dev/hidraw* for HID) are accepted now, plus what bridge.allowedPaths adds.
// The "terminal" here is a real pseudo-terminal from socat: its /dev/pts path, not the link.

const A = '/api/v1/projects/default/default';

describe('bridge device paths', () => {
  let dir: string;
  let pair: PtyPair;
  let terminal: string;
  let gh: TestAppliance;
  let writer: ReturnType<typeof client>;
  let admin: ReturnType<typeof client>;
  const bridgeEvents = async () =>
    (await admin.get(`${A}/access-events?per_page=100`)).body.data.filter(
      (e: { source?: string }) => e.source === 'bridge',
    );
  const devices = async () =>
    (await admin.get(`${A}/bridge/devices?per_page=100`)).body.data as { id: number; name: string; path: string }[];
  const body = (path: string, extra: Record<string, unknown> = {}) => ({
    name: `dev ${path}`,
    path,
    reader_identifier: 'TERM-1',
    framing: 'line',
    feedback: { grant: '1b5b324a', deny: '1b5b324a' },
    ...extra,
  });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-bridge-paths-'));
    pair = await PtyPair.open(dir, 'term');
    terminal = realpathSync(pair.device);
    expect(terminal).toMatch(/^\/dev\/pts\/\d+$/);
    gh = await startAppliance({ GATEHOUSE_BRIDGE_REOPEN_MIN_MS: '50', GATEHOUSE_BRIDGE_REOPEN_MAX_MS: '200' });
    admin = client(gh, await gh.token());
    writer = client(gh, await gh.token(['access:write']));
    const zone = (await admin.post(`${A}/access-zones`, { name: 'Hall' })).body.data.id;
    await admin.post(`${A}/access-points`, { name: 'Door', access_zone_id: zone, direction: 'both' });
  });
  afterAll(async () => {
    await pair.kill();
    await gh?.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses a terminal, a link to one and any other file outside the serial ports with 422 on path, and opens nothing', async () => {
    const refused = [
      terminal,
      pair.device, // a link to the terminal, in a folder bridge.allowedPaths does not name
      '/dev/tty',
      '/dev/ptmx',
      '/etc/passwd',
      '/proc/self/fd/0',
      '/dev/ttyUSB0/../pts/0',
      '/dev/serial/by-id/../../pts/0',
      '/dev/serial/by-id/nested/port',
      '/dev//ttyUSB0',
      '/dev/ttyUSB0/',
      '/dev/./ttyUSB0',
    ];
    for (const path of refused) {
      const res = await writer.post(`${A}/bridge/devices`, body(path));
      expect(res.status, path).toBe(422);
      expect(res.body.errors.path, path).toEqual([expect.stringMatching(/serial port.*bridge\.allowedPaths/)]);
      expect(res.body.message).toBe(res.body.errors.path[0]);
    }
    // HID devices are /dev/hidraw*, and a serial port is not one.
    for (const path of [terminal, '/dev/ttyUSB0']) {
      const res = await writer.post(`${A}/bridge/devices`, body(path, { framing: 'hid_pos' }));
      expect(res.status, path).toBe(422);
      expect(res.body.errors.path, path).toEqual([expect.stringMatching(/\/dev\/hidraw\*.*bridge\.allowedPaths/)]);
    }
    expect(await devices()).toEqual([]);
    expect((await admin.get(`${A}/readers?per_page=100`)).body.data).toEqual([]);

    // Nothing reads the terminal or writes into it.
    await pair.write('TYPED-AT-THE-PROMPT\r\n');
    await new Promise((r) => setTimeout(r, 300));
    expect(await bridgeEvents()).toEqual([]);
    expect(pair.received().length).toBe(0);
  });

  it('accepts the serial ports and hidraw devices, and will not move a device onto a terminal', async () => {
    const accepted: [string, string][] = [
      ['/dev/ttyUSB7', 'line'],
      ['/dev/ttyACM3', 'line'],
      ['/dev/ttyS4', 'rdm6300'],
      ['/dev/ttyAMA0', 'wiegand26'],
      ['/dev/serial/by-id/usb-FTDI_FT232R_USB_UART_A1B2C3-if00-port0', 'line'],
      ['/dev/serial/by-path/platform-xhci-hcd.0-usb-0:1:1.0-port0', 'id12'],
      ['/dev/hidraw5', 'hid_keyboard'],
    ];
    const ids: number[] = [];
    for (const [path, framing] of accepted) {
      const res = await writer.post(
        `${A}/bridge/devices`,
        body(path, { framing, reader_identifier: `OK-${ids.length}` }),
      );
      expect(res.status, `${path} ${res.text}`).toBe(201);
      ids.push(res.body.data.id);
    }
    const moved = await writer.put(`${A}/bridge/devices/${ids[0]}`, { path: terminal });
    expect(moved.status).toBe(422);
    expect(Object.keys(moved.body.errors)).toEqual(['path']);
    expect((await admin.get(`${A}/bridge/devices/${ids[0]}`)).body.data.path).toBe('/dev/ttyUSB7');
    // A serial port that is not there says so, as any would.
    await expect
      .poll(async () => (await admin.get(`${A}/bridge/devices/${ids[0]}`)).body.data.last_error, { timeout: 10_000 })
      .toBe('/dev/ttyUSB7 is not there');
    for (const id of ids) expect((await admin.del(`${A}/bridge/devices/${id}`)).status).toBe(204);
  });

  it('never opens a device an older version stored with a path outside the allowed ones', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-test-'));
    let old = await startAppliance({}, { dataDir });
    await old.stop();
    const db = new Database(join(dataDir, 'gatehouse.db'));
    const settings = {
      ...body(terminal),
      name: undefined,
      access_point_id: null,
      match: null,
      baud_rate: 9600,
      data_bits: 8,
      stop_bits: 1,
      parity: 'none',
      debounce_ms: 0,
      keyboard_layout: 'us',
      keymap: null,
      enabled: true,
    };
    const now = new Date().toISOString();
    db.prepare(
      "INSERT INTO bridge_devices (project_id, name, settings, managed_by, created_at, updated_at) VALUES (1, 'Planted', ?, 'api', ?, ?)",
    ).run(JSON.stringify(settings), now, now);
    db.close();
    old = await startAppliance({ GATEHOUSE_BRIDGE_REOPEN_MIN_MS: '50' }, { dataDir });
    try {
      const api = client(old, await old.token());
      const [planted] = (await api.get(`${A}/bridge/devices`)).body.data;
      expect(planted.path).toBe(terminal);
      await expect
        .poll(async () => (await api.get(`${A}/bridge/devices/${planted.id}`)).body.data.last_error, {
          timeout: 10_000,
        })
        .toMatch(/not a serial port.*bridge\.allowedPaths/);
      expect((await api.get(`${A}/bridge/devices/${planted.id}`)).body.data).toMatchObject({
        connected: false,
        opened_path: null,
        frames: 0,
      });
      await pair.write('TYPED-AT-THE-PROMPT\r\n');
      await new Promise((r) => setTimeout(r, 300));
      expect((await api.get(`${A}/access-events?per_page=100`)).body.data).toEqual([]);
      expect(pair.received().length).toBe(0);
    } finally {
      await old.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('opens what bridge.allowedPaths adds: a folder, or a pattern', async () => {
    const other = mkdtempSync(join(tmpdir(), 'gatehouse-bridge-paths-'));
    const file = join(other, 'gatehouse.json');
    writeFileSync(
      file,
      JSON.stringify({ bridge: { reopenMinMs: 50, reopenMaxMs: 200, allowedPaths: [`${dir}/`, '/dev/ttyXRUSB*'] } }),
    );
    const allowed = await startAppliance({}, { configFile: file });
    try {
      const api = client(allowed, await allowed.token(['access:write', 'access:read']));
      const res = await api.post(`${A}/bridge/devices`, body(pair.device));
      expect(res.status, res.text).toBe(201);
      await expect
        .poll(async () => (await api.get(`${A}/bridge/devices/${res.body.data.id}`)).body.data.connected, {
          timeout: 10_000,
        })
        .toBe(true);
      expect((await api.post(`${A}/bridge/devices`, body('/dev/ttyXRUSB0', { reader_identifier: 'XR' }))).status).toBe(
        201,
      );
      // The folder, not what its links point to: the terminal itself is still refused.
      expect((await api.post(`${A}/bridge/devices`, body(terminal, { name: 'direct' }))).status).toBe(422);
      expect((await api.post(`${A}/bridge/devices`, body(`${dir}/../etc/passwd`, { name: 'up' }))).status).toBe(422);
    } finally {
      await allowed.destroy();
      rmSync(other, { recursive: true, force: true });
    }
  });

  it('stops the start on a config-file device outside the allowed paths, and on an allowedPaths entry that is not a clean absolute path', async () => {
    const other = mkdtempSync(join(tmpdir(), 'gatehouse-bridge-paths-'));
    const write = (bridge: unknown) => {
      const file = join(other, 'gatehouse.json');
      writeFileSync(file, JSON.stringify({ bridge }));
      return file;
    };
    try {
      await expect(
        startAppliance(
          {},
          {
            configFile: write({ devices: [{ name: 'Term', path: terminal, reader_identifier: 'T', framing: 'line' }] }),
          },
        ),
      ).rejects.toThrow(/bridge\.devices\.0\.path = "\/dev\/pts\/\d+": not a serial port.*bridge\.allowedPaths/);
      for (const entry of ['relative/dir/', '/dev/../etc/', '/dev//pts/', '', '/dev/pts/*/x*y/../']) {
        await expect(startAppliance({}, { configFile: write({ allowedPaths: [entry] }) }), entry).rejects.toThrow(
          /bridge\.allowedPaths\.0/,
        );
      }
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });
});
