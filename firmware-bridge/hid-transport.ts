import { createRequire } from 'node:module';
import { describeMatch, type OpenedPort, type PortEvents, sameUsbId, type Transport } from './transport.js';
import type { BridgeDevice } from '../src/resources/bridge-device.js';

// USB HID scanners through `node-hid`, loaded lazily: it needs hidraw (and its prebuilt binary
// libusb / libudev) at run time, and a box without them must still start and decide. Where it
// cannot load, status() says why and every HID device's last_error says so too. Tests hand in
// a HidBackend of their own that plays real report bytes (no USB device on a build machine).

/** What the bridge needs of node-hid (its `devices()` and `new HID(path)`). */
export interface HidBackend {
  devices(): HidDeviceInfo[];
  open(path: string): HidHandle;
}

export interface HidDeviceInfo {
  path?: string;
  vendorId: number;
  productId: number;
  serialNumber?: string;
  usagePage?: number;
}

export interface HidHandle {
  on(event: 'data', listener: (report: Buffer) => void): unknown;
  on(event: 'error', listener: (err: Error) => void): unknown;
  write(values: number[]): number;
  close(): void;
}

export type HidStatus = { available: true; reason: null } | { available: false; reason: string };

/** node-hid, or why it cannot be used here. Loaded once, on first use. */
export function nodeHidBackend(): { backend: HidBackend } | { unavailable: string } {
  try {
    const hid = createRequire(import.meta.url)('node-hid') as {
      devices(): HidDeviceInfo[];
      HID: new (path: string) => HidHandle;
    };
    hid.devices(); // loads the native binding: this is where a missing libusb/libudev shows
    return { backend: { devices: () => hid.devices(), open: (path) => new hid.HID(path) } };
  } catch (err) {
    return { unavailable: `USB HID is off: node-hid cannot load here (${(err as Error).message.split('\n')[0]})` };
  }
}

export class HidTransport implements Transport {
  #loaded: { backend: HidBackend } | { unavailable: string } | null = null;

  constructor(private readonly load: () => { backend: HidBackend } | { unavailable: string } = nodeHidBackend) {}

  status(): HidStatus {
    const loaded = this.#load();
    return 'backend' in loaded ? { available: true, reason: null } : { available: false, reason: loaded.unavailable };
  }

  async locate(device: BridgeDevice): Promise<{ path: string } | { absent: string }> {
    const loaded = this.#load();
    if (!('backend' in loaded)) return { absent: loaded.unavailable };
    let list: HidDeviceInfo[];
    try {
      list = loaded.backend.devices();
    } catch (err) {
      return { absent: `cannot list USB HID devices: ${(err as Error).message}` };
    }
    if (device.path !== null)
      return list.some((d) => d.path === device.path)
        ? { path: device.path }
        : { absent: `${device.path} is not there` };
    const m = device.match!;
    // POS scanners expose several interfaces; prefer the one on the HID POS usage page (0x8C).
    const candidates = list.filter(
      (d) =>
        d.path &&
        sameUsbId(d.vendorId, m.vendor_id) &&
        sameUsbId(d.productId, m.product_id) &&
        (!m.serial_number || d.serialNumber === m.serial_number),
    );
    const chosen =
      (device.framing === 'hid_pos' ? candidates.find((d) => d.usagePage === 0x8c) : undefined) ?? candidates[0];
    return chosen ? { path: chosen.path! } : { absent: `no USB HID device with ${describeMatch(m)}` };
  }

  async open(path: string, _device: BridgeDevice, events: PortEvents): Promise<OpenedPort> {
    const loaded = this.#load();
    if (!('backend' in loaded)) throw new Error(loaded.unavailable);
    const handle = loaded.backend.open(path);
    let closed = false;
    handle.on('data', (report) => {
      if (!closed) events.data(report);
    });
    handle.on('error', (err) => {
      if (closed) return;
      closed = true;
      try {
        handle.close();
      } catch {}
      events.closed(`disconnected: ${err.message}`);
    });
    return {
      path,
      write: async (bytes) => {
        // An output report: the first byte is the report id (0 when the device uses none).
        handle.write([...bytes]);
      },
      close: async () => {
        if (closed) return;
        closed = true;
        handle.close();
      },
    };
  }

  #load(): { backend: HidBackend } | { unavailable: string } {
    this.#loaded ??= this.load();
    return this.#loaded;
  }
}
