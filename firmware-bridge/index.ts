import type { ReaderScans } from '../src/access/reader-scan.js';
import type { ScanService } from '../src/access/scan-service.js';
import { readerKey, type VenueIndex } from '../src/access/venue-index.js';
import type { ProjectRepository } from '../src/accounts/projects.js';
import type { Clock } from '../src/clock.js';
import type { Config } from '../src/config/schema.js';
import { BridgeDevices, type EnsureReader } from '../src/devices/bridge-devices.js';
import { BridgePaths } from '../src/devices/bridge-paths.js';
import type { ReaderStates } from '../src/devices/reader-state.js';
import { AppError, validationError } from '../src/errors.js';
import type { EventBus } from '../src/events/bus.js';
import type { Logger } from '../src/logger.js';
import type { Database } from '../src/store/database.js';
import type { Venue } from '../src/venue/index.js';
import { FirmwareBridge } from './bridge.js';
import { keyboardDecoder } from './hid/index.js';
import { type HidBackend, HidTransport, nodeHidBackend } from './hid-transport.js';
import { SerialTransport } from './serial-transport.js';
import type { BridgeDeviceSettings } from '../src/resources/bridge-device.js';

export { FirmwareBridge } from './bridge.js';
export { registerBridgeMetrics } from './metrics.js';
export type { HidBackend, HidDeviceInfo, HidHandle } from './hid-transport.js';

// The firmware bridge as the composition root builds it (src/services.ts): the devices' record,
// the runtime with its two transports, and the config file's devices applied at start.

export interface FirmwareBridgeParts {
  devices: BridgeDevices;
  runtime: FirmwareBridge;
  /** The config file's devices written into the record (at start, before the runtime). */
  applyConfig(): void;
}

export interface FirmwareBridgeDeps {
  db: Database;
  clock: Clock;
  bus: EventBus;
  log: Logger;
  config: Readonly<Config>;
  venue: Venue;
  index: VenueIndex;
  projects: ProjectRepository;
  readerScans: ReaderScans;
  scans: ScanService;
  readerStates: ReaderStates;
  /** Tests: USB HID devices of their own (or HID as if node-hid could not load); else node-hid, loaded on first use. */
  hidBackend?: HidBackend | { unavailable: string };
}

export function createFirmwareBridge(d: FirmwareBridgeDeps): FirmwareBridgeParts {
  const paths = new BridgePaths(d.config.bridge.allowedPaths, d.config.dataDir);
  const devices = new BridgeDevices(d.db, d.clock, d.bus, ensureReader(d), paths, checkDecoder);
  const given = d.hidBackend;
  const hid = new HidTransport(given ? () => ('unavailable' in given ? given : { backend: given }) : nodeHidBackend);
  const { enabled, reopenMinMs, reopenMaxMs, badFrameLogIntervalMs } = d.config.bridge;
  const runtime = new FirmwareBridge(
    {
      devices,
      readerScans: d.readerScans,
      scans: d.scans,
      index: d.index,
      readerStates: d.readerStates,
      bus: d.bus,
      clock: d.clock,
      log: d.log.child({ module: 'bridge' }),
      serial: new SerialTransport(),
      hid,
      paths,
    },
    { enabled, reopenMinMs, reopenMaxMs, badFrameLogIntervalMs },
  );
  const applyConfig = () => {
    const wanted = d.config.bridge.devices.map(({ project, ...body }) => {
      const [team, slug] = project.split('/') as [string, string];
      const found = d.projects.findBySlugs(team, slug);
      if (!found)
        throw new AppError('conflict', {
          detail: `bridge.devices: "${body.name}" names project "${project}", which does not exist.`,
        });
      return { projectId: found.id, body };
    });
    devices.applyConfig(wanted);
  };
  return { devices, runtime, applyConfig };
}

/** The reader a device acts as: made when missing (an RFID reader for the
 * RFID framings), except on an edge, where readers come from the cloud. */
function ensureReader({ config, venue, index }: FirmwareBridgeDeps): EnsureReader {
  return (projectId, identifier, accessPointId, framing) => {
    if (index.readers.has(readerKey(projectId, identifier))) return;
    if (config.role === 'edge')
      throw validationError({
        reader_identifier: [
          'No reader has this identifier. On an edge, readers come from the cloud: create it there first.',
        ],
      });
    const type = framing === 'line' || framing === 'hid_pos' || framing === 'hid_keyboard' ? 'barcode' : 'rfid';
    venue.readers.create(projectId, { identifier, type, access_point_id: accessPointId });
  };
}

/** A keyboard-mode device's keymap, checked by the decoder that will use it. */
function checkDecoder(s: BridgeDeviceSettings): string | null {
  if (s.framing !== 'hid_keyboard') return null;
  try {
    keyboardDecoder({ layout: s.keyboard_layout, ...(s.keymap ? { keymap: s.keymap } : {}) });
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}
