import { z } from 'zod';
import { deviceIdentifier as identifierField } from './identifier.js';

// The contract of a device plugged into the box (docs/bridge.md): its settings as
// REST and the config file take them, the answer with its live state, and the framings.

export const SERIAL_FRAMINGS = ['line', 'rdm6300', 'id12', 'wiegand26', 'wiegand34'] as const;
export const HID_FRAMINGS = ['hid_pos', 'hid_keyboard'] as const;
export const BRIDGE_FRAMINGS = [...SERIAL_FRAMINGS, ...HID_FRAMINGS] as const;
export type BridgeFraming = (typeof BRIDGE_FRAMINGS)[number];
export const KEYBOARD_LAYOUTS = ['us', 'uk', 'de', 'fr'] as const;
export const BAUD_RATES = [
  300, 600, 1200, 2400, 4800, 9600, 14400, 19200, 38400, 57600, 115200, 230400, 460800, 921600,
] as const;

export const isHid = (framing: BridgeFraming): boolean => (HID_FRAMINGS as readonly string[]).includes(framing);

/** A USB vendor or product id: a number or hex text ("0x0403", "0403"), kept as 4 lower-case hex digits. */
const usbId = z
  .union([
    z.number().int().min(0).max(0xffff),
    z.string().regex(/^(0x)?[0-9a-fA-F]{1,4}$/, 'a USB id: 1 to 4 hex digits, e.g. "0x0403"'),
  ])
  .transform((v) =>
    (typeof v === 'number' ? v : Number.parseInt(v.replace(/^0x/, ''), 16)).toString(16).padStart(4, '0'),
  );

/** Bytes written back after a decision: hex pairs, spaces or colons between them allowed ("07", "02 41 03"). */
const hexBytes = z
  .string()
  .transform((s) => s.replace(/[\s:]/g, '').toLowerCase())
  .pipe(z.string().regex(/^(?:[0-9a-f]{2}){1,64}$/, 'hex pairs, e.g. "07" or "02 41 03", 1 to 64 bytes'));

/** Every setting, none required: the create body adds what is required, an update merges what it names. */
const fields = {
  name: z.string().trim().min(1).max(100),
  path: z
    .string()
    .min(1)
    .max(4096)
    .regex(/^\//, 'an absolute path, e.g. /dev/ttyUSB0 or /dev/hidraw0')
    .nullable()
    .describe('where the device is; or match'),
  match: z
    .strictObject({
      vendor_id: usbId,
      product_id: usbId,
      serial_number: z.string().min(1).max(128).nullable().optional(),
    })
    .nullable()
    .describe(
      'the USB ids the device is found by on whatever path it appears (re-plugged elsewhere, it is found again); or path',
    ),
  reader_identifier: identifierField.describe(
    'the reader the device acts as; created with access_point_id when missing (not on an edge)',
  ),
  access_point_id: z
    .number()
    .int()
    .positive()
    .nullable()
    .describe("where its scans are decided; null: the reader's access point"),
  framing: z.enum(BRIDGE_FRAMINGS),
  baud_rate: z
    .number()
    .int()
    .refine((n) => (BAUD_RATES as readonly number[]).includes(n), `one of ${BAUD_RATES.join(', ')}`),
  data_bits: z.union([z.literal(5), z.literal(6), z.literal(7), z.literal(8)]),
  stop_bits: z.union([z.literal(1), z.literal(2)]),
  parity: z.enum(['none', 'even', 'odd']),
  feedback: z
    .strictObject({ grant: hexBytes.nullable().optional(), deny: hexBytes.nullable().optional() })
    .describe('bytes written to the device after a grant or a denial (hex)'),
  debounce_ms: z
    .number()
    .int()
    .min(0)
    .max(600_000)
    .describe('the same credential from this device within this many ms is one scan'),
  keyboard_layout: z.enum(KEYBOARD_LAYOUTS).describe('hid_keyboard: the layout the scanner types in'),
  keymap: z
    .record(
      z.string().regex(/^0x[0-9a-fA-F]{2}$/, 'a keycode, e.g. "0x1c"'),
      z.tuple([z.string().min(1).max(2), z.string().min(1).max(2)]),
    )
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
export const createBridgeDeviceBody = z.strictObject({
  name,
  reader_identifier,
  framing,
  ...partialOf(optionalFields),
});
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

export const IDLE_STATE: BridgeDeviceState = {
  connected: false,
  opened_path: null,
  last_frame_at: null,
  last_scan_at: null,
  frames: 0,
  bad_frames: 0,
  debounced: 0,
  errors: 0,
  last_error: null,
};

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
    match: d.match
      ? { vendor_id: d.match.vendor_id, product_id: d.match.product_id, serial_number: d.match.serial_number ?? null }
      : null,
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

function partialOf<S extends Record<string, z.ZodType>>(shape: S): { [K in keyof S]: z.ZodOptional<S[K]> } {
  return Object.fromEntries(Object.entries(shape).map(([k, v]) => [k, v.optional()])) as {
    [K in keyof S]: z.ZodOptional<S[K]>;
  };
}

/** A device plugged into the box, as the console's devices channel shows it (docs/bridge.md). */
export const bridgeDeviceEventSchema = bridgeDeviceSchema.pick({
  id: true,
  name: true,
  reader_identifier: true,
  framing: true,
  connected: true,
  opened_path: true,
  last_error: true,
});
export type BridgeDeviceEvent = z.infer<typeof bridgeDeviceEventSchema>;
