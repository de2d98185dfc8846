// bench:ws — WebSocket fan-out of the Pusher protocol-7 server (docs/realtime.md): 1,000 clients
// subscribed to one private channel while 1,000 events/s are published for 10 s through the
// signed Pusher HTTP API, against the real appliance in its own process (`node dist/main.js`,
// built first when missing or older than src/). Prints, one per line:
//   ws.delivered_per_s   deliveries (one event to one client) per second, first publish to last receipt
//   ws.lost_events       expected deliveries (events not refused x clients) minus those received, after a drain
//   ws.p50_ms / p99_ms   publish-to-receive latency over every delivery, from the event's scheduled
//                        publish time (open loop: a stalled publisher or server is seen, not hidden)
//   ws.server_rss_mb     peak VmRSS of the server process while publishing, next to
//   ws.baseline_rss_mb   its VmRSS started and warmed up with no client connected (same run)
//   ws.server_cpu_us_per_delivery / ws.server_core_capacity_per_s   the server's CPU per delivery
//                        and the deliveries/s one core would carry at that cost
// and the context: which client ran (ws.client: lean | ws), clients, events published, server
// CPU, publisher lag, closed clients.
//
// Publisher: batches of 10 events every 10 ms (POST /apps/{id}/batch_events, signed by the
// `pusher` server library over a keep-alive agent), each event's data {s: sequence, t: scheduled
// publish time as performance.timeOrigin + performance.now()}. Clients: in worker threads of this
// process, speaking just enough of the protocol (connection_established, pusher:subscribe with a
// locally computed auth signature, subscription_succeeded, pusher:ping); one client's auth is also
// fetched from POST /broadcasting/auth and must match. The receive path reads only the sequence
// number and timestamp out of each frame; every delivery is recorded in a bitset per client
// (lost and duplicate deliveries) and a latency histogram.
//
// Why the clients are a lean WebSocket client of our own (BENCH_WS_CLIENT=lean, the default): the
// machine has 2 cores, shared by the server and the 1,000 clients, and what the bench is for is
// the server's fan-out. With the `ws` library's client the bench needed ~2.4 us of CPU per delivery
// against the server's ~0.6 us, so the clients filled the cores and the figures measured them
// (655k deliveries/s, p99 9 s). The lean client does a real RFC 6455 handshake (random key,
// Sec-WebSocket-Accept checked) on a node:net socket, sends masked frames (subscribe, pusher:pong,
// pong to pings, close), and parses every server frame from the TCP bytes itself (7/16/64-bit
// lengths, frames split over reads and many in one read, fragments, control frames, masked server
// frames refused), reading the bench event's s and t straight out of the bytes into the same bitset
// and histogram, with no string per frame; all sockets of a thread read into one buffer. It is not a
// Pusher client: pusher-js and laravel-echo compatibility is proven by the test suite with the real
// libraries. BENCH_WS_CLIENT=ws runs the `ws` library's client instead (same checks and figures), to
// compare. A close frame of the server counts the client closed with its code; a protocol error by
// the server closes the client, counted with 1006 as `ws` does, and says why on stderr.
// BENCH_QUICK=1: 200 clients for 3 s, same lines. BENCH_WS_CLIENTS / _SECONDS / _RATE / _BATCH /
// _WORKERS (client threads: 1 for lean, 2 for ws) override; BENCH_WS_SERVER_FLAGS passes node flags to the server (--cpu-prof);
// BENCH_WS_SERVER runs another build of the appliance instead of dist/main.js, to compare.
import { spawn, spawnSync } from 'node:child_process';
import { createHash, createHmac, randomBytes, randomFillSync } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { Agent } from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import Pusher from 'pusher';
import WebSocket from 'ws';
import {
  line,
  sleep,
  wallNow,
  HIST,
  bucketOf,
  msOf,
  newestMtime,
  nodeFlags,
  rssOf,
  cpuOf,
  machineBusy,
  freePort,
  waitUntilReady,
} from './process-stats.js';

const APP = { appId: '424242', key: 'benchkey', secret: 'bench-secret-0123456789abcdef' };
const CHANNEL = 'private-dashboard.project.default.access';
const EVENT = 'BenchEvent';

const sign = (socketId: string) =>
  `${APP.key}:${createHmac('sha256', APP.secret).update(`${socketId}:${CHANNEL}`).digest('hex')}`;

type ToWorker = { cmd: 'count' } | { cmd: 'report' } | { cmd: 'close' };
type ClientKind = 'lean' | 'ws';
interface WorkerInit {
  url: string;
  clients: number;
  events: number;
  client: ClientKind;
}
interface WorkerReport {
  received: number;
  minPerClient: number;
  maxPerClient: number;
  duplicates: number;
  closed: number;
  closeCodes: Record<string, number>;
  lastReceiveAt: number;
  hist: Uint32Array;
}

// ---------------------------------------------------------------- client worker
async function clientWorker(): Promise<void> {
  const { url, clients, events, client } = workerData as WorkerInit;
  const port = parentPort!;
  const received = new Uint32Array(clients);
  // Which sequence numbers each client got, one bit each (batches published over several
  // connections may be handled out of order, so a last-seen number would not do).
  const stride = Math.ceil(events / 8);
  const seen = new Uint8Array(clients * stride);
  const hist = new Uint32Array(HIST);
  const closeCodes: Record<string, number> = {};
  let total = 0;
  let duplicates = 0;
  let closed = 0;
  let lastReceiveAt = 0;
  const SEQ = '\\"s\\":';
  const TIME = '\\"t\\":';
  const PREFIX = `{"event":"${EVENT}"`;

  /** One bench event received by client i at `now` (both clients record through here); false: not a sequence number of this run. */
  const deliver = (i: number, seq: number, at: number, now: number) => {
    if (!(seq >= 0 && seq < events)) return false;
    const byte = i * stride + (seq >> 3);
    const bit = 1 << (seq & 7);
    if (seen[byte]! & bit) duplicates++;
    seen[byte]! |= bit;
    received[i]!++;
    total++;
    hist[bucketOf(now - at)]!++;
    lastReceiveAt = now;
    return true;
  };
  const onClose = (code: number) => {
    closeCodes[code] = (closeCodes[code] ?? 0) + 1;
    closed++;
  };

  /** Every frame that is not a bench event, as JSON (a few per client: connection_established, subscription_succeeded, pusher:ping). */
  const control = (
    i: number,
    text: string,
    send: (text: string) => void,
    subscribed: () => void,
    reject: (err: Error) => void,
  ) => {
    const frame = JSON.parse(text) as { event: string; data?: string };
    if (frame.event === 'pusher:connection_established') {
      const socketId = (JSON.parse(frame.data!) as { socket_id: string }).socket_id;
      send(JSON.stringify({ event: 'pusher:subscribe', data: { channel: CHANNEL, auth: sign(socketId) } }));
    } else if (frame.event === 'pusher_internal:subscription_succeeded') {
      subscribed();
    } else if (frame.event === 'pusher:ping') {
      send('{"event":"pusher:pong","data":{}}');
    } else if (frame.event === 'pusher:subscription_error' || frame.event === 'pusher:error') {
      reject(new Error(`client ${i}: ${text}`));
    }
  };

  // ---- BENCH_WS_CLIENT=ws: the `ws` library's client, one string per frame.
  const wsSockets: WebSocket[] = [];
  const openWs = (i: number) =>
    new Promise<void>((resolve, reject) => {
      const ws = new WebSocket(url, { perMessageDeflate: false, skipUTF8Validation: true });
      wsSockets[i] = ws;
      let subscribed = false;
      const timer = setTimeout(() => reject(new Error(`client ${i}: not subscribed within 20 s`)), 20_000);
      const send = (text: string) => ws.send(text);
      const done = () => {
        subscribed = true;
        clearTimeout(timer);
        resolve();
      };
      ws.on('error', (err) => {
        if (!subscribed) reject(err);
      });
      ws.on('close', (code) => {
        onClose(code);
        if (!subscribed) reject(new Error(`client ${i}: closed ${code} before subscribing`));
      });
      ws.on('message', (raw: Buffer) => {
        const text = raw.toString('latin1');
        if (text.startsWith(PREFIX)) {
          // {"event":"BenchEvent","channel":"...","data":"{\"s\":123,\"t\":1732...}"}: read s and t only.
          const now = wallNow();
          const s = text.indexOf(SEQ);
          const t = text.indexOf(TIME, s);
          if (
            !deliver(
              i,
              Number.parseInt(text.slice(s + SEQ.length), 10),
              Number.parseFloat(text.slice(t + TIME.length)),
              now,
            )
          )
            throw new Error(`client ${i}: unexpected frame ${text}`);
          return;
        }
        control(i, text, send, done, reject);
      });
    });

  // ---- BENCH_WS_CLIENT=lean: RFC 6455 on a node:net socket, frames parsed from the bytes.
  const { hostname, port: tcpPort, pathname, search } = new URL(url);
  const prefixBytes = Buffer.from(PREFIX, 'latin1');
  const seqBytes = Buffer.from(SEQ, 'latin1');
  const timeBytes = Buffer.from(TIME, 'latin1');
  // Where SEQ starts in the frames this server writes, {"event":"BenchEvent","channel":"<channel>","data":"{\"s\":...:
  // looked at there first, searched for from the prefix on when it is not there (as the `ws` client's indexOf).
  const seqAt = Buffer.byteLength(`${PREFIX},"channel":"${CHANNEL}","data":"{`);
  // The prefix is compared 4 bytes at a time (DataView reads compile inline: 5 reads instead of 21
  // byte compares; on this machine a JS loop costs ~1.5 ns per byte, and a frame is ~120 bytes).
  const prefixWords = Int32Array.from({ length: prefixBytes.length >> 2 }, (_, k) => prefixBytes.readInt32LE(4 * k));
  const headerEnd = Buffer.from('\r\n\r\n', 'latin1');
  const POW10 = Array.from({ length: 10 }, (_, k) => 10 ** k);
  // Every socket of this thread reads into this one buffer (reads are handled one at a time);
  // bytes that must outlive a read (a frame cut by the read's end) are copied out.
  const readBuffer = Buffer.allocUnsafe(256 * 1024);
  const readView = new DataView(readBuffer.buffer, readBuffer.byteOffset, readBuffer.length);
  const leanSockets: LeanClient[] = [];

  /** The index of `needle` in buf[from, end), or -1 (the slow path: frames laid out otherwise). */
  const find = (buf: Buffer, needle: Buffer, from: number, end: number) => {
    const first = needle[0]!;
    const last = end - needle.length;
    outer: for (let p = from; p <= last; p++) {
      if (buf[p] !== first) continue;
      for (let k = 1; k < needle.length; k++) if (buf[p + k] !== needle[k]) continue outer;
      return p;
    }
    return -1;
  };
  const marker = (buf: Buffer, p: number, end: number, needle: Buffer) => {
    if (p < 0 || p + needle.length > end) return false;
    for (let k = 0; k < needle.length; k++) if (buf[p + k] !== needle[k]) return false;
    return true;
  };

  /**
   * The bench event in message buf[start, end), read from the bytes: false when the message does
   * not start with PREFIX (not a bench event); otherwise it throws unless SEQ and TIME are followed
   * by a sequence number of this run and a time, which are recorded.
   */
  const benchEvent = (i: number, buf: Buffer, view: DataView, start: number, end: number, now: number) => {
    if (end - start < prefixBytes.length) return false;
    for (let k = 0; k < prefixWords.length; k++)
      if (view.getInt32(start + 4 * k, true) !== prefixWords[k]) return false;
    for (let k = prefixWords.length * 4; k < prefixBytes.length; k++)
      if (buf[start + k] !== prefixBytes[k]) return false;
    // {"event":"BenchEvent","channel":"...","data":"{\"s\":123,\"t\":1732...}"}: read s and t only.
    let p = marker(buf, start + seqAt, end, seqBytes)
      ? start + seqAt
      : find(buf, seqBytes, start + prefixBytes.length, end);
    let seq = Number.NaN;
    let at = Number.NaN;
    if (p >= 0) {
      p += seqBytes.length;
      const from = p;
      let n = 0;
      for (let d: number; p < end && (d = buf[p]! - 48) >= 0 && d <= 9; p++) n = n * 10 + d;
      if (p > from) seq = n;
      const t = buf[p] === 0x2c && marker(buf, p + 1, end, timeBytes) ? p + 1 : find(buf, timeBytes, p, end);
      if (t >= 0) at = timeAt(buf, t + timeBytes.length, end);
    }
    if (Number.isNaN(at) || !deliver(i, seq, at, now))
      throw new Error(`client ${i}: unexpected frame ${buf.toString('latin1', start, end)}`);
    return true;
  };

  /**
   * The JSON number at buf[p, end), a wall-clock time in ms like 1732900000123.4567: integer and
   * fraction digits read as small integers (at most 9 digits each), then int + fraction / 10^k (equal
   * to parseFloat on a million random times; at most 1 ulp off in theory, 0.24 us at today's epoch,
   * far below the 10 us buckets). Other shapes (exponents, over 18 digits): parseFloat.
   */
  const timeAt = (buf: Buffer, p: number, end: number) => {
    const from = p;
    let high = 0;
    let low = 0;
    let digits = 0;
    for (let d: number; p < end && (d = buf[p]! - 48) >= 0 && d <= 9; p++, digits++) {
      if (digits < 9) high = high * 10 + d;
      else low = low * 10 + d;
    }
    if (digits === 0) return Number.NaN;
    let value = digits > 9 ? high * POW10[digits - 9]! + low : high;
    let slow = digits > 18;
    if (buf[p] === 0x2e) {
      let fraction = 0;
      let k = 0;
      for (let d: number; ++p < end && (d = buf[p]! - 48) >= 0 && d <= 9; k++) fraction = fraction * 10 + d;
      value += fraction / POW10[k]!;
      slow ||= k === 0 || k > 9;
    }
    if (slow || buf[p] === 0x65 || buf[p] === 0x45) return Number.parseFloat(buf.toString('latin1', from, end));
    return value;
  };

  /** One complete message (text or binary, like `ws`'s 'message') of client c, in buf[start, end). */
  const message = (c: LeanClient, buf: Buffer, view: DataView, start: number, end: number, now: number) => {
    if (!benchEvent(c.i, buf, view, start, end, now))
      control(c.i, buf.toString('utf8', start, end), c.sendText, c.subscribed, c.reject);
  };

  class LeanClient {
    readonly socket: Socket;
    /** 0: waiting for the 101; 1: open; 2: a close frame was sent or received (nothing more is read). */
    state = 0;
    /** Bytes of an incomplete frame (or of the handshake answer) carried to the next read. */
    pending: Buffer | null = null;
    /** A fragmented message being reassembled (the server never fragments; `ws` would accept it). */
    fragments: Buffer[] | null = null;
    /** The close code received (1006 when the connection ends without a close frame, as `ws` reports). */
    closeCode = 1006;
    isSubscribed = false;
    readonly accept: string;
    readonly timer: NodeJS.Timeout;

    constructor(
      readonly i: number,
      private readonly resolve: () => void,
      readonly reject: (err: Error) => void,
    ) {
      const key = randomBytes(16).toString('base64');
      this.accept = createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
      this.timer = setTimeout(() => reject(new Error(`client ${i}: not subscribed within 20 s`)), 20_000);
      this.socket = connect({
        host: hostname,
        port: Number(tcpPort),
        noDelay: true,
        onread: { buffer: readBuffer, callback: (n: number) => (this.read(n), true) },
      });
      this.socket.on('connect', () =>
        this.socket.write(
          `GET ${pathname}${search} HTTP/1.1\r\nHost: ${hostname}:${tcpPort}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
            `Sec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
        ),
      );
      this.socket.on('error', (err) => {
        if (!this.isSubscribed) reject(err);
      });
      this.socket.on('close', () => {
        clearTimeout(this.timer);
        onClose(this.closeCode);
        if (!this.isSubscribed) reject(new Error(`client ${i}: closed ${this.closeCode} before subscribing`));
      });
    }

    readonly subscribed = () => {
      this.isSubscribed = true;
      clearTimeout(this.timer);
      this.resolve();
    };

    readonly sendText = (text: string) => this.send(0x1, Buffer.from(text, 'utf8'));

    /** A masked client frame (FIN, `opcode`), RFC 6455 5.3: a fresh random masking key per frame. */
    send(opcode: number, payload: Buffer): void {
      if (this.state === 2 || this.socket.destroyed) return;
      const length = payload.length;
      const head = length < 126 ? 2 : length < 65536 ? 4 : 10;
      const out = Buffer.allocUnsafe(head + 4 + length);
      out[0] = 0x80 | opcode;
      if (length < 126) out[1] = 0x80 | length;
      else if (length < 65536) {
        out[1] = 0x80 | 126;
        out.writeUInt16BE(length, 2);
      } else {
        out[1] = 0x80 | 127;
        out.writeUInt32BE(Math.floor(length / 2 ** 32), 2);
        out.writeUInt32BE(length >>> 0, 6);
      }
      randomFillSync(out, head, 4);
      for (let k = 0; k < length; k++) out[head + 4 + k] = payload[k]! ^ out[head + (k & 3)]!;
      this.socket.write(out);
      if (opcode === 0x8) this.state = 2;
    }

    /** A protocol violation by the server: close with `code` (1002); counted as closed with 1006, no close frame received (as `ws` does). */
    fail(code: number, why: string): void {
      const reason = Buffer.alloc(2);
      reason.writeUInt16BE(code);
      this.send(0x8, reason);
      this.socket.end();
      setTimeout(() => this.socket.destroy(), 1000).unref();
      if (!this.isSubscribed) this.reject(new Error(`client ${this.i}: ${why}`));
      else console.error(`client ${this.i}: ${why}`);
    }

    /** n bytes arrived in readBuffer. */
    read(n: number): void {
      if (this.state === 2) return;
      const now = wallNow(); // the receive time of every frame in this read
      let buf = readBuffer;
      let view = readView;
      let end = n;
      if (this.pending) {
        buf = Buffer.concat([this.pending, readBuffer.subarray(0, n)]);
        view = new DataView(buf.buffer, buf.byteOffset, buf.length);
        end = buf.length;
        this.pending = null;
      }
      let off = 0;
      if (this.state === 0) {
        const h = buf.subarray(0, end).indexOf(headerEnd);
        if (h < 0) {
          this.pending = Buffer.from(buf.subarray(0, end));
          return;
        }
        if (!this.handshake(buf.toString('latin1', 0, h))) return;
        off = h + 4;
      }
      off = this.frames(buf, view, off, end, now);
      if (off < end && this.state !== 2) this.pending = Buffer.from(buf.subarray(off, end)); // copied: readBuffer is reused
    }

    /** The server's answer to the upgrade request: 101, Upgrade, Connection, the Sec-WebSocket-Accept for our key, no extension. */
    handshake(head: string): boolean {
      const [status, ...lines] = head.split('\r\n');
      const headers = new Map<string, string>();
      for (const l of lines) {
        const colon = l.indexOf(':');
        if (colon > 0) headers.set(l.slice(0, colon).trim().toLowerCase(), l.slice(colon + 1).trim());
      }
      let wrong = '';
      if (!/^HTTP\/1\.1 101 /.test(status!)) wrong = `answered ${status}`;
      else if (headers.get('upgrade')?.toLowerCase() !== 'websocket') wrong = `Upgrade: ${headers.get('upgrade')}`;
      else if (!/(^|,)\s*upgrade\s*(,|$)/i.test(headers.get('connection') ?? ''))
        wrong = `Connection: ${headers.get('connection')}`;
      else if (headers.get('sec-websocket-accept') !== this.accept)
        wrong = `Sec-WebSocket-Accept ${headers.get('sec-websocket-accept')}, expected ${this.accept}`;
      else if (headers.has('sec-websocket-extensions') || headers.has('sec-websocket-protocol'))
        wrong = 'an extension or subprotocol nobody asked for';
      if (wrong) {
        this.socket.destroy();
        this.reject(new Error(`client ${this.i}: handshake: ${wrong}`));
        return false;
      }
      this.state = 1;
      return true;
    }

    /** Every complete frame in buf[off, end); returns where the first incomplete one starts. */
    frames(buf: Buffer, view: DataView, off: number, end: number, now: number): number {
      while (end - off >= 2) {
        const b0 = buf[off]!;
        const b1 = buf[off + 1]!;
        if (b1 & 0x80) return (this.fail(1002, 'masked frame from the server'), end);
        if (b0 & 0x70) return (this.fail(1002, 'RSV bits set, no extension was negotiated'), end);
        let length = b1 & 0x7f;
        let head = 2;
        if (length === 126) {
          if (end - off < 4) break;
          length = (buf[off + 2]! << 8) | buf[off + 3]!;
          head = 4;
        } else if (length === 127) {
          if (end - off < 10) break;
          const high = buf.readUInt32BE(off + 2);
          if (high > 0x1fffff) return (this.fail(1009, '64-bit frame length over 2^53'), end);
          length = high * 2 ** 32 + buf.readUInt32BE(off + 6);
          head = 10;
        }
        if (end - off - head < length) break;
        const start = off + head;
        off = start + length;
        const opcode = b0 & 0x0f;
        const fin = (b0 & 0x80) !== 0;
        if (fin && (opcode === 0x1 || opcode === 0x2) && this.fragments === null) {
          message(this, buf, view, start, off, now); // the hot path: one whole text frame
        } else if (opcode >= 0x8) {
          if (!fin || length > 125) return (this.fail(1002, 'fragmented or long control frame'), end);
          if (opcode === 0x8) {
            if (length === 1) return (this.fail(1002, 'close frame with a 1-byte body'), end);
            this.closeCode = length >= 2 ? (buf[start]! << 8) | buf[start + 1]! : 1005;
            this.send(0x8, length >= 2 ? Buffer.from(buf.subarray(start, start + 2)) : Buffer.alloc(0)); // echo the code, then the server ends the TCP connection
            this.socket.end();
            return end;
          } else if (opcode === 0x9)
            this.send(0xa, Buffer.from(buf.subarray(start, off))); // ping: pong with the same body
          else if (opcode !== 0xa) return (this.fail(1002, `reserved control opcode ${opcode}`), end);
        } else if (opcode === 0x0 && this.fragments !== null) {
          this.fragments.push(Buffer.from(buf.subarray(start, off)));
          if (fin) {
            const whole = Buffer.concat(this.fragments);
            this.fragments = null;
            message(this, whole, new DataView(whole.buffer, whole.byteOffset, whole.length), 0, whole.length, now);
          }
        } else if ((opcode === 0x1 || opcode === 0x2) && this.fragments === null) {
          this.fragments = [Buffer.from(buf.subarray(start, off))];
        } else {
          return (
            this.fail(1002, `unexpected opcode ${opcode}${this.fragments ? ' inside a fragmented message' : ''}`), end
          );
        }
        if (this.state === 2) return end;
      }
      return off;
    }
  }

  const openLean = (i: number) =>
    new Promise<void>((resolve, reject) => (leanSockets[i] = new LeanClient(i, resolve, reject)));

  // Connect 50 at a time (a burst of 1,000 handshakes would only measure the accept queue).
  const open = client === 'lean' ? openLean : openWs;
  let next = 0;
  await Promise.all(
    Array.from({ length: 50 }, async () => {
      while (next < clients) await open(next++);
    }),
  );
  port.postMessage({ type: 'ready' });

  port.on('message', (msg: ToWorker) => {
    if (msg.cmd === 'count') port.postMessage({ type: 'count', received: total });
    else if (msg.cmd === 'report') {
      let min = Infinity;
      let max = 0;
      for (const n of received) {
        min = Math.min(min, n);
        max = Math.max(max, n);
      }
      const report: WorkerReport = {
        received: total,
        minPerClient: min,
        maxPerClient: max,
        duplicates,
        closed,
        closeCodes,
        lastReceiveAt,
        hist,
      };
      port.postMessage({ type: 'report', report }, [hist.buffer]);
    } else if (msg.cmd === 'close') {
      for (const ws of wsSockets) ws.terminate();
      for (const c of leanSockets) c.socket.destroy();
      port.close();
    }
  });
}

// ---------------------------------------------------------------- main

async function main(): Promise<void> {
  const quick = process.env.BENCH_QUICK === '1';
  const env = (name: string, fallback: number) => (process.env[name] ? Number(process.env[name]) : fallback);
  const clients = env('BENCH_WS_CLIENTS', quick ? 200 : 1000);
  const seconds = env('BENCH_WS_SECONDS', quick ? 3 : 10);
  const rate = env('BENCH_WS_RATE', 1000);
  const client = (process.env.BENCH_WS_CLIENT ?? 'lean') as ClientKind;
  if (client !== 'lean' && client !== 'ws') throw new Error(`BENCH_WS_CLIENT=${client}: lean or ws`);
  // Client threads: the lean clients fit in one (~0.95 of a core at 1M deliveries/s, with the
  // publisher), and a second one only takes the server's core away from it (p99 67-83 ms in 5 full
  // runs with 2, 32-56 ms in 6 with 1; the rest alike); the `ws` clients need two.
  const workers = env('BENCH_WS_WORKERS', client === 'lean' ? 1 : 2);
  const BATCH = env('BENCH_WS_BATCH', 10); // events per batch_events request; 10 is the API's limit
  const batches = Math.round((rate * seconds) / BATCH);
  const batchEveryMs = (1000 * BATCH) / rate;

  // The server: the built appliance in its own process (built first when missing or stale).
  if (
    !process.env.BENCH_WS_SERVER &&
    (!existsSync('dist/main.js') || statSync('dist/main.js').mtimeMs < newestMtime('src'))
  ) {
    const built = spawnSync(process.execPath, ['scripts/build.mjs'], { stdio: 'inherit' });
    if (built.status !== 0) throw new Error('node scripts/build.mjs failed');
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-ws-'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const serverFlags = process.env.BENCH_WS_SERVER_FLAGS ? process.env.BENCH_WS_SERVER_FLAGS.split(' ') : []; // e.g. --cpu-prof
  const entry = process.env.BENCH_WS_SERVER ?? 'dist/main.js'; // another build of the appliance, to compare
  const server = spawn(process.execPath, [...nodeFlags(), ...serverFlags, entry], {
    env: {
      PATH: process.env.PATH ?? '',
      GATEHOUSE_DATA_DIR: dataDir,
      GATEHOUSE_HTTP_HOST: '127.0.0.1',
      GATEHOUSE_HTTP_PORT: String(port),
      GATEHOUSE_MQTT_PORT: '0',
      GATEHOUSE_ADMIN_EMAIL: 'bench@gatehouse.local',
      GATEHOUSE_ADMIN_PASSWORD: 'bench password',
      GATEHOUSE_RATE_LIMIT_STANDARD: '0',
      GATEHOUSE_LOG_LEVEL: 'warn',
      GATEHOUSE_PUSHER_APP_ID: APP.appId,
      GATEHOUSE_PUSHER_KEY: APP.key,
      GATEHOUSE_PUSHER_SECRET: APP.secret,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const serverOutput: string[] = [];
  const keep = (chunk: Buffer) => serverOutput.push(chunk.toString('utf8'));
  server.stdout!.on('data', keep);
  server.stderr!.on('data', keep);
  const serverExit = new Promise<number | null>((resolve) => server.on('exit', resolve));
  const workerThreads: Worker[] = [];
  const fail = (message: string) => new Error(`${message}\nserver output:\n${serverOutput.join('').slice(-4000)}`);

  try {
    await waitUntilReady(base, server, fail);
    const pid = server.pid!;

    // The dashboard's path: a token, the client config, one auth from /broadcasting/auth.
    const tokenRes = await fetch(`${base}/api/v1/auth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'bench@gatehouse.local', password: 'bench password', device_name: 'bench-ws' }),
    });
    if (!tokenRes.ok) throw fail(`token: ${tokenRes.status} ${await tokenRes.text()}`);
    const { token } = (await tokenRes.json()) as { token: string };
    const bearer = { authorization: `Bearer ${token}` };
    const configRes = await fetch(`${base}/api/v1/broadcasting/config`, { headers: bearer });
    const { data: clientConfig } = (await configRes.json()) as {
      data: { key: string; ws_port: number; ws_path: string };
    };
    if (clientConfig.key !== APP.key || clientConfig.ws_port !== port)
      throw fail(`unexpected client config ${JSON.stringify(clientConfig)}`);
    const url = `ws://127.0.0.1:${port}${clientConfig.ws_path}/app/${clientConfig.key}?protocol=7&client=bench&version=8.4.0&flash=false`;
    await checkAuthEndpoint(url, base, bearer);

    // Warm the publish route, with nobody subscribed yet, then the baseline.
    const agent = new Agent({ keepAlive: true, maxSockets: 4 });
    const pusher = new Pusher({ ...APP, host: '127.0.0.1', port: String(port), useTLS: false, agent });
    for (let i = 0; i < 50; i++)
      await pusher.triggerBatch(
        Array.from({ length: 10 }, () => ({ channel: CHANNEL, name: EVENT, data: { s: -1, t: wallNow() } })),
      );
    await sleep(500);
    const baselineRss = rssOf(pid);

    // Clients, split over worker threads.
    const ready: Promise<void>[] = [];
    for (let w = 0; w < workers; w++) {
      const count = Math.floor(clients / workers) + (w < clients % workers ? 1 : 0);
      const worker = new Worker(new URL(import.meta.url), {
        workerData: { url, clients: count, events: batches * BATCH, client } satisfies WorkerInit,
      });
      workerThreads.push(worker);
      ready.push(
        new Promise<void>((resolve, reject) => {
          worker.once('message', (m: { type: string }) => (m.type === 'ready' ? resolve() : reject(new Error(m.type))));
          worker.once('error', reject);
        }),
      );
    }
    const connectStarted = performance.now();
    await Promise.all(ready);
    const connectSeconds = (performance.now() - connectStarted) / 1000;
    const ask = <T>(worker: Worker, cmd: ToWorker, type: string) =>
      new Promise<T>((resolve) => {
        const on = (m: { type: string } & T) => {
          if (m.type !== type) return;
          worker.off('message', on);
          resolve(m);
        };
        worker.on('message', on);
        worker.postMessage(cmd);
      });
    const receivedSoFar = async () =>
      (await Promise.all(workerThreads.map((w) => ask<{ received: number }>(w, { cmd: 'count' }, 'count')))).reduce(
        (a, c) => a + c.received,
        0,
      );
    await sleep(300);
    const connectedRss = rssOf(pid);

    // Publish: open loop, batch k is due at start + k * batchEveryMs whether or not earlier ones were answered.
    let peakRss = connectedRss;
    const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssOf(pid))), 100);
    const lag = new Float64Array(batches);
    const answer = new Float64Array(batches).fill(Infinity); // unanswered by the deadline: Infinity
    const publishes: Promise<unknown>[] = [];
    let accepted = 0;
    let publishErrors = 0;
    let firstError = '';
    const cpuBefore = cpuOf(pid);
    const machineBefore = machineBusy();
    const benchCpuBefore = process.cpuUsage();
    const start = performance.now() + 20;
    for (let k = 0; k < batches; k++) {
      const due = start + k * batchEveryMs;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait); // timers fire up to ~1 ms late: ws.publish_lag_p99_ms; t is the due time regardless
      lag[k] = performance.now() - due;
      const t = performance.timeOrigin + due;
      const batch = Array.from({ length: BATCH }, (_, j) => ({
        channel: CHANNEL,
        name: EVENT,
        data: { s: k * BATCH + j, t },
      }));
      publishes.push(
        pusher.triggerBatch(batch).then(
          () => {
            accepted += BATCH;
            answer[k] = performance.now() - due;
          },
          (err: Error) => {
            publishErrors += BATCH;
            firstError ||= err.message;
          },
        ),
      );
    }
    const publishEnd = performance.now();
    // A server that fell behind answers and delivers after the schedule: wait for its backlog
    // (which counts), up to 15 s (quick) or 120 s (full) after the last publish.
    const deadline = publishEnd + (quick ? 15_000 : 120_000);
    let deadlineTimer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(publishes),
      new Promise((r) => (deadlineTimer = setTimeout(r, deadline - performance.now()))),
    ]);
    clearTimeout(deadlineTimer);
    const answeredAt = performance.now();

    // Drain: until every client has every event the server did not refuse, or nothing moved for
    // 3 s, or the deadline.
    const sent = batches * BATCH;
    const expected = () => (sent - publishErrors) * clients;
    let got = await receivedSoFar();
    for (let idle = 0; got < expected() && idle < 3000 && performance.now() < deadline; ) {
      await sleep(100);
      const now = await receivedSoFar();
      idle = now === got ? idle + 100 : 0;
      got = now;
    }
    clearInterval(sampler);
    const serverCpu = cpuOf(pid) - cpuBefore;
    const machineCpu = machineBusy() - machineBefore;
    const benchCpu = process.cpuUsage(benchCpuBefore);
    const drainedAt = performance.now();

    const reports = await Promise.all(
      workerThreads.map((w) => ask<{ report: WorkerReport }>(w, { cmd: 'report' }, 'report')),
    );
    const hist = new Uint32Array(HIST);
    let received = 0;
    let duplicates = 0;
    let closed = 0;
    let lastReceiveAt = 0;
    let minPerClient = Infinity;
    let maxPerClient = 0;
    const closeCodes: Record<string, number> = {};
    for (const { report } of reports) {
      report.hist.forEach((n, i) => {
        hist[i]! += n;
      });
      received += report.received;
      duplicates += report.duplicates;
      closed += report.closed;
      lastReceiveAt = Math.max(lastReceiveAt, report.lastReceiveAt);
      minPerClient = Math.min(minPerClient, report.minPerClient);
      maxPerClient = Math.max(maxPerClient, report.maxPerClient);
      for (const [code, n] of Object.entries(report.closeCodes)) closeCodes[code] = (closeCodes[code] ?? 0) + n;
    }
    if (received === 0)
      throw fail(
        `no event reached any client (${sent} sent, ${accepted} accepted, ${publishErrors} refused: ${firstError})`,
      );
    const percentile = (p: number) => {
      const rank = Math.ceil(received * p);
      let seen = 0;
      for (let i = 0; i < HIST; i++) if ((seen += hist[i]!) >= rank) return msOf(i);
      return msOf(HIST - 1);
    };
    let maxBucket = HIST - 1;
    while (maxBucket > 0 && hist[maxBucket] === 0) maxBucket--;
    const deliverySeconds = (lastReceiveAt - (performance.timeOrigin + start)) / 1000;
    lag.sort();
    answer.sort();

    console.log(`ws.client: ${client}`);
    line('ws.clients', clients, 'clients');
    line('ws.events_published', sent - publishErrors, 'events');
    line('ws.publish_rate', Math.round(sent / ((publishEnd - start) / 1000)), 'events/s');
    line('ws.delivered_per_s', Math.round(received / deliverySeconds), 'deliveries/s');
    line('ws.expected_per_s', clients * rate, 'deliveries/s');
    line('ws.lost_events', expected() - (received - duplicates), 'deliveries');
    line('ws.p50_ms', percentile(0.5).toFixed(2), 'ms');
    line('ws.p99_ms', percentile(0.99).toFixed(2), 'ms');
    line('ws.max_ms', msOf(maxBucket).toFixed(2), 'ms');
    line('ws.server_rss_mb', (peakRss / 1024 / 1024).toFixed(0), 'MB');
    line('ws.connected_rss_mb', (connectedRss / 1024 / 1024).toFixed(0), 'MB');
    line('ws.baseline_rss_mb', (baselineRss / 1024 / 1024).toFixed(0), 'MB');
    line('ws.server_cpu_pct', ((100 * serverCpu) / ((drainedAt - start) / 1000)).toFixed(0), '% of one core');
    // The server's own cost per delivery, and what one core would carry at that cost: with the
    // clients on the same two cores, the end-to-end rate above is bounded by the clients' side.
    line('ws.server_cpu_us_per_delivery', ((serverCpu * 1e6) / received).toFixed(2), 'us');
    line('ws.server_core_capacity_per_s', Math.round(received / serverCpu), 'deliveries/s');
    line(
      'ws.bench_cpu_pct',
      ((100 * (benchCpu.user + benchCpu.system)) / 1000 / (drainedAt - start)).toFixed(0),
      '% of one core',
    );
    // Whatever else ran on the box meanwhile (the noise): machine busy time minus server and bench.
    const benchSeconds = (benchCpu.user + benchCpu.system) / 1e6;
    line(
      'ws.other_cpu_pct',
      Math.max(0, (100 * (machineCpu - serverCpu - benchSeconds)) / ((drainedAt - start) / 1000)).toFixed(0),
      '% of one core',
    );
    line('ws.publish_lag_p99_ms', lag[Math.floor(batches * 0.99)]!.toFixed(2), 'ms');
    line('ws.publish_answer_p50_ms', answer[Math.floor(batches * 0.5)]!.toFixed(2), 'ms');
    line('ws.publish_answer_p99_ms', answer[Math.floor(batches * 0.99)]!.toFixed(2), 'ms');
    line('ws.last_answer_after_ms', (answeredAt - publishEnd).toFixed(0), 'ms');
    line('ws.drain_s', ((drainedAt - answeredAt) / 1000).toFixed(1), 's');
    line('ws.connect_s', connectSeconds.toFixed(2), 's');
    line('ws.per_client_min', minPerClient, 'events');
    line('ws.per_client_max', maxPerClient, 'events');
    line('ws.duplicates', duplicates, 'deliveries');
    line('ws.closed_clients', closed, `clients${closed ? ` ${JSON.stringify(closeCodes)}` : ''}`);
    if (publishErrors > 0) line('ws.publish_errors', publishErrors, `events (${firstError})`);
    if (sent - accepted - publishErrors > 0)
      line('ws.unanswered_at_deadline', sent - accepted - publishErrors, 'events');
    agent.destroy();
  } finally {
    for (const worker of workerThreads) worker.postMessage({ cmd: 'close' } satisfies ToWorker);
    await Promise.all(workerThreads.map((w) => new Promise((r) => w.once('exit', r))));
    server.kill('SIGTERM');
    await serverExit;
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** One client subscribes with the auth /broadcasting/auth issued (as pusher-js does); it must equal the local signature. */
async function checkAuthEndpoint(url: string, base: string, bearer: Record<string, string>): Promise<void> {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  const frames: { event: string; data?: string }[] = [];
  const waiters: (() => void)[] = [];
  ws.on('message', (raw: Buffer) => {
    frames.push(JSON.parse(raw.toString()) as { event: string; data?: string });
    for (const w of waiters.splice(0)) w();
  });
  const next = async (event: string) => {
    for (let i = 0; i < 100; i++) {
      const found = frames.find((f) => f.event === event);
      if (found) return found;
      await Promise.race([new Promise<void>((r) => waiters.push(r)), sleep(100)]);
    }
    throw new Error(`no ${event}; got ${JSON.stringify(frames)}`);
  };
  const socketId = (JSON.parse((await next('pusher:connection_established')).data!) as { socket_id: string }).socket_id;
  const res = await fetch(`${base}/broadcasting/auth`, {
    method: 'POST',
    headers: { ...bearer, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ socket_id: socketId, channel_name: CHANNEL }).toString(),
  });
  if (!res.ok) throw new Error(`/broadcasting/auth: ${res.status} ${await res.text()}`);
  const { auth } = (await res.json()) as { auth: string };
  if (auth !== sign(socketId)) throw new Error(`/broadcasting/auth answered ${auth}, expected ${sign(socketId)}`);
  ws.send(JSON.stringify({ event: 'pusher:subscribe', data: { channel: CHANNEL, auth } }));
  await next('pusher_internal:subscription_succeeded');
  ws.close();
  await new Promise((r) => ws.once('close', r));
}

if (isMainThread) await main();
else await clientWorker();
