import type { ScanRead } from '../scan-read.js';

/** What a decoder makes of the reports of one scan: the scanned text, or why there is none. */
export type HidScan = ScanRead<'garbage' | 'partial' | 'overlong' | 'not_text' | 'malformed'>;

/** Turns a device's input reports, in the order they came, into scans. One decoder per device. */
export interface ReportDecoder {
  /** One input report; the scans it completes (usually 0 or 1). Never throws. */
  push(report: Buffer): HidScan[];
  /** The device went away: anything pending is dropped (one 'partial'
   * when something was pending), never glued onto the next scan. */
  reset(): HidScan[];
}

export const MAX_SCAN_CHARS = 4096;
