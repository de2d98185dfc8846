/** What a serial framing or a HID report decoder makes of a device's bytes, one scan at a time: the
 * scanned text, or why there is none. `reason` is a word (counted in /metrics: metrics.ts), `detail`
 * the sentence the log gets; the device runner (device-runner.ts) reads both kinds alike. */
export type ScanRead<Reason extends string = string> =
  | { ok: true; value: string; symbology?: string }
  | { ok: false; reason: Reason; detail: string };
