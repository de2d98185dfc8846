import { z } from 'zod';
import type { Clock } from '../clock.js';
import { iso } from '../clock.js';
import { AppError, found, validationError } from '../errors.js';
import type { EventBus } from '../events/bus.js';
import { commit } from '../events/unit-of-work.js';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';

// Readers plugged into the box (issue 27; docs/bridge.md): a serial port or a USB HID device
// that acts as a reader. This is their record (REST and the config file); the ports themselves
// are opened by firmware-bridge/, which listens for bridge.device_saved / _deleted and reports
// each device's live state (connected, counters) back for the answers below.

export const SERIAL_FRAMINGS = ['line', 'rdm6300', 'id12', 'wiegand26', 'wiegand34'] as const;
export const HID_FRAMINGS = ['hid_pos', 'hid_keyboard'] as const;
export const BRIDGE_FRAMINGS = [...SERIAL_FRAMINGS, ...HID_FRAMINGS] as const;
export type BridgeFraming = (typeof BRIDGE_FRAMINGS)[number];
export const KEYBOARD_LAYOUTS = ['us', 'uk', 'de', 'fr'] as const;
export const BAUD_RATES = [300, 600, 1200, 2400, 4800, 9600, 14400, 19200, 38400, 57600, 115200, 230400, 460800, 921600] as const;

export const isHid = (framing: BridgeFraming): boolean => (HID_FRAMINGS as readonly string[]).includes(framing);

/** A USB vendor or product id: a number or hex text ("0x0403", "0403"), kept as 4 lower-case hex digits. */
const usbId = z
  .union([z.number().int().min(0).max(0xffff), z.string().regex(/^(0x)?[0-9a-fA-F]{1,4}$/, 'a USB id: 1 to 4 hex digits, e.g. "0x0403"')])
  .transform((v) => (typeof v === 'number' ? v : Number.parseInt(v.replace(/^0x/, ''), 16)).toString(16).padStart(4, '0'));

/** Bytes written back after a decision: hex pairs, spaces or colons between them allowed ("07", "02 41 03"). */
const hexBytes = z
  .string()
  .transform((s) => s.replace(/[\s:]/g, '').toLowerCase())
  .pipe(z.string().regex(/^(?:[0-9a-f]{2}){1,64}$/, 'hex pairs, e.g. "07" or "02 41 03", 1 to 64 bytes'));

const identifierField = z
  .string()
  .trim()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9._:-]+$/, 'letters, digits, dot, underscore, colon and dash');

/** Every setting, none required: the create body adds what is required, an update merges what it names. */
const fields = {
  name: z.string().trim().min(1).max(100),
  path: z.string().min(1).max(4096).regex(/^\//, 'an absolute path, e.g. /dev/ttyUSB0 or /dev/hidraw0').nullable().describe('where the device is; or match'),
  match: z
    .strictObject({ vendor_id: usbId, product_id: usbId, serial_number: z.string().min(1).max(128).nullable().optional() })
    .nullable()
    .describe('the USB ids the device is found by on whatever path it appears (re-plugged elsewhere, it is found again); or path'),
  reader_identifier: identifierField.describe('the reader the device acts as; created with access_point_id when missing (not on an edge)'),
  access_point_id: z.number().int().positive().nullable().describe("where its scans are decided; null: the reader's access point"),
  framing: z.enum(BRIDGE_FRAMINGS),
  baud_rate: z
    .number()
    .int()
    .refine((n) => (BAUD_RATES as readonly number[]).includes(n), `one of ${BAUD_RATES.join(', ')}`),
  data_bits: z.union([z.literal(5), z.literal(6), z.literal(7), z.literal(8)]),
  stop_bits: z.union([z.literal(1), z.literal(2)]),
  parity: z.enum(['none', 'even', 'odd']),
  feedback: z.strictObject({ grant: hexBytes.nullable().optional(), deny: hexBytes.nullable().optional() }).describe('bytes written to the device after a grant or a denial (hex)'),
  debounce_ms: z.number().int().min(0).max(600_000).describe('the same credential from this device within this many ms is one scan'),
  keyboard_layout: z.enum(KEYBOARD_LAYOUTS).describe('hid_keyboard: the layout the scanner types in'),
  keymap: z
    .record(z.string().regex(/^0x[0-9a-fA-F]{2}$/, 'a keycode, e.g. "0x1c"'), z.tuple([z.string().min(1).max(2), z.string().min(1).max(2)]))
    .nullable()
    .describe('hid_keyboard: keycodes mapped to [unshifted, shifted], over the layout'),
  enabled: z.boolean(),
};

export const DEVICE_DEFAULTS = {
  path: null,
  match: null,
  access_point_id: null,
  baud_rate: 9600,
  data_bits: 8,
  stop_bits: 1,
  parity: 'none',
  feedback: { grant: null, deny: null },
  debounce_ms: 2000,
  keyboard_layout: 'us',
  keymap: null,
  enabled: true,
} as const;

const { name, reader_identifier, framing, ...optionalFields } = fields;
export const createBridgeDeviceBody = z.strictObject({ name, reader_identifier, framing, ...partialOf(optionalFields) });
export const updateBridgeDeviceBody = z.strictObject(partialOf(fields));
export type CreateBridgeDevice = z.output<typeof createBridgeDeviceBody>;
export type UpdateBridgeDevice = z.output<typeof updateBridgeDeviceBody>;

/** A device's settings, every one present (what is stored). */
export interface BridgeDeviceSettings {
  path: string | null;
  match: { vendor_id: string; product_id: string; serial_number?: string | null } | null;
  reader_identifier: string;
  access_point_id: number | null;
  framing: BridgeFraming;
  baud_rate: number;
  data_bits: 5 | 6 | 7 | 8;
  stop_bits: 1 | 2;
  parity: 'none' | 'even' | 'odd';
  feedback: { grant: string | null; deny: string | null };
  debounce_ms: number;
  keyboard_layout: (typeof KEYBOARD_LAYOUTS)[number];
  keymap: Record<string, [string, string]> | null;
  enabled: boolean;
}

export interface BridgeDevice extends BridgeDeviceSettings {
  id: number;
  projectId: number;
  name: string;
  managedBy: 'api' | 'config';
  createdAt: string;
  updatedAt: string;
}

/** What the bridge knows of a device while the appliance runs. */
export interface BridgeDeviceState {
  connected: boolean;
  /** The path it is open on (for a device found by USB ids), else null. */
  opened_path: string | null;
  last_frame_at: string | null;
  last_scan_at: string | null;
  frames: number;
  bad_frames: number;
  debounced: number;
  errors: number;
  last_error: string | null;
}

export const bridgeDeviceStateSchema = z.object({
  connected: z.boolean(),
  opened_path: z.string().nullable(),
  last_frame_at: z.string().nullable(),
  last_scan_at: z.string().nullable(),
  frames: z.number().int().describe('frames read (good and bad)'),
  bad_frames: z.number().int().describe('wrong checksum or parity, garbage, cut, overlong or not text: never a scan'),
  debounced: z.number().int().describe('repeats within debounce_ms, not scanned again'),
  errors: z.number().int().describe('failures to open, read, write or decide'),
  last_error: z.string().nullable(),
});

export const IDLE_STATE: BridgeDeviceState = { connected: false, opened_path: null, last_frame_at: null, last_scan_at: null, frames: 0, bad_frames: 0, debounced: 0, errors: 0, last_error: null };

export const bridgeDeviceSchema = z
  .object({
    id: z.number().int(),
    name: z.string(),
    path: z.string().nullable(),
    match: z.object({ vendor_id: z.string(), product_id: z.string(), serial_number: z.string().nullable() }).nullable(),
    reader_identifier: z.string(),
    access_point_id: z.number().int().nullable(),
    framing: z.enum(BRIDGE_FRAMINGS),
    baud_rate: z.number().int(),
    data_bits: z.number().int(),
    stop_bits: z.number().int(),
    parity: z.enum(['none', 'even', 'odd']),
    feedback: z.object({ grant: z.string().nullable(), deny: z.string().nullable() }),
    debounce_ms: z.number().int(),
    keyboard_layout: z.enum(KEYBOARD_LAYOUTS),
    keymap: z.record(z.string(), z.tuple([z.string(), z.string()])).nullable(),
    enabled: z.boolean(),
    managed_by: z.enum(['api', 'config']).describe('config: from the config file, changed there only'),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .extend(bridgeDeviceStateSchema.shape);
export type BridgeDeviceResource = z.infer<typeof bridgeDeviceSchema>;

export function bridgeDeviceResource(d: BridgeDevice, state: BridgeDeviceState): BridgeDeviceResource {
  return {
    id: d.id,
    name: d.name,
    path: d.path,
    match: d.match ? { vendor_id: d.match.vendor_id, product_id: d.match.product_id, serial_number: d.match.serial_number ?? null } : null,
    reader_identifier: d.reader_identifier,
    access_point_id: d.access_point_id,
    framing: d.framing,
    baud_rate: d.baud_rate,
    data_bits: d.data_bits,
    stop_bits: d.stop_bits,
    parity: d.parity,
    feedback: d.feedback,
    debounce_ms: d.debounce_ms,
    keyboard_layout: d.keyboard_layout,
    keymap: d.keymap,
    enabled: d.enabled,
    managed_by: d.managedBy,
    created_at: d.createdAt,
    updated_at: d.updatedAt,
    ...state,
  };
}

interface Row {
  id: number;
  project_id: number;
  name: string;
  settings: string;
  managed_by: 'api' | 'config';
  created_at: string;
  updated_at: string;
}

/** Creates the device's reader when it is missing (Readers.create, or a refusal on an edge). */
export type EnsureReader = (projectId: number, identifier: string, accessPointId: number | null, framing: BridgeFraming) => void;

export class BridgeDevices {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly bus: EventBus,
    private readonly ensureReader: EnsureReader,
    /** Why the bridge could not decode with these settings (a keymap it refuses), or null. */
    private readonly checkDecoder: (settings: BridgeDeviceSettings) => string | null = () => null,
  ) {}

  list(projectId: number | null, offset = 0, limit = 1_000_000): { items: BridgeDevice[]; total: number } {
    const where = projectId === null ? '' : 'WHERE project_id = ?';
    const args = projectId === null ? [] : [projectId];
    const rows = statement(this.db, `SELECT * FROM bridge_devices ${where} ORDER BY id LIMIT ? OFFSET ?`).all(...args, limit, offset) as Row[];
    const total = (statement(this.db, `SELECT count(*) AS n FROM bridge_devices ${where}`).get(...args) as { n: number }).n;
    return { items: rows.map(deviceOf), total };
  }

  get(projectId: number, id: number): BridgeDevice {
    return deviceOf(found(statement(this.db, 'SELECT * FROM bridge_devices WHERE project_id = ? AND id = ?').get(projectId, id) as Row | undefined, 'Bridge device'));
  }

  byId(id: number): BridgeDevice | null {
    const row = statement(this.db, 'SELECT * FROM bridge_devices WHERE id = ?').get(id) as Row | undefined;
    return row ? deviceOf(row) : null;
  }

  create(projectId: number, body: CreateBridgeDevice, managedBy: 'api' | 'config' = 'api'): BridgeDevice {
    const { name: _name, ...given } = stripUndefined(body);
    const settings = complete({ ...DEVICE_DEFAULTS, ...given } as BridgeDeviceSettings);
    this.#check(projectId, body.name, settings, null);
    return commit(this.db, this.bus, (work) => {
      const now = iso(this.clock.now());
      const { lastInsertRowid } = statement(this.db, 'INSERT INTO bridge_devices (project_id, name, settings, managed_by, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)').run(
        projectId,
        body.name,
        JSON.stringify(settings),
        managedBy,
        now,
        now,
      );
      const device = this.get(projectId, Number(lastInsertRowid));
      work.emit('bridge.device_saved', { projectId, id: device.id });
      return device;
    });
  }

  /** Merges the body into the device's settings. A device from the config file is changed there (409), unless `managedBy` says the config file does it. */
  update(projectId: number, id: number, body: UpdateBridgeDevice, managedBy: 'api' | 'config' = 'api'): BridgeDevice {
    const current = this.get(projectId, id);
    if (current.managedBy !== managedBy) throw configManaged(current);
    const { name: newName, ...changes } = stripUndefined(body);
    const deviceName = newName ?? current.name;
    const feedback = { ...current.feedback, ...changes.feedback };
    const settings = complete({ ...settingsOf(current), ...changes, feedback } as BridgeDeviceSettings);
    this.#check(projectId, deviceName, settings, id);
    return commit(this.db, this.bus, (work) => {
      statement(this.db, 'UPDATE bridge_devices SET name = ?, settings = ?, updated_at = ? WHERE id = ?').run(deviceName, JSON.stringify(settings), iso(this.clock.now()), id);
      work.emit('bridge.device_saved', { projectId, id });
      return this.get(projectId, id);
    });
  }

  delete(projectId: number, id: number, managedBy: 'api' | 'config' = 'api'): void {
    commit(this.db, this.bus, (work) => {
      const current = this.get(projectId, id);
      if (current.managedBy !== managedBy) throw configManaged(current);
      statement(this.db, 'DELETE FROM bridge_devices WHERE id = ?').run(id);
      work.emit('bridge.device_deleted', { projectId, id });
    });
  }

  /** The config file's devices (at start): each created or updated by name; config devices no longer in the file deleted. */
  applyConfig(devices: readonly { projectId: number; body: CreateBridgeDevice }[]): void {
    const keep = new Set<number>();
    for (const { projectId, body } of devices) {
      const existing = statement(this.db, 'SELECT * FROM bridge_devices WHERE project_id = ? AND name = ?').get(projectId, body.name) as Row | undefined;
      if (existing && existing.managed_by === 'api') throw new AppError('conflict', { detail: `Bridge device "${body.name}" in the config file already exists over REST: rename one of them.` });
      const device = existing ? this.update(projectId, existing.id, { ...DEVICE_DEFAULTS, ...body }, 'config') : this.create(projectId, body, 'config');
      keep.add(device.id);
    }
    for (const row of statement(this.db, "SELECT * FROM bridge_devices WHERE managed_by = 'config'").all() as Row[]) {
      if (!keep.has(row.id)) this.delete(row.project_id, row.id, 'config');
    }
  }

  #check(projectId: number, deviceName: string, s: BridgeDeviceSettings, id: number | null): void {
    const taken = statement(this.db, 'SELECT id FROM bridge_devices WHERE project_id = ? AND name = ?').get(projectId, deviceName) as { id: number } | undefined;
    if (taken && taken.id !== id) throw validationError({ name: ['The name has already been taken.'] });
    if (s.access_point_id !== null && !statement(this.db, 'SELECT 1 FROM access_points WHERE project_id = ? AND id = ?').get(projectId, s.access_point_id)) {
      throw validationError({ access_point_id: ['The selected access point id is invalid.'] });
    }
    const problem = this.checkDecoder(s);
    if (problem) throw validationError({ keymap: [problem] });
    // Last, in a transaction of its own: a device refused above makes no reader.
    this.ensureReader(projectId, s.reader_identifier, s.access_point_id, s.framing);
  }
}

/** Path or USB ids, exactly one; a keyboard layout only means something for keyboard-mode scanners. */
function complete<T extends BridgeDeviceSettings>(s: T): T {
  if ((s.path === null) === (s.match === null)) {
    const message = 'Give the device either a path or USB ids to match (not both).';
    throw validationError({ path: [message], match: [message] });
  }
  return { ...s, feedback: { grant: s.feedback.grant ?? null, deny: s.feedback.deny ?? null } };
}

function configManaged(d: BridgeDevice): AppError {
  return new AppError('conflict', { detail: `Bridge device "${d.name}" comes from the config file: change it there.` });
}

function settingsOf(d: BridgeDevice): BridgeDeviceSettings {
  const { id: _id, projectId: _p, name: _n, managedBy: _m, createdAt: _c, updatedAt: _u, ...settings } = d;
  return settings;
}

function deviceOf(row: Row): BridgeDevice {
  const settings = JSON.parse(row.settings) as BridgeDeviceSettings;
  return { ...settings, id: row.id, projectId: row.project_id, name: row.name, managedBy: row.managed_by, createdAt: row.created_at, updatedAt: row.updated_at };
}

function stripUndefined<T extends object>(o: T): { [K in keyof T]: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as { [K in keyof T]: Exclude<T[K], undefined> };
}

function partialOf<S extends Record<string, z.ZodType>>(shape: S): { [K in keyof S]: z.ZodOptional<S[K]> } {
  return Object.fromEntries(Object.entries(shape).map(([k, v]) => [k, v.optional()])) as { [K in keyof S]: z.ZodOptional<S[K]> };
}
