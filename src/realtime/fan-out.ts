import type { Socket } from 'node:net';
import type { WebSocket } from 'ws';

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

/** The TCP socket under a `ws` WebSocket (a private field of ws 8, pinned by the realtime tests). */
const socketOf = (ws: WebSocket) => (ws as unknown as { _socket?: Socket })._socket;

/** Writes pre-built frames straight to the socket; false when the socket is gone (the caller skips it). */
export function writeFrames(ws: WebSocket, frames: Buffer): boolean {
  const socket = socketOf(ws);
  if (!socket || socket.destroyed || !socket.writable) return false;
  socket.write(frames);
  return true;
}
