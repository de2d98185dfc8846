// The MQTT remaining length (MQTT 3.1.1 section 2.2.3): after a packet's first byte, 1-4 bytes
// of 7 bits each, least significant first, the high bit saying another byte follows. Shared by
// the frames read from readers (reader-frames.ts), the answers written to them
// (reply-writer.ts) and the bench's lean client.

/** How many bytes `n` takes. */
export const remainingLengthBytes = (n: number): number => (n < 128 ? 1 : n < 16_384 ? 2 : n < 2_097_152 ? 3 : 4);

/** Writes `n` at `at`; answers the offset after it. */
export function writeRemainingLength(buf: Buffer, at: number, n: number): number {
  for (;;) {
    const byte = n & 0x7f;
    n >>>= 7;
    buf[at++] = n > 0 ? byte | 0x80 : byte;
    if (n === 0) return at;
  }
}

/**
 * Reads the remaining length that starts at `at`: the length and the offset after it; `null`
 * when the buffer ends before it does, `'malformed'` when it runs past four bytes.
 */
export function readRemainingLength(buf: Buffer, at: number): { length: number; end: number } | null | 'malformed' {
  let length = 0;
  for (let i = 0; i < 4; i++) {
    if (at + i >= buf.length) return null;
    const byte = buf[at + i]!;
    length += (byte & 0x7f) * 2 ** (7 * i);
    if ((byte & 0x80) === 0) return { length, end: at + i + 1 };
  }
  return 'malformed';
}
