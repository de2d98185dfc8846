import { posix } from 'node:path';
import { z } from 'zod';
import { type BridgeFraming, isHid } from '../resources/bridge-device.js';

// Which files a bridge device may name (docs/bridge.md: Device paths; docs/security.md: Local
// and device inputs). The bridge reads whatever the file gives as scans and writes the feedback
// bytes into it, so a path is a capability: an access:write token that could name /dev/pts/2
// read what was typed in a logged-in terminal and wrote escape sequences into it. A device names
// a serial port (HID: a hidraw device), a place the simulator makes its pty in, or what the
// config file's bridge.allowedPaths adds; nothing else is ever opened, or even looked for, so
// last_error tells nothing about files outside them.

export const SERIAL_PATHS = [
  '/dev/ttyUSB*',
  '/dev/ttyACM*',
  '/dev/ttyS*',
  '/dev/ttyAMA*',
  '/dev/serial/by-id/*',
  '/dev/serial/by-path/*',
] as const;
export const HID_PATHS = ['/dev/hidraw*'] as const;
/** Under the data directory (0700: only the appliance's own user makes
 * files there): `gatehouse bridge simulate` makes its pty pairs here. */
export const SIMULATOR_DIR = 'bridge-simulator';

/** Absolute, and nothing to resolve: no `.` or `..` segment, no
 * `//`, no trailing `/` (so no prefix can be climbed out of). */
export const isCleanPath = (path: string): boolean =>
  path.startsWith('/') && path.length > 1 && posix.normalize(path) === path && !path.endsWith('/');

/** A bridge.allowedPaths entry: `/dir/` (anything below the folder)
 * or a whole path where `*` stands for any characters but `/`. */
export const allowedPathEntry = z
  .string()
  .refine(
    (entry) => isCleanPath(entry.endsWith('/') ? entry.slice(0, -1) : entry),
    'an absolute path without . or .. segments: a folder ending in / ("/var/lib/gatehouse/ptys/") or a pattern with * ("/dev/ttyXRUSB*")',
  );

/** One entry as a test of a clean path. */
function matcherOf(entry: string): (path: string) => boolean {
  if (entry.endsWith('/')) return (path) => path.startsWith(entry);
  const pattern = new RegExp(`^${entry.split('*').map(escapeRegExp).join('[^/]*')}$`);
  return (path) => pattern.test(path);
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export class BridgePaths {
  readonly #serial: ((path: string) => boolean)[];
  readonly #hid: ((path: string) => boolean)[];

  /** `allowed`: bridge.allowedPaths; `dataDir`: the appliance's
   * data directory (the simulator's folder is under it), or null. */
  constructor(allowed: readonly string[], dataDir: string | null) {
    const extra = allowed.map(matcherOf);
    const simulator = dataDir === null ? [] : [matcherOf(`${posix.resolve(dataDir, SIMULATOR_DIR)}/`)];
    this.#serial = [...SERIAL_PATHS.map(matcherOf), ...simulator, ...extra];
    this.#hid = [...HID_PATHS.map(matcherOf), ...extra];
  }

  /** Why a device of this framing may not name `path` ("not a serial
   * port (…) nor in bridge.allowedPaths …"), or null when it may. */
  problem(path: string, framing: BridgeFraming): string | null {
    const hid = isHid(framing);
    if (isCleanPath(path) && (hid ? this.#hid : this.#serial).some((allows) => allows(path))) return null;
    return hid
      ? `not a USB HID device (${HID_PATHS.join(', ')}) nor in bridge.allowedPaths of the config file`
      : `not a serial port (${SERIAL_PATHS.join(', ')}) nor in bridge.allowedPaths of the config file`;
  }
}
