// Base45 (RFC 9285): bytes as characters of QR codes' alphanumeric mode, which packs 2 characters
// in 11 bits, so 2 bytes (3 characters) cost 16.5 bits in a QR code where base64url in byte mode
// costs 21.3 (docs/credentials.md, "Why base45"). Strict on decoding, as a door reads what anyone
// can print: a character outside the alphabet, a length of 3n+1, or a group worth more than its
// bytes can hold is no value (null), never a guess. The npm `base45` package decodes such input to
// garbage instead of refusing it, hence these few lines.

export const BASE45_ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ $%*+-./:';

const VALUE = new Int8Array(128).fill(-1);
for (let i = 0; i < BASE45_ALPHABET.length; i++) VALUE[BASE45_ALPHABET.charCodeAt(i)] = i;

export function encodeBase45(bytes: Uint8Array): string {
  let out = '';
  let i = 0;
  for (; i + 1 < bytes.length; i += 2) {
    const n = bytes[i]! * 256 + bytes[i + 1]!;
    out +=
      BASE45_ALPHABET[n % 45]! + BASE45_ALPHABET[Math.floor(n / 45) % 45]! + BASE45_ALPHABET[Math.floor(n / 2025)]!;
  }
  if (i < bytes.length) {
    const n = bytes[i]!;
    out += BASE45_ALPHABET[n % 45]! + BASE45_ALPHABET[Math.floor(n / 45)]!;
  }
  return out;
}

/** The bytes `text` encodes, or null when it is not strict base45. */
export function decodeBase45(text: string): Uint8Array | null {
  if (text.length % 3 === 1) return null;
  const out = new Uint8Array(Math.floor(text.length / 3) * 2 + (text.length % 3 === 2 ? 1 : 0));
  let o = 0;
  for (let i = 0; i < text.length; i += 3) {
    const c = digit(text, i);
    const d = digit(text, i + 1);
    if (c < 0 || d < 0) return null;
    if (i + 2 < text.length) {
      const e = digit(text, i + 2);
      if (e < 0) return null;
      const n = c + d * 45 + e * 2025;
      if (n > 0xffff) return null;
      out[o++] = n >> 8;
      out[o++] = n & 0xff;
    } else {
      const n = c + d * 45;
      if (n > 0xff) return null;
      out[o++] = n;
    }
  }
  return out;
}

function digit(text: string, i: number): number {
  const code = text.charCodeAt(i);
  return code < 128 ? VALUE[code]! : -1;
}
