import { badFrame, type Frame, type FrameParser, hex2, hexDigit } from './types.js';

// RDM6300 (125 kHz EM4100 module) framing: STX (0x02), 10 hex data characters, 2 hex checksum
// characters, ETX (0x03), no line end; e.g. `\x02 62E3086CED 08 \x03`. The checksum is the XOR of
// the 5 bytes the data characters encode. Hex is read in either case; the value is the 10 data
// characters in upper case (`62E3086CED`). ID-12 frames are the same with CR LF before ETX, so
// id12.ts builds on `stxFraming` here with a longer trailer.
//
// Resynchronisation: STX always starts a frame. A new STX inside an open frame reports that one
// 'partial'. A frame going wrong (a byte that is not hex, too few or too many characters, a wrong
// trailer) is reported 'malformed' at the byte that breaks it; its rest is then dropped without a
// second report up to its ETX (or the next STX). Bytes between frames that are not STX are a
// garbage run, reported once as one 'garbage' frame when the run ends: at the next STX, or at
// reset(). Not at the end of a chunk, so a run split across chunks is still one report.

const STX = 0x02;
const ETX = 0x03;
const HEX_CHARS = 12; // 10 data + 2 checksum
const SAMPLE_BYTES = 8; // garbage bytes quoted in its detail

const NAMES = new Map([
  [STX, 'STX'],
  [ETX, 'ETX'],
  [0x0a, 'LF'],
  [0x0d, 'CR'],
]);
const byteName = (byte: number): string => NAMES.get(byte) ?? `0x${hex2(byte)}`;

/** 'skipping': the open frame was reported malformed; its rest is dropped up to its ETX or the next STX. */
type State = 'idle' | 'open' | 'skipping';

/** A parser for `STX <12 hex> <trailer>`, where the trailer ends in ETX. */
export function stxFraming(trailer: readonly number[]): FrameParser {
  const frameBytes = 1 + HEX_CHARS + trailer.length;
  const hex = Buffer.allocUnsafe(HEX_CHARS);
  const sample = Buffer.allocUnsafe(SAMPLE_BYTES);
  let state: State = 'idle';
  /** Bytes of the open frame after its STX. */
  let got = 0;
  let garbage = 0;

  function endGarbage(out: Frame[]): void {
    if (garbage === 0) return;
    const quoted = [...sample.subarray(0, Math.min(garbage, SAMPLE_BYTES))].map(hex2).join(' ');
    out.push(
      badFrame(
        'garbage',
        `${garbage} stray byte${garbage === 1 ? '' : 's'} outside a frame: ${quoted}${garbage > SAMPLE_BYTES ? ' …' : ''}`,
      ),
    );
    garbage = 0;
  }

  /** A byte of the open frame; the frame it completes or breaks, if any. */
  function inFrame(byte: number): Frame | null {
    if (got < HEX_CHARS) {
      if (hexDigit(byte) >= 0) {
        hex[got++] = byte;
        return null;
      }
      state = byte === ETX ? 'idle' : 'skipping';
      if (byte === ETX || byte === trailer[0])
        return badFrame('malformed', `${byteName(byte)} after ${got} hex characters, expected ${HEX_CHARS}`);
      return badFrame('malformed', `${byteName(byte)} at hex character ${got + 1} is not hex`);
    }
    const expected = trailer[got - HEX_CHARS]!;
    if (byte === expected) {
      if (++got < HEX_CHARS + trailer.length) return null;
      state = 'idle';
      return checked(hex);
    }
    state = byte === ETX ? 'idle' : 'skipping';
    if (got === HEX_CHARS && hexDigit(byte) >= 0) return badFrame('malformed', `more than ${HEX_CHARS} hex characters`);
    return badFrame('malformed', `${byteName(byte)} where ${byteName(expected)} was expected`);
  }

  return {
    push(chunk) {
      const out: Frame[] = [];
      for (let i = 0; i < chunk.length; i++) {
        const byte = chunk[i]!;
        if (byte === STX) {
          if (state === 'open')
            out.push(badFrame('partial', `frame cut by a new STX after ${1 + got} of ${frameBytes} bytes`));
          endGarbage(out);
          state = 'open';
          got = 0;
        } else if (state === 'open') {
          const frame = inFrame(byte);
          if (frame) out.push(frame);
        } else if (state === 'skipping') {
          if (byte === ETX) state = 'idle';
        } else {
          if (garbage < SAMPLE_BYTES) sample[garbage] = byte;
          garbage++;
        }
      }
      return out;
    },
    reset() {
      const out: Frame[] = [];
      if (state === 'open') out.push(badFrame('partial', `frame cut by reset after ${1 + got} of ${frameBytes} bytes`));
      endGarbage(out);
      state = 'idle';
      got = 0;
      return out;
    },
  };
}

/** The 12 hex characters as a frame: good when the XOR of the 5 data bytes is the checksum byte. */
function checked(hex: Buffer): Frame {
  const byteAt = (i: number): number => (hexDigit(hex[i]!) << 4) | hexDigit(hex[i + 1]!);
  let xor = 0;
  for (let i = 0; i < 10; i += 2) xor ^= byteAt(i);
  const given = byteAt(10);
  if (given !== xor) return badFrame('checksum', `checksum ${hex2(given)}, expected ${hex2(xor)}`);
  return { ok: true, value: hex.toString('latin1', 0, 10).toUpperCase() };
}

export const createRdm6300Parser = (): FrameParser => stxFraming([ETX]);
