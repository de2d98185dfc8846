import { EventEmitter } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HidBackend, HidDeviceInfo, HidHandle } from '../../firmware-bridge/index.js';
import { client, startAppliance, type TestAppliance } from '../helpers/appliance.js';

// USB HID scanners plugged into the box (docs/bridge.md). No USB device exists on a build
// machine, so the appliance is given a HidBackend of the test's (the one place the bridge meets
// node-hid) that plays real report byte sequences:
//   HID POS scanned-data report, 64 bytes: [0x02, length, AIM id x3, data x56, vendor x2, flags]
//     (flags bit 0: the code continues in the next report);
//   boot-keyboard report, 8 bytes: [modifiers, 0, key1..key6] (0x02 left shift), a release
//     report (all keys 0) after each key, 0x28 Enter ends the scan.
// Also: HID as it is on a box where node-hid cannot load (no hidraw / libusb).

/** A USB HID device the test plugs in and out. */
class FakeHid extends EventEmitter implements HidHandle {
  written: number[][] = [];
  closed = false;
  write(values: number[]): number {
    this.written.push(values);
    return values.length;
  }
  close(): void {
    this.closed = true;
  }
}

class FakeBackend implements HidBackend {
  readonly attached = new Map<string, HidDeviceInfo>();
  readonly open_ = new Map<string, FakeHid>();
  devices(): HidDeviceInfo[] {
    return [...this.attached.values()];
  }
  open(path: string): HidHandle {
    if (!this.attached.has(path)) throw new Error(`cannot open device with path ${path}`);
    const handle = new FakeHid();
    this.open_.set(path, handle);
    return handle;
  }
  plug(info: HidDeviceInfo): void {
    this.attached.set(info.path!, info);
  }
  /** Pulled out: gone from the list, and the open handle fails as node-hid's does. */
  unplug(path: string): void {
    this.attached.delete(path);
    this.open_.get(path)?.emit('error', new Error('could not read from HID device'));
  }
}

function posReport(text: string, aim: string, continues = false): Buffer {
  const report = Buffer.alloc(64);
  report[0] = 0x02;
  const data = Buffer.from(text, 'utf8');
  report[1] = data.length;
  report.write(aim, 2, 'latin1');
  data.copy(report, 5);
  report[63] = continues ? 1 : 0;
  return report;
}

/** "Ab1" + Enter as a keyboard-mode scanner types it (US layout). */
function keyboardReports(text: string): Buffer[] {
  const reports: Buffer[] = [];
  for (const ch of text) {
    const lower = ch.toLowerCase();
    const code = /[a-z]/.test(lower)
      ? 0x04 + lower.charCodeAt(0) - 97
      : ch === '0'
        ? 0x27
        : /[1-9]/.test(ch)
          ? 0x1e + Number(ch) - 1
          : ch === '-'
            ? 0x2d
            : 0;
    const shift = ch !== lower ? 0x02 : 0;
    reports.push(Buffer.from([shift, 0, code, 0, 0, 0, 0, 0]), Buffer.alloc(8));
  }
  reports.push(Buffer.from([0, 0, 0x28, 0, 0, 0, 0, 0]), Buffer.alloc(8));
  return reports;
}

const A = '/api/v1/projects/default/default';

describe('USB HID scanners through the bridge', () => {
  let gh: TestAppliance;
  let api: ReturnType<typeof client>;
  let gate: number;
  const usb = new FakeBackend();
  const state = async (id: number) => (await api.get(`${A}/bridge/devices/${id}`)).body.data;
  const until = async (what: string, probe: () => Promise<boolean>) => {
    const deadline = Date.now() + 10_000;
    while (!(await probe())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  const writes = async (path: string, n: number) => {
    await until(`${n} feedback writes to ${path}`, async () => (usb.open_.get(path)?.written.length ?? 0) >= n);
    return usb.open_.get(path)!.written.map((w) => Buffer.from(w).toString('hex'));
  };

  beforeAll(async () => {
    gh = await startAppliance(
      { GATEHOUSE_BRIDGE_REOPEN_MIN_MS: '50', GATEHOUSE_BRIDGE_REOPEN_MAX_MS: '200' },
      { overrides: { hidBackend: usb } },
    );
    api = client(gh, await gh.token());
    const zone = (await api.post(`${A}/access-zones`, { name: 'Hall' })).body.data.id;
    gate = (await api.post(`${A}/access-points`, { name: 'Kiosk', access_zone_id: zone, direction: 'in' })).body.data
      .id;
    await api.post(`${A}/attendees/import`, [
      { first_name: 'Eve', last_name: 'Ean', credential_value: '4006381333931' },
      { first_name: 'Kay', last_name: 'Board', credential_value: 'Ab1-x' },
      { first_name: 'Zed', last_name: 'Board', credential_value: 'Zz9-q' },
      { first_name: 'Quinn', last_name: 'Long', credential_value: `Q-${'9'.repeat(100)}` },
    ]);
  });
  afterAll(() => gh.destroy());

  it('finds a HID POS scanner by its USB ids on the POS usage page, joins continued reports, and writes the feedback as an output report', async () => {
    usb.plug({ path: '/dev/hidraw3', vendorId: 0x0c2e, productId: 0x0b61, serialNumber: 'SN1', usagePage: 0x01 });
    usb.plug({ path: '/dev/hidraw4', vendorId: 0x0c2e, productId: 0x0b61, serialNumber: 'SN1', usagePage: 0x8c });
    const res = await api.post(`${A}/bridge/devices`, {
      name: 'Kiosk scanner',
      match: { vendor_id: '0x0c2e', product_id: '0b61', serial_number: 'SN1' },
      reader_identifier: 'KIOSK-1',
      access_point_id: gate,
      framing: 'hid_pos',
      feedback: { grant: '00 01', deny: '00 02' },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body.data.match).toEqual({ vendor_id: '0c2e', product_id: '0b61', serial_number: 'SN1' });
    const { id } = res.body.data;
    await until('connected', async () => (await state(id)).connected === true);
    expect((await state(id)).opened_path).toBe('/dev/hidraw4');

    const scanner = usb.open_.get('/dev/hidraw4')!;
    scanner.emit('data', Buffer.from([0x04, 0x01, 0x00])); // a status report: ignored
    scanner.emit('data', posReport('4006381333931', ']E0'));
    expect(await writes('/dev/hidraw4', 1)).toEqual(['0001']);
    const long = `Q-${'9'.repeat(100)}`;
    scanner.emit('data', posReport(long.slice(0, 56), ']Q1', true));
    scanner.emit('data', posReport(long.slice(56), '\0\0\0'));
    expect(await writes('/dev/hidraw4', 2)).toEqual(['0001', '0001']);
    scanner.emit('data', posReport('UNKNOWN-CODE', ']C0'));
    expect(await writes('/dev/hidraw4', 3)).toEqual(['0001', '0001', '0002']);
    const events = (await api.get(`${A}/access-events?per_page=100`)).body.data.filter(
      (e: { source: string }) => e.source === 'bridge',
    );
    expect(events.map((e: { credential_value: string }) => e.credential_value).sort()).toEqual(
      ['4006381333931', 'UNKNOWN-CODE', long].sort(),
    );
  });

  it('reads a keyboard-mode scanner (shift, release reports, Enter) and survives an unplug: disconnected at once, the cut scan dropped, reopened when it is back', async () => {
    usb.plug({ path: '/dev/hidraw7', vendorId: 0x05e0, productId: 0x1200 });
    const res = await api.post(`${A}/bridge/devices`, {
      name: 'Keyboard wedge',
      path: '/dev/hidraw7',
      reader_identifier: 'KIOSK-2',
      access_point_id: gate,
      framing: 'hid_keyboard',
      feedback: { grant: '01', deny: '02' },
    });
    expect(res.status, res.text).toBe(201);
    const { id } = res.body.data;
    await until('connected', async () => (await state(id)).connected === true);
    for (const report of keyboardReports('Ab1-x')) usb.open_.get('/dev/hidraw7')!.emit('data', report);
    expect(await writes('/dev/hidraw7', 1)).toEqual(['01']);

    // Half a scan, then the plug is pulled.
    for (const report of keyboardReports('Ab1-x').slice(0, 4)) usb.open_.get('/dev/hidraw7')!.emit('data', report);
    usb.unplug('/dev/hidraw7');
    await until('disconnected', async () => (await state(id)).connected === false);
    expect((await state(id)).last_error).toMatch(/disconnected/);
    const before = await state(id);
    usb.plug({ path: '/dev/hidraw7', vendorId: 0x05e0, productId: 0x1200 });
    await until('reconnected', async () => (await state(id)).connected === true);
    const fresh = usb.open_.get('/dev/hidraw7')!;
    // The rest of the cut scan ("1-x" + Enter) is not glued onto its first half: a scan of its
    // own, of a code nobody holds (denied); then a whole scan of another attendee (Kay is inside).
    for (const report of keyboardReports('Ab1-x').slice(4)) fresh.emit('data', report);
    for (const report of keyboardReports('Zz9-q')) fresh.emit('data', report);
    expect(await writes('/dev/hidraw7', 2)).toEqual(['02', '01']);
    expect((await state(id)).bad_frames).toBe(before.bad_frames);
    expect(before.bad_frames).toBeGreaterThanOrEqual(1); // the cut scan, counted as partial
  });

  it('says why HID is off on a box where node-hid cannot load, and HID devices wait with that reason', async () => {
    const off = await startAppliance(
      {},
      {
        overrides: {
          hidBackend: {
            unavailable: 'USB HID is off: node-hid cannot load here (libusb-1.0.so.0: cannot open shared object file)',
          },
        },
      },
    );
    try {
      const offApi = client(off, await off.token());
      const res = await offApi.post(`${A}/bridge/devices`, {
        name: 'No HID',
        path: '/dev/hidraw0',
        reader_identifier: 'KIOSK-9',
        framing: 'hid_pos',
      });
      expect(res.status, res.text).toBe(201);
      const list = (await offApi.get(`${A}/bridge/devices`)).body;
      expect(list.meta.hid).toEqual({ available: false, reason: expect.stringContaining('libusb') });
      await until('the reason on the device', async () =>
        ((await offApi.get(`${A}/bridge/devices/${res.body.data.id}`)).body.data.last_error ?? '').includes(
          'HID is off',
        ),
      );
      // Still a working appliance: serial devices and everything else unaffected.
      expect((await offApi.get('/ready')).status).toBe(200);
    } finally {
      await off.destroy();
    }
    expect((await api.get(`${A}/bridge/devices`)).body.meta.hid).toEqual({ available: true, reason: null });
  });
});
