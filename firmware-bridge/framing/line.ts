import { isUtf8 } from 'node:buffer';
import { badFrame, type Frame, type FrameParser, hex2, MAX_LINE_BYTES } from './types.js';

// Line framing: `<text> CR`, `<text> LF` or `<text> CR LF`, e.g. `A1B2C3D4\r\n`. Readers in
// "keyboard" or terminal mode send this. Spaces and tabs around the text are trimmed; a blank line
// is skipped. So CR and LF can each simply end a line: the empty line between the CR and LF of a
// CR LF is skipped, whichever chunks they arrive in, and a line ends at its CR without waiting to
// see whether an LF follows.
// A line over MAX_LINE_BYTES raw bytes is reported 'overlong' as soon as it passes the bound (a
// reader that never sends a terminator is still heard) and the rest of it, up to its terminator,
// is dropped without a second report. The wiegand framings share this splitter (`splitLines`).

const CR = 0x0d;
const LF = 0x0a;
const TAB = 0x09;
const SPACE = 0x20;
const DEL = 0x7f;

/** Turns one trimmed, non-blank line, `buf[start..end)`, into a frame. Must not keep `buf`: it is reused. */
export type LineDecoder = (buf: Buffer, start: number, end: number) => Frame;

const isBlank = (byte: number): boolean => byte === SPACE || byte === TAB;
const overlong = (): Frame => badFrame('overlong', `line longer than ${MAX_LINE_BYTES} bytes`);

export function splitLines(decode: LineDecoder): FrameParser {
  // A line split across chunks is copied here; a line inside one chunk is decoded in place.
  const pending = Buffer.allocUnsafe(MAX_LINE_BYTES);
  let pendingLength = 0;
  /** An overlong line was reported; its bytes are dropped up to its terminator. */
  let dropping = false;

  function endLine(chunk: Buffer, start: number, end: number, out: Frame[]): void {
    if (dropping) {
      dropping = false; // the overlong line ends here; nothing of it was kept
      return;
    }
    const length = pendingLength + end - start;
    if (length > MAX_LINE_BYTES) {
      pendingLength = 0;
      out.push(overlong());
      return;
    }
    let buf = chunk;
    let s = start;
    let e = end;
    if (pendingLength > 0) {
      chunk.copy(pending, pendingLength, start, end);
      buf = pending;
      s = 0;
      e = length;
      pendingLength = 0;
    }
    while (s < e && isBlank(buf[s]!)) s++;
    while (e > s && isBlank(buf[e - 1]!)) e--;
    if (s < e) out.push(decode(buf, s, e));
  }

  function keepTail(chunk: Buffer, start: number, out: Frame[]): void {
    if (dropping) return;
    const length = pendingLength + chunk.length - start;
    if (length > MAX_LINE_BYTES) {
      pendingLength = 0;
      dropping = true;
      out.push(overlong());
      return;
    }
    chunk.copy(pending, pendingLength, start);
    pendingLength = length;
  }

  return {
    push(chunk) {
      const out: Frame[] = [];
      let start = 0;
      for (let i = 0; i < chunk.length; i++) {
        const byte = chunk[i];
        if (byte !== CR && byte !== LF) continue;
        endLine(chunk, start, i, out);
        start = i + 1;
      }
      if (start < chunk.length) keepTail(chunk, start, out);
      return out;
    },
    reset() {
      // Only text is worth a report: a blank remainder would have been skipped had it ended.
      let text = false;
      for (let i = 0; i < pendingLength && !text; i++) text = !isBlank(pending[i]!);
      const cut = pendingLength;
      pendingLength = 0;
      dropping = false;
      return text ? [badFrame('partial', `line cut after ${cut} bytes, before its terminator`)] : [];
    },
  };
}

/** `line` framing's decoder: UTF-8 text without control characters (tab allowed). */
export function decodeText(buf: Buffer, start: number, end: number): Frame {
  let ascii = true;
  for (let i = start; i < end; i++) {
    const byte = buf[i]!;
    if ((byte < SPACE && byte !== TAB) || byte === DEL)
      return badFrame('not_text', `control byte 0x${hex2(byte)} in line`);
    if (byte > DEL) ascii = false;
  }
  if (!ascii && !isUtf8(buf.subarray(start, end))) return badFrame('not_text', 'line is not valid UTF-8');
  return { ok: true, value: buf.toString(ascii ? 'latin1' : 'utf8', start, end) };
}

export const createLineParser = (): FrameParser => splitLines(decodeText);
