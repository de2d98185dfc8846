import type { ScanRead } from '../scan-read.js';

// The contract every serial framing keeps: bytes in as they arrive, split anywhere; whole frames
// out, good or bad, in order; the same frames whatever the split. A bad frame is reported once
// and the parser resynchronises on the next frame, so one noisy read never costs the next card.

export type BadFrameReason = 'checksum' | 'parity' | 'garbage' | 'partial' | 'overlong' | 'not_text' | 'malformed';
export type Frame = ScanRead<BadFrameReason>;
export interface FrameParser {
  /** Bytes as they arrive (any split); the frames they complete, in order. Never throws. */
  push(chunk: Buffer): Frame[];
  /** The device went away: a frame in progress is dropped (returned as one 'partial' bad frame when bytes were
   * pending, else []), so it is never glued onto the next. */
  reset(): Frame[];
}
export const SERIAL_FRAMINGS = ['line', 'rdm6300', 'id12', 'wiegand26', 'wiegand34'] as const;
export type SerialFraming = (typeof SERIAL_FRAMINGS)[number];
export const MAX_LINE_BYTES = 256; // documented bound for line framing (and wiegand hex lines)

export const badFrame = (reason: BadFrameReason, detail: string): Frame => ({ ok: false, reason, detail });

/** The value of an ASCII hex digit (either case), or -1; the framings read hex byte by byte, without strings. */
export function hexDigit(byte: number): number {
  if (byte >= 0x30 && byte <= 0x39) return byte - 0x30;
  const lower = byte | 0x20;
  return lower >= 0x61 && lower <= 0x66 ? lower - 0x57 : -1;
}

/** A byte as two upper-case hex digits, for details. */
export const hex2 = (byte: number): string => byte.toString(16).toUpperCase().padStart(2, '0');
