import type { Clock } from '../src/clock.js';
import { type ReaderScans, scanErrorRefusal } from '../src/access/reader-scan.js';
import type { ScanService } from '../src/access/scan-service.js';
import { readerKey, type VenueIndex } from '../src/access/venue-index.js';
import type { BridgeDevices } from '../src/devices/bridge-devices.js';
import type { BridgePaths } from '../src/devices/bridge-paths.js';
import type { ReaderStates } from '../src/devices/reader-state.js';
import type { EventBus } from '../src/events/bus.js';
import type { Logger } from '../src/logger.js';
import { type Decide, DeviceRunner } from './device-runner.js';
import type { HidStatus, HidTransport } from './hid-transport.js';
import type { Transport } from './transport.js';
import { type BridgeDevice, type BridgeDeviceState, IDLE_STATE, isHid } from '../src/resources/bridge-device.js';

// The firmware bridge (docs/bridge.md): one runner per enabled device, started with
// the appliance and restarted when its record changes. Its scans take the same path as an MQTT
// reader's: the reader-scan translation (access/reader-scan.ts) with source `bridge`, then the
// scan service, so they are journaled, answered, announced and synced like any other.

export interface BridgeOptions {
  enabled: boolean;
  reopenMinMs: number;
  reopenMaxMs: number;
  badFrameLogIntervalMs: number;
}

export interface BridgeDeps {
  devices: BridgeDevices;
  readerScans: ReaderScans;
  scans: ScanService;
  index: VenueIndex;
  readerStates: ReaderStates;
  bus: EventBus;
  clock: Clock;
  log: Logger;
  serial: Transport;
  hid: HidTransport;
  /** The files a device may name: a stored device outside them (saved
   * by an older version, or the config changed since) is never opened. */
  paths: BridgePaths;
}

export class FirmwareBridge {
  readonly #runners = new Map<number, DeviceRunner>();
  readonly #states = new Map<number, BridgeDeviceState>();
  /** Per device id: the restart in progress, so changes to one device apply in order. */
  #queue = new Map<number, Promise<void>>();
  #started = false;

  constructor(
    private readonly deps: BridgeDeps,
    private readonly options: BridgeOptions,
  ) {}

  start(): void {
    if (!this.options.enabled) {
      this.deps.log.info('firmware bridge off (bridge.enabled = false)');
      return;
    }
    this.#started = true;
    this.deps.bus.on(this, 'bridge_device.saved', ({ id }) => this.#restart(id));
    this.deps.bus.on(this, 'bridge_device.deleted', ({ id }) => this.#restart(id));
    const devices = this.deps.devices.list(null).items;
    for (const device of devices) this.#restart(device.id);
    // node-hid is loaded only when a HID device needs it (a box without libusb starts all the same).
    if (devices.some((d) => isHid(d.framing))) {
      const hid = this.deps.hid.status();
      if (!hid.available) this.deps.log.warn({ reason: hid.reason }, 'USB HID devices configured, but HID is off');
    }
  }

  async stop(): Promise<void> {
    this.deps.bus.removeListeners(this);
    this.#started = false;
    await Promise.all(this.#queue.values());
    await Promise.all([...this.#runners.values()].map((r) => r.stop()));
    this.#runners.clear();
  }

  /** What the bridge knows of a device now (idle when it is not running). */
  stateOf(id: number): BridgeDeviceState {
    return { ...(this.#states.get(id) ?? IDLE_STATE) };
  }

  /** Sums over every device since start (/metrics). */
  totals(): { connected: number; frames: number; badFrames: number; debounced: number; errors: number } {
    const t = { connected: 0, frames: 0, badFrames: 0, debounced: 0, errors: 0 };
    for (const s of this.#states.values()) {
      t.connected += s.connected ? 1 : 0;
      t.frames += s.frames;
      t.badFrames += s.bad_frames;
      t.debounced += s.debounced;
      t.errors += s.errors;
    }
    return t;
  }

  hidStatus(): HidStatus {
    return this.deps.hid.status();
  }

  /** Settles once every restart asked for so far is done (tests, shutdown). */
  async settled(): Promise<void> {
    await Promise.all(this.#queue.values());
  }

  #restart(id: number): void {
    const previous = this.#queue.get(id) ?? Promise.resolve();
    const next = previous.then(async () => {
      const old = this.#runners.get(id);
      this.#runners.delete(id);
      if (old) await old.stop();
      const device = this.deps.devices.byId(id);
      if (!device) {
        this.#states.delete(id);
        return;
      }
      if (!this.#started || !device.enabled) {
        const state = this.#states.get(id);
        if (state) state.last_error = device.enabled ? state.last_error : null;
        return;
      }
      let state = this.#states.get(id);
      if (!state) this.#states.set(id, (state = { ...IDLE_STATE }));
      const refused = device.path === null ? null : this.deps.paths.problem(device.path, device.framing);
      if (refused) {
        // Not looked for either: its last_error is the same whether such a file exists or not.
        Object.assign(state, {
          connected: false,
          opened_path: null,
          last_error: `${device.path} is ${refused}: not opened`,
        });
        this.deps.log.warn({ device_id: id, path: device.path }, 'bridge device path not allowed; not opened');
        return;
      }
      const runner = new DeviceRunner(device, state, {
        transport: isHid(device.framing) ? this.deps.hid : this.deps.serial,
        decide: this.#decide,
        clock: this.deps.clock,
        log: this.deps.log,
        reopen: { minMs: this.options.reopenMinMs, maxMs: this.options.reopenMaxMs },
        badFrameLogIntervalMs: this.options.badFrameLogIntervalMs,
        connected: (d, s) => this.#announce(d, s, true),
        disconnected: (d, s) => this.#announce(d, s, false),
      });
      this.#runners.set(id, runner);
      runner.start();
    });
    const settled = next.catch((err) => this.deps.log.error({ err, device_id: id }, 'bridge device restart failed'));
    this.#queue.set(id, settled);
    void settled.then(() => {
      if (this.#queue.get(id) === settled) this.#queue.delete(id);
    });
  }

  /** The reader-scan translation every transport shares, source
   * `bridge`; the device's access point when it names one. */
  readonly #decide: Decide = async (device, value) => {
    const located = this.deps.readerScans.locate({
      projectId: device.projectId,
      identifier: device.reader_identifier,
      credentialValue: value,
      requestId: null,
      source: 'bridge',
    });
    if (!located.ok) return { refused: located.refusal.message };
    const request =
      device.access_point_id === null ? located.request : { ...located.request, accessPointId: device.access_point_id };
    try {
      const outcome = await this.deps.scans.scan(request);
      return { granted: outcome.granted };
    } catch (err) {
      return { refused: scanErrorRefusal(err, device.reader_identifier).message }; // its access point deleted meanwhile
    }
  };

  #announce(device: BridgeDevice, state: BridgeDeviceState, connected: boolean): void {
    const reader = this.deps.index.readers.get(readerKey(device.projectId, device.reader_identifier));
    if (reader) this.deps.readerStates.bridged(device.projectId, reader.id, connected);
    const event = {
      projectId: device.projectId,
      device: {
        id: device.id,
        name: device.name,
        reader_identifier: device.reader_identifier,
        framing: device.framing,
        connected,
        opened_path: state.opened_path,
        last_error: state.last_error,
      },
    };
    this.deps.bus.emit(connected ? 'bridge_device.connected' : 'bridge_device.disconnected', event);
  }
}
