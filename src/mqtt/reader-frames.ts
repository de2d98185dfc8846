// A connected reader's bytes, split into MQTT frames here rather than by mqtt-packet (docs/mqtt.md:
// acknowledgement and answer). A frame is a fixed header byte, the remaining length (1-4 bytes,
// 7 bits each) and that many bytes; splitting needs nothing more. The frames the box answers
// itself (a reader's scans and PUBACKs: direct-replies.ts) are handed over as byte ranges; every
// other frame goes to aedes' mqtt-packet parser whole, so that parser never holds part of a
// frame and stays in step. mqtt-packet allocates ~5 KB per scan (a BufferList copy, a Packet,
// `debug` argument arrays): at 10k scans/s a third of everything the broker allocated, and with
// it the scavenges that set the p99 (bench:mqtt). A frame over the size limit is refused as soon
// as its length is read, before its body is buffered, as the guard on mqtt-packet does.
import { readRemainingLength } from './remaining-length.js';

/** Takes a whole frame (type and flags byte, body from `start` to `end` of `buf`); false: not one the box answers. */
export type FrameTaker = (header: number, buf: Buffer, start: number, end: number) => boolean;

export class ReaderFrames {
  #rest: Buffer | null = null;

  constructor(
    private readonly take: FrameTaker,
    /** mqtt-packet's parse, for every other frame (always whole). */
    private readonly parseWhole: (frame: Buffer) => void,
    private readonly maxPacketBytes: number,
    private readonly oversize: (length: number) => void,
    /** Stop splitting once this is true (the connection closed under a frame's handling). */
    private readonly closed: () => boolean,
  ) {}

  feed(chunk: Buffer): void {
    const buf = this.#rest ? Buffer.concat([this.#rest, chunk]) : chunk;
    this.#rest = null;
    let at = 0;
    while (at < buf.length && !this.closed()) {
      const remaining = readRemainingLength(buf, at + 1);
      // A length of more than 4 bytes is malformed: mqtt-packet says so and aedes closes the connection.
      if (remaining === 'malformed') {
        this.parseWhole(buf.subarray(at));
        return;
      }
      if (remaining === null) break;
      if (remaining.length > this.maxPacketBytes) {
        this.oversize(remaining.length);
        return;
      }
      const end = remaining.end + remaining.length;
      if (end > buf.length) break;
      if (!this.take(buf[at]!, buf, remaining.end, end)) this.parseWhole(buf.subarray(at, end));
      at = end;
    }
    if (at < buf.length) this.#rest = buf.subarray(at);
  }
}
