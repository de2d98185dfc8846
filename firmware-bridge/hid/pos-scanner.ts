import { type HidScan, MAX_SCAN_CHARS, type ReportDecoder } from './types.js';

// HID POS barcode scanner, usage page 0x8C, "Scanned Data Report" as Honeywell and Zebra lay it
// out (64 bytes; on Linux hidraw the report ID is byte 0):
//   0      report ID 0x02 (other IDs are status and the like: ignored)
//   1      number of data bytes in this report, 0–56
//   2–4    AIM symbology identifier, e.g. `]E0` EAN-13, `]Q1` QR; three NULs = none
//   5–60   decoded data, the first `length` bytes count
//   61–62  vendor-specific, ignored
//   63     bit 0 set: the code continues in the next report (AIM id taken from the first)
// A report cut short before byte 63 is read as the last of its code.

const SCANNED_DATA_REPORT_ID = 0x02;
const HEADER_BYTES = 5;
const MAX_DATA_BYTES = 56;
const CONTINUES_BYTE = 63;
// A character is at most 4 UTF-8 bytes: past this many bytes a code cannot fit MAX_SCAN_CHARS, so
// collecting stops there and memory stays bounded whatever the device sends.
const MAX_CODE_BYTES = MAX_SCAN_CHARS * 4;

type State =
  | { kind: 'idle' }
  | { kind: 'collecting'; symbology: string | undefined; chunks: Buffer[]; bytes: number }
  /** The rest of a code already reported as overlong or malformed, up to its last report. */
  | { kind: 'discarding' };

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Decodes Scanned Data Reports into scans, joining a code split over several reports. */
export function posScannerDecoder(): ReportDecoder {
  let state: State = { kind: 'idle' };

  const push = (report: Buffer): HidScan[] => {
    if (report.length > 0 && report[0] !== SCANNED_DATA_REPORT_ID) return [];
    const continues = report.length > CONTINUES_BYTE && (report[CONTINUES_BYTE]! & 0x01) === 1;
    const problem = headerProblem(report);
    if (problem !== undefined) {
      // The code in progress cannot be trusted any more; if this report says more follows, its
      // tail must not be taken for a new code.
      const dropped =
        state.kind === 'collecting' ? `; the ${state.bytes} bytes of the code in progress were dropped` : '';
      state = continues ? { kind: 'discarding' } : { kind: 'idle' };
      return [{ ok: false, reason: 'malformed', detail: problem + dropped }];
    }
    if (state.kind === 'discarding') {
      if (!continues) state = { kind: 'idle' };
      return [];
    }
    if (state.kind === 'idle') state = { kind: 'collecting', symbology: aimId(report), chunks: [], bytes: 0 };
    const length = report[1]!;
    // Copied: the caller may reuse the buffer it handed over.
    state.chunks.push(Buffer.from(report.subarray(HEADER_BYTES, HEADER_BYTES + length)));
    state.bytes += length;
    if (state.bytes > MAX_CODE_BYTES) {
      const bytes = state.bytes;
      state = continues ? { kind: 'discarding' } : { kind: 'idle' };
      return [overlong(`more than ${bytes} bytes, over ${MAX_SCAN_CHARS} characters`)];
    }
    if (continues) return [];
    const { chunks, symbology } = state;
    state = { kind: 'idle' };
    const scan = finish(Buffer.concat(chunks), symbology);
    return scan === undefined ? [] : [scan];
  };

  const reset = (): HidScan[] => {
    const pending = state.kind === 'collecting' ? state.bytes : undefined;
    state = { kind: 'idle' };
    if (pending === undefined) return [];
    return [
      {
        ok: false,
        reason: 'partial',
        detail: `device went away after ${pending} bytes of a code that was to continue`,
      },
    ];
  };

  return { push, reset };
}

/** Why a Scanned Data Report cannot be read, or undefined when its header holds. */
function headerProblem(report: Buffer): string | undefined {
  if (report.length < HEADER_BYTES)
    return `report of ${report.length} bytes, shorter than its ${HEADER_BYTES}-byte header`;
  const length = report[1]!;
  if (length > MAX_DATA_BYTES) return `data length ${length} over the ${MAX_DATA_BYTES} a report holds`;
  if (HEADER_BYTES + length > report.length)
    return `data length ${length} runs past the end of a ${report.length}-byte report`;
  return undefined;
}

/** The AIM identifier (`]` and two printable characters), or undefined for NULs or anything else. */
function aimId(report: Buffer): string | undefined {
  const id = report.toString('latin1', 2, HEADER_BYTES);
  return /^\][!-~]{2}$/.test(id) ? id : undefined;
}

/** The joined data of one code as a scan, or undefined when it holds nothing but padding. */
function finish(data: Buffer, symbology: string | undefined): HidScan | undefined {
  let text: string;
  try {
    text = utf8.decode(data);
  } catch {
    return { ok: false, reason: 'not_text', detail: `${data.length} bytes that are not valid UTF-8` };
  }
  text = trimPadding(text);
  if (text === '') return undefined;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20)
      return {
        ok: false,
        reason: 'not_text',
        detail: `control character 0x${code.toString(16).padStart(2, '0')} at offset ${i}`,
      };
  }
  const chars = [...text].length;
  if (chars > MAX_SCAN_CHARS) return overlong(`${chars} characters, over ${MAX_SCAN_CHARS}`);
  return symbology === undefined ? { ok: true, value: text } : { ok: true, value: text, symbology };
}

/** Drops the CR, LF, TAB and NUL a scanner pads or suffixes a code with. */
function trimPadding(text: string): string {
  let end = text.length;
  while (end > 0 && PADDING.has(text.charCodeAt(end - 1))) end--;
  return text.slice(0, end);
}

const PADDING = new Set([0x0d, 0x0a, 0x09, 0x00]);

const overlong = (detail: string): HidScan => ({ ok: false, reason: 'overlong', detail });
