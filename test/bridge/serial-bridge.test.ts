import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { id12, PtyPair, ptyConfigFile, rdm6300, wiegand26 } from '../helpers/pty.js';

// Serial readers plugged into the box (docs/bridge.md): real pseudo-terminals from socat. The
// bridge opens one end with serialport; the test writes real frames to the other and reads the
// feedback bytes back. Every framing, bad frames, debounce, an unplug mid-frame and a re-plug at
// the same path, and the REST record's bad inputs.

const A = '/api/v1/projects/default/default';
const GRANT = '06';
const DENY = '15';

describe('the firmware bridge over serial ptys', () => {
  let gh: TestAppliance;
  let api: ReturnType<typeof client>;
  let gate: number;
  let dir: string;
  const pairs: PtyPair[] = [];
  const bridgeEvents: { event: string; connected: boolean; name: string }[] = [];

  const pty = async (name: string) => {
    const pair = await PtyPair.open(dir, name);
    pairs.push(pair);
    return pair;
  };
  const device = async (body: Record<string, unknown>) => {
    const res = await api.post(`${A}/bridge/devices`, { feedback: { grant: GRANT, deny: DENY }, ...body });
    expect(res.status, res.text).toBe(201);
    return res.body.data as { id: number };
  };
  const state = async (id: number) => (await api.get(`${A}/bridge/devices/${id}`)).body.data;
  const until = async <T>(
    what: string,
    probe: () => Promise<T | false | null | undefined>,
    ms = 10_000,
  ): Promise<T> => {
    const deadline = Date.now() + ms;
    for (;;) {
      const value = await probe();
      if (value) return value;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  const connected = (id: number) => until(`device ${id} connected`, async () => (await state(id)).connected === true);
  const bridgeScans = async () =>
    (await api.get(`${A}/access-events?per_page=100`)).body.data.filter(
      (e: { source?: string }) => e.source === 'bridge',
    );

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-pty-'));
    gh = await startAppliance(
      { GATEHOUSE_BRIDGE_REOPEN_MIN_MS: '50', GATEHOUSE_BRIDGE_REOPEN_MAX_MS: '200' },
      { configFile: ptyConfigFile(dir) },
    );
    api = client(gh, await gh.token());
    const zone = (await api.post(`${A}/access-zones`, { name: 'Hall' })).body.data.id;
    gate = (await api.post(`${A}/access-points`, { name: 'Door', access_zone_id: zone, direction: 'both' })).body.data
      .id;
    await api.post(`${A}/attendees/import`, [
      { first_name: 'Rita', last_name: 'Card', credential_value: '62E3086CED' },
      { first_name: 'Ida', last_name: 'Twelve', credential_value: '0415AB19C2' },
      { first_name: 'Lena', last_name: 'Line', credential_value: 'TICKET-77' },
      { first_name: 'Wim', last_name: 'Wiegand', credential_value: '123:45678' },
      { first_name: 'Wanda', last_name: 'ThirtyFour', credential_value: '1234:56789' },
    ]);
    for (const name of ['bridge_device.connected', 'bridge_device.disconnected'] as const) {
      gh.app.services.bus.on(bridgeEvents, name, (e) =>
        bridgeEvents.push({ event: name, connected: e.device.connected, name: e.device.name }),
      );
    }
  });
  afterAll(async () => {
    for (const pair of pairs) await pair.kill();
    await gh.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it("makes the reader, decides an rdm6300 card at the device's access point and writes the grant bytes back; an unknown card gets the deny bytes", async () => {
    const pair = await pty('rdm');
    const { id } = await device({
      name: 'Door RFID',
      path: pair.device,
      reader_identifier: 'BRIDGE-RDM',
      access_point_id: gate,
      framing: 'rdm6300',
    });
    await connected(id);
    const reader = (await api.get(`${A}/readers?per_page=100`)).body.data.find(
      (r: { identifier: string }) => r.identifier === 'BRIDGE-RDM',
    );
    expect(reader).toMatchObject({ type: 'rfid', access_point_id: gate });
    expect((await api.get(`${A}/readers/${reader.id}`)).body.data.status).toMatchObject({
      status: 'online',
      connected_via: 'bridge',
    });

    await pair.write(rdm6300('62E3086CED'));
    expect((await pair.receivedBytes(1)).toString('hex')).toBe(GRANT);
    await pair.write(rdm6300('0000000001'));
    expect((await pair.receivedBytes(2)).toString('hex')).toBe(GRANT + DENY);

    const events = await until('two bridge events', async () => {
      const e = await bridgeScans();
      return e.length >= 2 && e;
    });
    expect(
      events
        .map((e: { credential_value: string; granted: boolean; access_point_id: number; reader_id: number }) => [
          e.credential_value,
          e.granted,
          e.access_point_id,
          e.reader_id,
        ])
        .sort(),
    ).toEqual([
      ['0000000001', false, gate, reader.id],
      ['62E3086CED', true, gate, reader.id],
    ]);
    expect(await state(id)).toMatchObject({
      connected: true,
      opened_path: pair.device,
      frames: 2,
      bad_frames: 0,
      errors: 0,
      last_error: null,
    });
    expect((await state(id)).last_scan_at).not.toBeNull();
    expect(bridgeEvents).toContainEqual({ event: 'bridge_device.connected', connected: true, name: 'Door RFID' });
  });

  it('decides id12, line, wiegand26 and wiegand34 frames, each on its own pty', async () => {
    const cases: [string, Buffer | string, string][] = [
      ['id12', id12('0415AB19C2'), GRANT],
      ['line', 'TICKET-77\r\n', GRANT],
      ['wiegand26', `${wiegand26(123, 45678)}\n`, GRANT],
      ['wiegand34', '209A5BBAA\r\n', GRANT], // 1234:56789, both parities right
      ['wiegand26', `${wiegand26(9, 9)}\r`, DENY], // a card nobody holds
    ];
    let n = 0;
    for (const [framing, frame, expected] of cases) {
      const pair = await pty(`f${n}`);
      const { id } = await device({
        name: `Framing ${n++}`,
        path: pair.device,
        reader_identifier: 'BRIDGE-F',
        access_point_id: gate,
        framing,
      });
      await connected(id);
      await pair.write(frame);
      expect((await pair.receivedBytes(1)).toString('hex'), framing).toBe(expected);
    }
    const values = (await bridgeScans()).map((e: { credential_value: string }) => e.credential_value);
    expect(values).toEqual(expect.arrayContaining(['0415AB19C2', 'TICKET-77', '123:45678', '1234:56789', '9:9']));
  });

  it('counts bad frames (checksum, garbage, a frame cut by a new start byte, parity, overlong, not text), scans none of them, and decodes the next good frame', async () => {
    const rdmPair = await pty('bad-rdm');
    const rdm = await device({
      name: 'Bad RDM',
      path: rdmPair.device,
      reader_identifier: 'BRIDGE-BAD',
      access_point_id: gate,
      framing: 'rdm6300',
    });
    await connected(rdm.id);
    const wrongChecksum = Buffer.from('\x0262E3086CEDFF\x03', 'latin1');
    const cut = Buffer.from('\x0262E30', 'latin1');
    await rdmPair.write(Buffer.concat([wrongChecksum, Buffer.from('zz\xff', 'latin1'), cut, rdm6300('62E3086CED')]));
    expect((await rdmPair.receivedBytes(1)).toString('hex')).toBe(GRANT);
    expect(await state(rdm.id)).toMatchObject({ bad_frames: 3, frames: 4 });

    const linePair = await pty('bad-line');
    const line = await device({
      name: 'Bad line',
      path: linePair.device,
      reader_identifier: 'BRIDGE-BAD',
      access_point_id: gate,
      framing: 'line',
    });
    await connected(line.id);
    await linePair.write(
      Buffer.concat([
        Buffer.from('x'.repeat(300)),
        Buffer.from('\r\nTICK\x01ET\r\n'),
        Buffer.from([0xc3, 0x28, 0x0a]),
        Buffer.from('TICKET-77\n'),
      ]),
    );
    expect((await linePair.receivedBytes(1)).toString('hex')).toBe(GRANT);
    expect(await state(line.id)).toMatchObject({ bad_frames: 3, frames: 4 });

    const wPair = await pty('bad-w');
    const w = await device({
      name: 'Bad wiegand',
      path: wPair.device,
      reader_identifier: 'BRIDGE-BAD',
      access_point_id: gate,
      framing: 'wiegand26',
    });
    await connected(w.id);
    const good = Number.parseInt(wiegand26(123, 45678), 16);
    await wPair.write(
      `${(good ^ (1 << 25)).toString(16)}\n${(good ^ 1).toString(16)}\nnot-hex\n${good.toString(16)}\n`,
    );
    expect((await wPair.receivedBytes(1)).toString('hex')).toBe(GRANT);
    expect(await state(w.id)).toMatchObject({ bad_frames: 3, frames: 4 });
    // Nothing bad reached the engine: only the three good frames are access events from these readers.
    const metrics = (await gh.request('GET', '/metrics')).text;
    expect(Number(/^gatehouse_bridge_bad_frames_total (\S+)$/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(9);
    expect(Number(/^gatehouse_bridge_devices_connected (\S+)$/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(3);
    const known = ['62E3086CED', '0000000001', '0415AB19C2', 'TICKET-77', '123:45678', '1234:56789', '9:9'];
    expect(
      (await bridgeScans()).filter((e: { credential_value: string }) => !known.includes(e.credential_value)),
    ).toEqual([]);
  });

  it('debounces a card held on the reader: repeats within debounce_ms are one scan, a later one scans again', async () => {
    const pair = await pty('debounce');
    const { id } = await device({
      name: 'Held card',
      path: pair.device,
      reader_identifier: 'BRIDGE-HELD',
      access_point_id: gate,
      framing: 'rdm6300',
      debounce_ms: 400,
    });
    await connected(id);
    for (let i = 0; i < 3; i++) await pair.write(rdm6300('62E3086CED'));
    await until('three frames', async () => (await state(id)).frames === 3);
    expect(await state(id)).toMatchObject({ frames: 3, debounced: 2 });
    expect((await pair.receivedBytes(1)).toString('hex')).toBe(GRANT);
    await new Promise((r) => setTimeout(r, 600));
    await pair.write(rdm6300('62E3086CED'));
    expect((await pair.receivedBytes(2)).toString('hex')).toBe(GRANT + GRANT);
    expect((await state(id)).debounced).toBe(2);
  });

  it('marks a device unplugged mid-frame disconnected at once, never scans the cut frame, and reopens it when it is plugged back at the same path', async () => {
    const pair = await pty('plug');
    const { id } = await device({
      name: 'Plugged',
      path: pair.device,
      reader_identifier: 'BRIDGE-PLUG',
      access_point_id: gate,
      framing: 'rdm6300',
      debounce_ms: 0,
    });
    await connected(id);
    const frame = rdm6300('62E3086CED');
    await pair.write(frame.subarray(0, 6)); // half a frame, then the plug is pulled
    await new Promise((r) => setTimeout(r, 100));
    await pair.kill();
    await until('disconnected', async () => (await state(id)).connected === false);
    expect(bridgeEvents).toContainEqual({ event: 'bridge_device.disconnected', connected: false, name: 'Plugged' });
    const before = await state(id);
    expect(before.last_error).toMatch(/disconnected|closed|not there/);

    await pair.plug();
    await connected(id);
    expect(bridgeEvents.filter((e) => e.name === 'Plugged').map((e) => e.event)).toEqual([
      'bridge_device.connected',
      'bridge_device.disconnected',
      'bridge_device.connected',
    ]);
    // The rest of the cut frame, then a whole one: only the whole one is a scan.
    await pair.write(Buffer.concat([frame.subarray(6), frame]));
    expect((await pair.receivedBytes(1)).toString('hex')).toBe(GRANT);
    await new Promise((r) => setTimeout(r, 200));
    expect(pair.received().toString('hex')).toBe(GRANT);
    const after = await state(id);
    expect(after).toMatchObject({ connected: true, last_error: null });
    expect(after.bad_frames).toBe(before.bad_frames + 1); // the tail of the cut frame: garbage
  });

  it('a device whose path is not there waits, says why, and opens when it appears', async () => {
    const { id } = await device({
      name: 'Later',
      path: `${dir}/later-dev`,
      reader_identifier: 'BRIDGE-LATER',
      access_point_id: gate,
      framing: 'line',
    });
    await until('the reason', async () => (await state(id)).last_error?.includes('is not there'));
    expect((await state(id)).connected).toBe(false);
    const pair = await pty('later');
    await connected(id);
    await pair.write('TICKET-77\n');
    expect((await pair.receivedBytes(1)).toString('hex')).toBe(GRANT);
  });

  it('disabling a device closes it; deleting it stops it', async () => {
    const pair = await pty('toggle');
    const { id } = await device({
      name: 'Toggle',
      path: pair.device,
      reader_identifier: 'BRIDGE-T',
      access_point_id: gate,
      framing: 'line',
    });
    await connected(id);
    expect((await api.put(`${A}/bridge/devices/${id}`, { enabled: false })).body.data).toMatchObject({
      enabled: false,
    });
    await until('closed', async () => (await state(id)).connected === false);
    await pair.write('TICKET-77\n');
    await new Promise((r) => setTimeout(r, 200));
    expect(pair.received().length).toBe(0);
    expect(
      (await api.put(`${A}/bridge/devices/${id}`, { enabled: true, feedback: { deny: '1515' } })).body.data.feedback,
    ).toEqual({ grant: GRANT, deny: '1515' });
    await connected(id);
    await pair.write('NOBODY\n');
    expect((await pair.receivedBytes(2)).toString('hex')).toBe('1515');
    expect((await api.del(`${A}/bridge/devices/${id}`)).status).toBe(204);
    expect((await api.get(`${A}/bridge/devices/${id}`)).status).toBe(404);
  });

  it('refuses bad device records with field errors, and needs access:write to change them', async () => {
    const bad: [Record<string, unknown>, string][] = [
      [{ name: 'x', reader_identifier: 'R', framing: 'rdm6300' }, 'path'],
      [
        {
          name: 'x',
          reader_identifier: 'R',
          framing: 'rdm6300',
          path: '/dev/ttyUSB9',
          match: { vendor_id: '0403', product_id: '6001' },
        },
        'match',
      ],
      [{ name: 'x', reader_identifier: 'R', framing: 'morse', path: '/dev/ttyUSB9' }, 'framing'],
      [{ name: 'x', reader_identifier: 'R', framing: 'line', path: 'relative/tty' }, 'path'],
      [
        { name: 'x', reader_identifier: 'R', framing: 'line', path: '/dev/ttyUSB9', feedback: { grant: 'xyz' } },
        'feedback.grant',
      ],
      [{ name: 'x', reader_identifier: 'R', framing: 'line', path: '/dev/ttyUSB9', baud_rate: 1234 }, 'baud_rate'],
      [
        { name: 'x', reader_identifier: 'R', framing: 'line', path: '/dev/ttyUSB9', access_point_id: 999_999 },
        'access_point_id',
      ],
      [
        {
          name: 'x',
          reader_identifier: 'R',
          framing: 'hid_keyboard',
          path: '/dev/hidraw9',
          keymap: { '0x28': ['a', 'A'] },
        },
        'keymap',
      ],
      [
        { name: 'x', reader_identifier: 'R', framing: 'line', match: { vendor_id: 'zz', product_id: '6001' } },
        'match.vendor_id',
      ],
      [{ name: 'Door RFID', reader_identifier: 'R', framing: 'line', path: '/dev/ttyUSB9' }, 'name'],
      [{ name: 'x', reader_identifier: 'R', framing: 'line', path: '/dev/ttyUSB9', surprise: 1 }, ''],
    ];
    for (const [body, field] of bad) {
      const res = await api.post(`${A}/bridge/devices`, body);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body.message).toBeTruthy();
      if (field) expect(Object.keys(res.body.errors), JSON.stringify(body)).toContain(field);
    }
    expect(
      (await api.get(`${A}/bridge/devices?per_page=100`)).body.data.some((d: { name: string }) => d.name === 'x'),
    ).toBe(false);
    expect(
      (await api.get(`${A}/readers?per_page=100`)).body.data.some((r: { identifier: string }) => r.identifier === 'R'),
    ).toBe(false);
    expect((await api.put(`${A}/bridge/devices/999999`, { enabled: false })).status).toBe(404);
    const reader = client(gh, await gh.token(['access:read']));
    expect((await reader.get(`${A}/bridge/devices`)).status).toBe(200);
    expect(
      (
        await reader.post(`${A}/bridge/devices`, {
          name: 'y',
          reader_identifier: 'R',
          framing: 'line',
          path: '/dev/ttyUSB8',
        })
      ).status,
    ).toBe(401);
  });
});
