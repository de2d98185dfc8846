import type { BridgeDevice } from '../src/resources/bridge-device.js';

// How the bridge reaches a device, whatever carries its bytes: a serial port
// (serial-transport.ts) or a USB HID device (hid-transport.ts). A device runner
// (device-runner.ts) only sees these three calls.

export interface PortEvents {
  /** Bytes (serial) or one input report (HID). */
  data(chunk: Buffer): void;
  /** The device went away or failed; reason null when we closed it. */
  closed(reason: string | null): void;
}

export interface OpenedPort {
  readonly path: string;
  /** Feedback bytes to the device. */
  write(bytes: Buffer): Promise<void>;
  close(): Promise<void>;
}

export interface Transport {
  /** Where the device is now: its path when that exists, or the
   * path its USB ids are found on; a reason when it is not there. */
  locate(device: BridgeDevice): Promise<{ path: string } | { absent: string }>;
  open(path: string, device: BridgeDevice, events: PortEvents): Promise<OpenedPort>;
}

/** "vendor 0403, product 6001, serial A1" for messages. */
export const describeMatch = (m: NonNullable<BridgeDevice['match']>): string =>
  `USB ${m.vendor_id}:${m.product_id}${m.serial_number ? ` serial ${m.serial_number}` : ''}`;

/** Same USB ids (hex, any case, with or without 0x or padding). */
export const sameUsbId = (a: string | number | undefined, b: string): boolean =>
  a !== undefined &&
  Number.parseInt(String(a).replace(/^0x/i, ''), typeof a === 'number' ? 10 : 16) === Number.parseInt(b, 16);
