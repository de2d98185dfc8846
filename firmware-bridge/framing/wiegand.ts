import { splitLines } from './line.js';
import { badFrame, type Frame, type FrameParser, hexDigit } from './types.js';

// Wiegand-to-serial converters: the raw Wiegand bits as one hex number per line (lines as in
// line.ts: CR, LF or CR LF; blank lines skipped; MAX_LINE_BYTES bound), MSB first; e.g.
// `2F764DD\r\n` (26 bits) or `0x209A5BBAA\n` (34 bits). Spaces around it, an `0x` prefix and
// leading zeros are allowed; anything else that is not a hex number below 2^bits is 'malformed'.
// Bit 1 is the MSB. Wiegand 26 (H10301): bit 1 even parity over bits 2-13, bits 2-9 facility,
// bits 10-25 card, bit 26 odd parity over bits 14-25. Wiegand 34: bit 1 even parity over bits
// 2-17, bits 2-17 facility, bits 18-33 card, bit 34 odd parity over bits 18-33. Value:
// `<facility>:<card>` in decimal, unpadded (`123:45678`).
//
// Arithmetic is on doubles, not 32-bit bitwise ops: 34 bits do not fit an int32, and every
// integer below 2^53 is exact, so `/`, `%` and Math.floor give the bit fields without BigInt.

export type WiegandBits = 26 | 34;

const CARD_BITS = 16; // both formats

function ones(n: number): number {
  let count = 0;
  for (; n > 0; n >>>= 1) count += n & 1;
  return count;
}

/** The line as printable ASCII for a detail, cut short. */
function quote(buf: Buffer, start: number, end: number): string {
  const text = buf.toString('latin1', start, Math.min(end, start + 24));
  return JSON.stringify(end - start > 24 ? `${text}…` : text);
}

export function decodeWiegand(bits: WiegandBits, buf: Buffer, start: number, end: number): Frame {
  let i = start;
  if (end - start > 2 && buf[i] === 0x30 && (buf[i + 1]! | 0x20) === 0x78) i += 2; // 0x / 0X
  if (i === end) return badFrame('malformed', `${quote(buf, start, end)} is not a hex number`);
  const limit = 2 ** bits;
  let value = 0;
  for (; i < end; i++) {
    const digit = hexDigit(buf[i]!);
    if (digit < 0) return badFrame('malformed', `${quote(buf, start, end)} is not a hex number`);
    // Past the limit the value is only kept above it (the rest must still be hex), never past 2^53.
    value = value >= limit ? limit : value * 16 + digit;
  }
  if (value >= limit) return badFrame('malformed', `${quote(buf, start, end)} is wider than ${bits} bits`);

  const half = (bits - 2) / 2; // data bits under each parity bit
  const first = Math.floor(value / 2 ** (bits - 1)); // bit 1
  const last = value % 2; // bit `bits`
  const data = Math.floor(value / 2) % 2 ** (bits - 2); // bits 2 .. bits-1
  const wrong: string[] = [];
  if ((first + ones(Math.floor(data / 2 ** half))) % 2 !== 0)
    wrong.push(`even parity (bit 1 over bits 2-${half + 1}) wrong`);
  if ((last + ones(data % 2 ** half)) % 2 !== 1)
    wrong.push(`odd parity (bit ${bits} over bits ${half + 2}-${bits - 1}) wrong`);
  if (wrong.length > 0) return badFrame('parity', wrong.join('; '));
  const facility = Math.floor(data / 2 ** CARD_BITS);
  const card = data % 2 ** CARD_BITS;
  return { ok: true, value: `${facility}:${card}` };
}

export const createWiegandParser = (bits: WiegandBits): FrameParser =>
  splitLines((buf, start, end) => decodeWiegand(bits, buf, start, end));
