import { describe, expect, it } from 'vitest';
import {
  KEYBOARD_LAYOUTS,
  keyboardDecoder,
  layoutTable,
  MAX_SCAN_CHARS,
  posScannerDecoder,
  type ReportDecoder,
} from '../../firmware-bridge/hid/index.js';

// The two report formats, as node-hid's 'data' event hands them over (Linux hidraw: the report
// ID, when the device uses them, is byte 0):
//
// HID POS scanner, usage page 0x8C "Scanned Data Report", 64 bytes (Honeywell/Zebra):
//   [0] report ID 0x02 · [1] data bytes in this report, 0–56 · [2–4] AIM id (`]E0`, `]Q1`; NULs =
//   none) · [5–60] data, the first [1] bytes · [61–62] vendor · [63] bit 0 = continues in the
//   next report.
//   e.g. 02 0d 5d4530 34303036333831333333393331 00… 4d31 00 = EAN-13 4006381333931, one report.
//
// Scanner in keyboard mode, boot keyboard report, 8 bytes (9 with report ID 0x01 in front):
//   [0] modifiers (0x02 left shift, 0x20 right shift; ctrl 0x01/0x10, alt 0x04/0x40, GUI
//   0x08/0x80) · [1] reserved · [2–7] keycodes down. A scanner types each character as a press
//   report and a release report (all keys 0):
//   02 00 04 00 00 00 00 00 (shift + a), 00 00 00 00 00 00 00 00, …, 00 00 28 00 00 00 00 00 (Enter).

const hex = (bytes: string) => Buffer.from(bytes.replace(/\s+/g, ''), 'hex');
const feed = (decoder: ReportDecoder, reports: Buffer[]) => reports.flatMap((report) => decoder.push(report));

/** A Scanned Data Report laid out as above. */
function posReport(data: string | Buffer, { aim = '', more = false, id = 0x02 } = {}): Buffer {
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  const report = Buffer.alloc(64);
  report[0] = id;
  report[1] = bytes.length;
  report.write(aim, 2, 'latin1');
  bytes.copy(report, 5);
  report[63] = more ? 0x01 : 0x00;
  return report;
}

/** A code split into 56-byte reports, each but the last marked as continued. */
function posReports(text: string, aim = ''): Buffer[] {
  const bytes = Buffer.from(text, 'utf8');
  const reports: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += 56)
    reports.push(posReport(bytes.subarray(at, at + 56), { aim: at === 0 ? aim : '', more: at + 56 < bytes.length }));
  return reports;
}

const EAN_13 = hex(`02 0d 5d4530 34303036333831333333393331 ${'00'.repeat(43)} 4d31 00`);

describe('HID POS scanner reports', () => {
  it('reads an EAN-13 code in one report with its AIM symbology identifier', () => {
    expect(EAN_13.length).toBe(64);
    expect(posScannerDecoder().push(EAN_13)).toEqual([{ ok: true, value: '4006381333931', symbology: ']E0' }]);
  });

  it('joins a 120-character QR code sent over three continued reports, taking the AIM id from the first', () => {
    const url = `https://tickets.example.org/t/${'a1B2c3D4e5'.repeat(9)}`;
    expect(url.length).toBe(120);
    const reports = [
      posReport(url.slice(0, 56), { aim: ']Q1', more: true }),
      posReport(url.slice(56, 112), { aim: ']Z0', more: true }),
      posReport(url.slice(112)),
    ];
    expect(reports.map((r) => [r[1], r[63]])).toEqual([
      [56, 1],
      [56, 1],
      [8, 0],
    ]);
    const decoder = posScannerDecoder();
    expect(decoder.push(reports[0]!)).toEqual([]);
    expect(decoder.push(reports[1]!)).toEqual([]);
    expect(decoder.push(reports[2]!)).toEqual([{ ok: true, value: url, symbology: ']Q1' }]);
  });

  it('joins the bytes before decoding, so a UTF-8 character split between reports survives', () => {
    const name = `${'x'.repeat(54)}Müller`;
    const reports = posReports(name);
    expect([reports[0]![5 + 55], reports[1]![5]]).toEqual([0xc3, 0xbc]);
    expect(feed(posScannerDecoder(), reports)).toEqual([{ ok: true, value: name }]);
  });

  it('ignores reports under another report ID, even between the reports of one code', () => {
    const status = hex(`04 01 00 ${'00'.repeat(61)}`);
    const decoder = posScannerDecoder();
    expect(decoder.push(status)).toEqual([]);
    const [first, second] = posReports('A'.repeat(80), ']C0');
    expect(feed(decoder, [first!, status, second!])).toEqual([{ ok: true, value: 'A'.repeat(80), symbology: ']C0' }]);
  });

  it('leaves out the symbology when the AIM bytes are NULs', () => {
    expect(posScannerDecoder().push(posReport('TICKET-1'))).toEqual([{ ok: true, value: 'TICKET-1' }]);
  });

  it('calls a report malformed when it is shorter than its header or its length is over 56 or past its end', () => {
    const decoder = posScannerDecoder();
    const tooLong = posReport('x');
    tooLong[1] = 57;
    const scans = feed(decoder, [Buffer.alloc(0), hex('02 03 00 00'), tooLong, hex('02 14 5d4530 3132333435')]);
    expect(scans.map((s) => s.ok === false && s.reason)).toEqual(['malformed', 'malformed', 'malformed', 'malformed']);
    expect(scans.map((s) => !s.ok && s.detail)).toEqual([
      'report of 0 bytes, shorter than its 5-byte header',
      'report of 4 bytes, shorter than its 5-byte header',
      'data length 57 over the 56 a report holds',
      'data length 20 runs past the end of a 10-byte report',
    ]);
    expect(decoder.push(EAN_13)).toEqual([{ ok: true, value: '4006381333931', symbology: ']E0' }]);
  });

  it('reads a short report whose length fits it as the last of its code', () => {
    expect(posScannerDecoder().push(hex('02 05 5d4530 3132333435'))).toEqual([
      { ok: true, value: '12345', symbology: ']E0' },
    ]);
  });

  it('drops the rest of a code after a malformed report that says it continues', () => {
    const decoder = posScannerDecoder();
    const [first, second, third] = posReports('B'.repeat(150));
    second![1] = 60;
    expect(feed(decoder, [first!, second!, third!])).toEqual([
      {
        ok: false,
        reason: 'malformed',
        detail: 'data length 60 over the 56 a report holds; the 56 bytes of the code in progress were dropped',
      },
    ]);
    expect(decoder.push(EAN_13)).toEqual([{ ok: true, value: '4006381333931', symbology: ']E0' }]);
  });

  it('gives one partial on reset between continued reports, and the next code decodes clean', () => {
    const decoder = posScannerDecoder();
    const [first, second] = posReports('C'.repeat(100), ']Q1');
    expect(decoder.push(first!)).toEqual([]);
    expect(decoder.reset()).toEqual([
      { ok: false, reason: 'partial', detail: 'device went away after 56 bytes of a code that was to continue' },
    ]);
    expect(decoder.reset()).toEqual([]);
    expect(decoder.push(EAN_13)).toEqual([{ ok: true, value: '4006381333931', symbology: ']E0' }]);
    // The tail of the interrupted code, had it come, is a code of its own: never glued on.
    expect(decoder.push(second!)).toEqual([{ ok: true, value: 'C'.repeat(44) }]);
  });

  it('trims the CR, LF, TAB and NUL a scanner appends', () => {
    expect(posScannerDecoder().push(posReport('4006381333931\r\n\t\0', { aim: ']E0' }))).toEqual([
      { ok: true, value: '4006381333931', symbology: ']E0' },
    ]);
  });

  it('refuses data that is not UTF-8 or holds a control character inside the code', () => {
    const decoder = posScannerDecoder();
    expect(decoder.push(posReport(hex('34 30 ff fe')))).toEqual([
      { ok: false, reason: 'not_text', detail: '4 bytes that are not valid UTF-8' },
    ]);
    expect(decoder.push(posReport('0104006381333931\x1d10ABC', { aim: ']d2' }))).toEqual([
      { ok: false, reason: 'not_text', detail: 'control character 0x1d at offset 16' },
    ]);
  });

  it('takes a code of exactly MAX_SCAN_CHARS, calls a longer one overlong once, and then reads the next code', () => {
    const decoder = posScannerDecoder();
    expect(feed(decoder, posReports('D'.repeat(MAX_SCAN_CHARS)))).toEqual([
      { ok: true, value: 'D'.repeat(MAX_SCAN_CHARS) },
    ]);
    expect(feed(decoder, posReports('E'.repeat(MAX_SCAN_CHARS + 1)))).toEqual([
      { ok: false, reason: 'overlong', detail: `${MAX_SCAN_CHARS + 1} characters, over ${MAX_SCAN_CHARS}` },
    ]);
    expect(decoder.push(EAN_13)).toEqual([{ ok: true, value: '4006381333931', symbology: ']E0' }]);
  });

  it('stops collecting a runaway code once it cannot fit, and drops its reports up to the last', () => {
    const decoder = posScannerDecoder();
    const reports = posReports('F'.repeat(56 * 400));
    const scans = reports.map((report) => decoder.push(report));
    expect(scans.flat()).toEqual([
      { ok: false, reason: 'overlong', detail: `more than ${56 * 293} bytes, over ${MAX_SCAN_CHARS} characters` },
    ]);
    expect(scans.findIndex((s) => s.length > 0)).toBe(292);
    expect(decoder.reset()).toEqual([]);
    expect(decoder.push(EAN_13)).toEqual([{ ok: true, value: '4006381333931', symbology: ']E0' }]);
  });
});

// Keyboard reports: 8 bytes, written out.
const UP = '00 00 00 00 00 00 00 00';
const ENTER = '00 00 28 00 00 00 00 00';
const keys = (...reports: string[]) => reports.map(hex);
/** Each US-layout letter or digit typed as a press and a release, then Enter. */
function typed(text: string): Buffer[] {
  const reports: string[] = [];
  for (const char of text) {
    const code = /[a-z]/.test(char) ? 0x04 + char.charCodeAt(0) - 0x61 : char === '0' ? 0x27 : 0x1e + Number(char) - 1;
    reports.push(`00 00 ${code.toString(16).padStart(2, '0')} 00 00 00 00 00`, UP);
  }
  return keys(...reports, ENTER, UP);
}

describe('HID keyboard-mode scanner reports', () => {
  it('reads "Ab1" typed as press and release pairs, with left shift for A, ended by Enter', () => {
    const reports = keys(
      '02 00 04 00 00 00 00 00',
      UP,
      '00 00 05 00 00 00 00 00',
      UP,
      '00 00 1e 00 00 00 00 00',
      UP,
      ENTER,
      UP,
    );
    expect(feed(keyboardDecoder(), reports)).toEqual([{ ok: true, value: 'Ab1' }]);
  });

  it('counts a key held over two identical reports as one press, and a key pressed again as two', () => {
    expect(feed(keyboardDecoder(), keys('00 00 04 00 00 00 00 00', '00 00 04 00 00 00 00 00', UP, ENTER, UP))).toEqual([
      { ok: true, value: 'a' },
    ]);
    expect(
      feed(keyboardDecoder(), keys('00 00 04 00 00 00 00 00', UP, '00 00 04 00 00 00 00 00', UP, ENTER, UP)),
    ).toEqual([{ ok: true, value: 'aa' }]);
  });

  it('types the new keys of a rollover report in slot order and not the ones still held', () => {
    const reports = keys(
      '00 00 04 05 00 00 00 00',
      '00 00 05 00 00 00 00 00',
      '00 00 05 06 00 00 00 00',
      UP,
      ENTER,
      UP,
    );
    expect(feed(keyboardDecoder(), reports)).toEqual([{ ok: true, value: 'abc' }]);
  });

  it('shifts with the right shift key too, and ignores a shift pressed alone', () => {
    const reports = keys(
      '20 00 00 00 00 00 00 00',
      '20 00 16 00 00 00 00 00',
      '20 00 00 00 00 00 00 00',
      UP,
      '20 00 1f 00 00 00 00 00',
      UP,
      ENTER,
      UP,
    );
    expect(feed(keyboardDecoder(), reports)).toEqual([{ ok: true, value: 'S@' }]);
  });

  it('reads 9-byte reports that carry report ID 1 in front, and ignores those under another ID', () => {
    const reports = keys(
      '01 02 00 0b 00 00 00 00 00',
      '01 00 00 00 00 00 00 00 00',
      '02 00 00 0c 00 00 00 00 00',
      '01 00 00 0c 00 00 00 00 00',
      '01 00 00 00 00 00 00 00 00',
      '01 00 00 28 00 00 00 00 00',
    );
    expect(feed(keyboardDecoder(), reports)).toEqual([{ ok: true, value: 'Hi' }]);
  });

  it('ignores a rollover-error report without losing the keys held', () => {
    const reports = keys(
      '00 00 04 00 00 00 00 00',
      '00 00 01 01 01 01 01 01',
      '00 00 04 00 00 00 00 00',
      UP,
      ENTER,
      UP,
    );
    expect(feed(keyboardDecoder(), reports)).toEqual([{ ok: true, value: 'a' }]);
  });

  it('ends a scan on keypad Enter, reads keypad digits, and skips an empty scan', () => {
    const reports = keys(
      ENTER,
      UP,
      '00 00 59 00 00 00 00 00',
      UP,
      '00 00 62 00 00 00 00 00',
      UP,
      '00 00 58 00 00 00 00 00',
      UP,
    );
    expect(feed(keyboardDecoder(), reports)).toEqual([{ ok: true, value: '10' }]);
  });

  it('swaps y and z in the German layout and types its punctuation', () => {
    const reports = keys(
      '00 00 1c 00 00 00 00 00',
      UP,
      '00 00 1d 00 00 00 00 00',
      UP,
      '02 00 24 00 00 00 00 00',
      UP,
      '00 00 2d 00 00 00 00 00',
      UP,
      ENTER,
      UP,
    );
    expect(feed(keyboardDecoder({ layout: 'de' }), reports)).toEqual([{ ok: true, value: 'zy/ß' }]);
  });

  it('needs shift for digits in the French layout, and swaps a/q and z/w', () => {
    const unshifted = keys(
      '00 00 1e 00 00 00 00 00',
      UP,
      '00 00 1f 00 00 00 00 00',
      UP,
      '00 00 04 00 00 00 00 00',
      UP,
      '00 00 1a 00 00 00 00 00',
      UP,
      '00 00 33 00 00 00 00 00',
      UP,
      ENTER,
      UP,
    );
    const shifted = keys(
      '02 00 1e 00 00 00 00 00',
      UP,
      '02 00 1f 00 00 00 00 00',
      UP,
      '02 00 27 00 00 00 00 00',
      UP,
      ENTER,
      UP,
    );
    const decoder = keyboardDecoder({ layout: 'fr' });
    expect(feed(decoder, unshifted)).toEqual([{ ok: true, value: '&éqzm' }]);
    expect(feed(decoder, shifted)).toEqual([{ ok: true, value: '120' }]);
  });

  it('types " for shift-2, £ for shift-3 and #~ at 0x31 and 0x32 in the UK layout', () => {
    const reports = keys(
      '02 00 1f 00 00 00 00 00',
      UP,
      '02 00 20 00 00 00 00 00',
      UP,
      '00 00 31 00 00 00 00 00',
      UP,
      '02 00 32 00 00 00 00 00',
      UP,
      '02 00 34 00 00 00 00 00',
      UP,
      ENTER,
      UP,
    );
    expect(feed(keyboardDecoder({ layout: 'uk' }), reports)).toEqual([{ ok: true, value: '"£#~@' }]);
  });

  it('lets a keymap override single keycodes of the layout', () => {
    const reports = keys(
      '00 00 32 00 00 00 00 00',
      UP,
      '02 00 32 00 00 00 00 00',
      UP,
      '00 00 1c 00 00 00 00 00',
      UP,
      ENTER,
      UP,
    );
    expect(feed(keyboardDecoder(), reports)).toEqual([{ ok: true, value: '\\|y' }]);
    expect(feed(keyboardDecoder({ keymap: { '0x32': ['#', '~'] } }), reports)).toEqual([{ ok: true, value: '#~y' }]);
    expect(() => keyboardDecoder({ keymap: { '0x28': ['x', 'X'] } })).toThrow(/not Enter/);
    expect(() => keyboardDecoder({ keymap: { '32': ['#', '~'] } })).toThrow(/keymap key "32"/);
    expect(() => keyboardDecoder({ keymap: { '0x32': ['##', '~'] } })).toThrow(/one printable character each/);
  });

  it('reports an unknown keycode once, as garbage when Enter comes, and reads the next scan clean', () => {
    const decoder = keyboardDecoder();
    expect(
      feed(
        decoder,
        keys(
          '00 00 04 00 00 00 00 00',
          UP,
          '00 00 39 00 00 00 00 00',
          UP,
          '00 00 68 00 00 00 00 00',
          UP,
          '00 00 05 00 00 00 00 00',
          UP,
        ),
      ),
    ).toEqual([]);
    expect(feed(decoder, keys(ENTER, UP))).toEqual([
      { ok: false, reason: 'garbage', detail: 'keycode 0x39 is not in the keyboard table' },
    ]);
    expect(feed(decoder, typed('ok1'))).toEqual([{ ok: true, value: 'ok1' }]);
  });

  it('calls a scan typed with ctrl, alt or GUI not text', () => {
    const decoder = keyboardDecoder();
    expect(feed(decoder, keys('00 00 04 00 00 00 00 00', UP, '40 00 14 00 00 00 00 00', UP, ENTER, UP))).toEqual([
      { ok: false, reason: 'not_text', detail: 'key 0x14 pressed with ctrl, alt or GUI (modifiers 0x40)' },
    ]);
    expect(feed(decoder, typed('b2'))).toEqual([{ ok: true, value: 'b2' }]);
  });

  it('calls a scan overlong once past MAX_SCAN_CHARS, drops it up to Enter, and reads the next', () => {
    const decoder = keyboardDecoder();
    expect(feed(decoder, typed('7'.repeat(MAX_SCAN_CHARS)))).toEqual([{ ok: true, value: '7'.repeat(MAX_SCAN_CHARS) }]);
    const long = typed('8'.repeat(MAX_SCAN_CHARS + 10));
    const scans = long.map((report) => decoder.push(report));
    expect(scans.flat()).toEqual([
      { ok: false, reason: 'overlong', detail: `more than ${MAX_SCAN_CHARS} characters before Enter` },
    ]);
    expect(scans.findIndex((s) => s.length > 0)).toBe(2 * MAX_SCAN_CHARS);
    expect(feed(decoder, typed('9'))).toEqual([{ ok: true, value: '9' }]);
  });

  it('calls a report of the wrong size malformed at once and drops the scan it lands in', () => {
    const decoder = keyboardDecoder();
    expect(feed(decoder, keys('00 00 04 00 00 00 00 00', UP, '00 00 05 00'))).toEqual([
      { ok: false, reason: 'malformed', detail: 'report of 4 bytes, not an 8-byte boot keyboard report' },
    ]);
    expect(feed(decoder, keys(UP, '00 00 06 00 00 00 00 00', UP, ENTER, UP))).toEqual([]);
    expect(feed(decoder, typed('c3'))).toEqual([{ ok: true, value: 'c3' }]);
  });

  it('gives one partial on reset mid-scan, and the next scan decodes clean', () => {
    const decoder = keyboardDecoder();
    expect(feed(decoder, keys('00 00 04 00 00 00 00 00', UP, '00 00 05 00 00 00 00 00'))).toEqual([]);
    expect(decoder.reset()).toEqual([
      { ok: false, reason: 'partial', detail: 'device went away in the middle of a scan, before its Enter' },
    ]);
    expect(decoder.reset()).toEqual([]);
    // The key still down when the device went away is a new press on the next report.
    expect(feed(decoder, keys('00 00 05 00 00 00 00 00', UP, ENTER, UP))).toEqual([{ ok: true, value: 'b' }]);
  });

  it('has the same keys in every layout, in the keymap shape', () => {
    const us = layoutTable('us');
    expect(us['0x04']).toEqual(['a', 'A']);
    expect(us['0x38']).toEqual(['/', '?']);
    expect(layoutTable('de')['0x1c']).toEqual(['z', 'Z']);
    for (const name of KEYBOARD_LAYOUTS) {
      const table = layoutTable(name);
      expect(Object.keys(table)).toEqual(Object.keys(us));
      for (const pair of Object.values(table)) expect(pair.map((char) => [...char].length)).toEqual([1, 1]);
    }
    expect(() => layoutTable('es' as never)).toThrow(/unknown keyboard layout "es"/);
  });
});
