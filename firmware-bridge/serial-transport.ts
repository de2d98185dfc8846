import { existsSync } from 'node:fs';
import { describeMatch, type OpenedPort, type PortEvents, sameUsbId, type Transport } from './transport.js';
import type { BridgeDevice } from '../src/resources/bridge-device.js';

// Serial ports through `serialport` (the design's package), loaded on first use. A device is
// found by its path, or by USB ids through serialport's port list (which needs udevadm on
// Linux; where that is missing, such a device says why in last_error). The bytes are handed on
// as they arrive; serialport tells an unplug apart from our own close (err.disconnected).

type SerialPortModule = typeof import('serialport');
let loaded: Promise<SerialPortModule> | null = null;
const serialport = () => (loaded ??= import('serialport'));

export class SerialTransport implements Transport {
  async locate(device: BridgeDevice): Promise<{ path: string } | { absent: string }> {
    if (device.path !== null)
      return existsSync(device.path) ? { path: device.path } : { absent: `${device.path} is not there` };
    const match = device.match!;
    let ports: Awaited<ReturnType<SerialPortModule['SerialPort']['list']>>;
    try {
      ports = await (await serialport()).SerialPort.list();
    } catch (err) {
      return { absent: `cannot list serial ports to find ${describeMatch(match)}: ${(err as Error).message}` };
    }
    const port = ports.find(
      (p) =>
        sameUsbId(p.vendorId, match.vendor_id) &&
        sameUsbId(p.productId, match.product_id) &&
        (!match.serial_number || p.serialNumber === match.serial_number),
    );
    return port ? { path: port.path } : { absent: `no serial port with ${describeMatch(match)}` };
  }

  async open(path: string, device: BridgeDevice, events: PortEvents): Promise<OpenedPort> {
    const { SerialPort } = await serialport();
    const port = new SerialPort({
      path,
      baudRate: device.baud_rate,
      dataBits: device.data_bits,
      stopBits: device.stop_bits,
      parity: device.parity,
      autoOpen: false,
    });
    await new Promise<void>((resolve, reject) => port.open((err) => (err ? reject(err) : resolve())));
    let closing = false;
    port.on('data', (chunk: Buffer) => events.data(chunk));
    // An unplugged device closes with err.disconnected; a read error may come as 'error' first.
    port.on('error', (err: Error) => {
      if (!closing && port.isOpen) port.close(() => {});
      if (!closing) events.closed(err.message);
      closing = true;
    });
    port.on('close', (err: (Error & { disconnected?: boolean }) | null) => {
      if (closing) return;
      closing = true;
      events.closed(err ? `${err.disconnected ? 'disconnected' : 'closed'}: ${err.message}` : 'closed');
    });
    return {
      path,
      // Handed to the OS, not drained: waiting for a beep's bytes to leave the wire would cost
      // another trip through libuv's thread pool per scan (bench:bridge) and tells nothing more.
      write: (bytes) =>
        new Promise<void>((resolve, reject) => port.write(bytes, (err) => (err ? reject(err) : resolve()))),
      close: () =>
        new Promise<void>((resolve) => {
          if (closing || !port.isOpen) {
            closing = true;
            resolve();
            return;
          }
          closing = true;
          port.close(() => resolve());
        }),
    };
  }
}
