import { type HidScan, MAX_SCAN_CHARS, type ReportDecoder } from './types.js';

// A scanner in keyboard mode, read as boot-keyboard input reports (HID 1.11 appendix B.1):
//   byte 0 modifier bits, byte 1 reserved, bytes 2–7 the keys down (usage page 0x07 keycodes).
// A device with report IDs puts 0x01 in front (9 bytes); 9 bytes under another ID are another
// collection's report and are ignored; any other size is 'malformed'.
// A key is pressed when it shows in a report and did not in the one before (held over several
// reports it is one press); a report with no keys down releases them all. ErrorRollOver,
// POSTFail and ErrorUndefined (0x01–0x03) in a slot mean the keys cannot be told: the report is
// ignored. Enter (0x28) or keypad Enter (0x58) ends a scan; an empty scan is skipped.
// Left or right shift picks the shifted character. A key pressed with ctrl, alt (AltGr too) or
// GUI is not typing: the scan is 'not_text'. So is a scan with a key the layout lacks ('garbage').
// Both are told once, at Enter; from the first fault to Enter keys are dropped. Past
// MAX_SCAN_CHARS the scan is 'overlong', told at once; a wrong-size report is 'malformed', told at
// once, and drops the scan it lands in up to its Enter.

export const KEYBOARD_LAYOUTS = ['us', 'de', 'fr', 'uk'] as const;
export type KeyboardLayoutName = (typeof KEYBOARD_LAYOUTS)[number];
export type KeyboardOptions = { layout?: KeyboardLayoutName; keymap?: Record<string, [string, string]> };

type KeyTable = ReadonlyMap<number, readonly [string, string]>;
/** [first keycode, the unshifted characters of it and the keys after it, the shifted ones]. */
type Row = readonly [number, string, string];

// What each key types on a Linux host set to that layout (xkeyboard-config, levels 1 and 2): the
// scanner is set up to type the code into a text field there. 0x31 (US \|) and 0x32 (ISO #~) are
// one key to Linux; 0x64 is the ISO key next to left shift. Dead keys count as their spacing
// character. AltGr characters (de `@`, fr `#`...) are outside the tables: they come with alt.
const KEYPAD: Row = [0x59, '1234567890', '1234567890'];
const SPACE: Row = [0x2c, ' ', ' '];
// biome-ignore format: one key range a line, to read against the layout
const ROWS: Record<KeyboardLayoutName, readonly Row[]> = {
  us: [
    [0x04, 'abcdefghijklmnopqrstuvwxyz', 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'],
    [0x1e, '1234567890', '!@#$%^&*()'],
    SPACE,
    [0x2d, "-=[]\\\\;'`,./", '_+{}||:"~<>?'],
    [0x64, '<', '>'],
    KEYPAD,
  ],
  de: [
    [0x04, 'abcdefghijklmnopqrstuvwxzy', 'ABCDEFGHIJKLMNOPQRSTUVWXZY'],
    [0x1e, '1234567890', '!"§$%&/()='],
    SPACE,
    [0x2d, 'ß´ü+##öä^,.-', "?`Ü*''ÖÄ°;:_"],
    [0x64, '<', '>'],
    KEYPAD,
  ],
  fr: [
    [0x04, 'qbcdefghijkl,noparstuvzxyw', 'QBCDEFGHIJKL?NOPARSTUVZXYW'],
    [0x1e, '&é"\'(-è_çà', '1234567890'],
    SPACE,
    [0x2d, ')=^$**mù²;:!', '°+¨£µµM%~./§'],
    [0x64, '<', '>'],
    KEYPAD,
  ],
  uk: [
    [0x04, 'abcdefghijklmnopqrstuvwxyz', 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'],
    [0x1e, '1234567890', '!"£$%^&*()'],
    SPACE,
    [0x2d, "-=[]##;'`,./", '_+{}~~:@¬<>?'],
    [0x64, '\\', '|'],
    KEYPAD,
  ],
};

const ENTER = 0x28;
const KEYPAD_ENTER = 0x58;
const SHIFT = 0x02 | 0x20;
const CTRL_ALT_GUI = 0x01 | 0x04 | 0x08 | 0x10 | 0x40 | 0x80;
const KEYS = 6;

const hex = (code: number) => `0x${code.toString(16).padStart(2, '0')}`;

function layoutKeys(name: KeyboardLayoutName): Map<number, readonly [string, string]> {
  const rows = ROWS[name];
  if (rows === undefined)
    throw new RangeError(`unknown keyboard layout ${JSON.stringify(name)}: one of ${KEYBOARD_LAYOUTS.join(', ')}`);
  const table = new Map<number, readonly [string, string]>();
  for (const [first, plain, shifted] of rows) {
    const upper = [...shifted];
    for (const [i, char] of [...plain].entries()) table.set(first + i, [char, upper[i]!]);
  }
  return table;
}

/** A layout as keycode (`"0x04"`) → [unshifted, shifted], the shape `keymap` takes: for docs. */
export function layoutTable(name: KeyboardLayoutName): Record<string, [string, string]> {
  return Object.fromEntries([...layoutKeys(name)].map(([code, [plain, shifted]]) => [hex(code), [plain, shifted]]));
}

/** The layout with the keymap's keys laid over it; a bad keymap entry is a configuration error. */
function keyTable(options: KeyboardOptions): KeyTable {
  const table = layoutKeys(options.layout ?? 'us');
  for (const [key, pair] of Object.entries(options.keymap ?? {})) {
    const code = /^0x[0-9a-f]{1,2}$/i.test(key) ? Number.parseInt(key.slice(2), 16) : Number.NaN;
    if (!(code > 0x03) || code === ENTER || code === KEYPAD_ENTER)
      throw new RangeError(`keymap key ${JSON.stringify(key)}: a keycode from "0x04" to "0xff", not Enter`);
    if (!Array.isArray(pair) || pair.length !== 2 || !pair.every(isOneChar))
      throw new TypeError(`keymap ${key}: [unshifted, shifted], one printable character each`);
    table.set(code, [pair[0], pair[1]]);
  }
  return table;
}

const isOneChar = (char: unknown) => typeof char === 'string' && [...char].length === 1 && char.charCodeAt(0) >= 0x20;

type Fault = { reason: 'garbage' | 'not_text' | 'overlong' | 'malformed'; detail: string; told: boolean };

/** Decodes boot-keyboard reports typed by a scanner into scans, one per Enter. */
export function keyboardDecoder(options: KeyboardOptions = {}): ReportDecoder {
  const table = keyTable(options);
  let held = new Set<number>();
  let text = '';
  let chars = 0;
  let fault: Fault | undefined;

  /** The first fault of a scan wins; from it to Enter keys are dropped. */
  const spoil = (reason: Fault['reason'], detail: string, tellNow: boolean): HidScan[] => {
    if (fault !== undefined) return [];
    fault = { reason, detail, told: tellNow };
    text = '';
    return tellNow ? [{ ok: false, reason, detail }] : [];
  };

  const finish = (): HidScan[] => {
    const [done, value] = [fault, text];
    [fault, text, chars] = [undefined, '', 0];
    if (done !== undefined) return done.told ? [] : [{ ok: false, reason: done.reason, detail: done.detail }];
    return value === '' ? [] : [{ ok: true, value }];
  };

  const press = (code: number, modifiers: number): HidScan[] => {
    if (code === ENTER || code === KEYPAD_ENTER) return finish();
    if (fault !== undefined) return [];
    if ((modifiers & CTRL_ALT_GUI) !== 0)
      return spoil('not_text', `key ${hex(code)} pressed with ctrl, alt or GUI (modifiers ${hex(modifiers)})`, false);
    const pair = table.get(code);
    if (pair === undefined) return spoil('garbage', `keycode ${hex(code)} is not in the keyboard table`, false);
    if (chars === MAX_SCAN_CHARS) return spoil('overlong', `more than ${MAX_SCAN_CHARS} characters before Enter`, true);
    text += pair[(modifiers & SHIFT) !== 0 ? 1 : 0];
    chars++;
    return [];
  };

  const push = (report: Buffer): HidScan[] => {
    if (report.length === KEYS + 3) {
      if (report[0] !== 0x01) return [];
      report = report.subarray(1);
    }
    if (report.length !== KEYS + 2)
      return spoil('malformed', `report of ${report.length} bytes, not an 8-byte boot keyboard report`, true);
    const down = new Set(report.subarray(2).filter((code) => code !== 0));
    if ([...down].some((code) => code <= 0x03)) return [];
    const modifiers = report[0]!;
    const scans = [...down].filter((code) => !held.has(code)).flatMap((code) => press(code, modifiers));
    held = down;
    return scans;
  };

  const reset = (): HidScan[] => {
    const pending = fault === undefined ? text !== '' : !fault.told;
    held = new Set();
    [fault, text, chars] = [undefined, '', 0];
    return pending
      ? [{ ok: false, reason: 'partial', detail: 'device went away in the middle of a scan, before its Enter' }]
      : [];
  };

  return { push, reset };
}
