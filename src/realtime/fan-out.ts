import type { WebSocket } from 'ws';
import { socketOf } from './ws-internals.js';

// Fan-out writes for broadcasts. `ws.send` frames a message anew for every socket and writes
// each frame on its own (one writev system call per frame per socket: at 1,000 subscribers that
// was most of the server's CPU, docs/performance.md). A broadcast is framed here once; the
// registry (channels.ts) joins the frames a subscriber has not had yet, so each subscriber gets
// one write per visit of a fan-out pass. Only unmasked, uncompressed text frames are built (server
// to client, perMessageDeflate is off), which is all the protocol sends.

/** A complete WebSocket text frame (FIN, opcode 1, unmasked) around `payload`. */
export function textFrame(payload: Buffer): Buffer {
  const length = payload.length;
  const headerLength = length < 126 ? 2 : length < 65536 ? 4 : 10;
  const out = Buffer.allocUnsafe(headerLength + length);
  out[0] = 0x81;
  if (length < 126) {
    out[1] = length;
  } else if (length < 65536) {
    out[1] = 126;
    out.writeUInt16BE(length, 2);
  } else {
    out[1] = 127;
    out.writeUInt32BE(0, 2);
    out.writeUInt32BE(length, 6);
  }
  payload.copy(out, headerLength);
  return out;
}

/** Whether frames go straight to the socket (ws-internals.ts); false once ws's private field was found moved. */
let direct = true;

/** From now on, every socket is written through ws's public
 * send() (the server calls this when ws's shape does not match). */
export function useWsSend(): void {
  direct = false;
}

/** Writes pre-built frames straight to the socket (or through ws.send when
 * direct writes are off); false when the socket is gone (the caller skips it). */
export function writeFrames(ws: WebSocket, frames: Buffer): boolean {
  if (!direct) return sendEach(ws, frames);
  const socket = socketOf(ws);
  if (!socket || socket.destroyed || !socket.writable) return false;
  socket.write(frames);
  return true;
}

/** The fallback: the payload of each frame textFrame() built, sent with ws's public send(). */
export function sendEach(ws: WebSocket, frames: Buffer): boolean {
  if (ws.readyState !== ws.OPEN) return false;
  let at = 0;
  while (at < frames.length) {
    const short = frames[at + 1]!;
    const [headerLength, length] =
      short < 126 ? [2, short] : short === 126 ? [4, frames.readUInt16BE(at + 2)] : [10, frames.readUInt32BE(at + 6)];
    ws.send(frames.subarray(at + headerLength, at + headerLength + length), { binary: false });
    at += headerLength + length;
  }
  return true;
}
