import type { SerialFraming } from './types.js';

// The other direction of the framings: a credential value as the frame a reader of that framing
// sends (checksums and parities computed). The simulator plays these into a pseudo-terminal;
// tests and bench:bridge write them too. Each is decoded by its parser to the same value.

/** A value the framing cannot carry; the message says what it carries. */
export class EncodeError extends Error {}

export interface EncodedScan {
  /** As the bridge will report it (upper-case hex, unpadded wiegand numbers). */
  value: string;
  frame: Buffer;
}

const ones = (n: number): number => (n > 0 ? (n % 2) + ones(Math.floor(n / 2)) : 0);
/** The XOR of the 5 bytes 10 hex digits encode, as 2 upper-case hex digits (rdm6300, id12). */
export const xorChecksum = (hex: string): string => {
  let x = 0;
  for (let i = 0; i < 10; i += 2) x ^= Number.parseInt(hex.slice(i, i + 2), 16);
  return x.toString(16).toUpperCase().padStart(2, '0');
};

/** The raw bits as the converter sends them (framing/wiegand.ts): even parity, facility, card, odd parity. */
export function wiegandBits(bits: 26 | 34, facility: number, card: number): string {
  const half = (bits - 2) / 2;
  const data = facility * 2 ** 16 + card; // doubles: 34 bits do not fit an int32
  const even = ones(Math.floor(data / 2 ** half)) % 2;
  const odd = (ones(data % 2 ** half) + 1) % 2;
  return (even * 2 ** (bits - 1) + data * 2 + odd).toString(16).toUpperCase();
}

/** One credential value as a frame of `framing`; an EncodeError saying what the framing carries when it cannot. */
export function encodeScan(framing: SerialFraming, raw: string): EncodedScan {
  const bad = (carries: string) =>
    new EncodeError(`${JSON.stringify(raw)} cannot be sent as ${framing}, which carries ${carries}`);
  if (framing === 'rdm6300' || framing === 'id12') {
    if (!/^[0-9A-Fa-f]{10}$/.test(raw)) throw bad('10 hex digits (e.g. 62E3086CED)');
    const value = raw.toUpperCase();
    return {
      value,
      frame: Buffer.from(`\x02${value}${xorChecksum(value)}${framing === 'id12' ? '\r\n' : ''}\x03`, 'latin1'),
    };
  }
  if (framing === 'wiegand26' || framing === 'wiegand34') {
    const bits = framing === 'wiegand26' ? 26 : 34;
    const facilityMax = bits === 26 ? 255 : 65535;
    const m = /^(\d{1,5}):(\d{1,5})$/.exec(raw);
    const [facility, card] = m ? [Number(m[1]), Number(m[2])] : [Number.NaN, Number.NaN];
    if (!(facility <= facilityMax && card <= 65535))
      throw bad(`facility:card in decimal, facility 0-${facilityMax}, card 0-65535 (e.g. 123:45678)`);
    return { value: `${facility}:${card}`, frame: Buffer.from(`${wiegandBits(bits, facility, card)}\r\n`, 'latin1') };
  }
  // line: the parser trims spaces and tabs and ends a line at CR or LF (framing/line.ts).
  const control = [...raw].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f);
  if (raw.trim() !== raw || raw === '' || control || Buffer.byteLength(raw) > 256)
    throw bad('one line of text (no control characters, no spaces around it, at most 256 bytes)');
  return { value: raw, frame: Buffer.from(`${raw}\r\n`, 'utf8') };
}
