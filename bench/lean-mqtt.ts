// A lean MQTT 3.1.1 client for bench:mqtt (BENCH_MQTT_CLIENT=lean, the default): the readers'
// side of the wire on a node:net socket with TCP_NODELAY, so the bench's 50 readers cost what
// reader firmware costs and leave the machine's second core to the server. mqtt.js spends ~160 us
// of CPU per scan round trip here (its packet pipeline, a stream write per packet): at 5,600
// decisions/s its two client threads took 91 % of a core of this 2-core box. This client writes
// what one event-loop turn produced for a socket in one write (a PUBACK for a decision and the
// next scan go out together, as a buffered firmware client sends them), encodes PUBLISH and
// PUBACK itself and parses every packet from the TCP bytes (fixed header, remaining length,
// topic, packet id, payload), so nothing is skipped: each decision is a real QoS 1 PUBLISH that
// is acknowledged, and each scan a real QoS 1 PUBLISH whose PUBACK is counted.
// Cold packets (CONNECT, SUBSCRIBE, DISCONNECT) are mqtt-packet's, the library aedes uses.
import { connect as netConnect, type Socket } from 'node:net';
import mqttPacket from 'mqtt-packet';
import { readRemainingLength, remainingLengthBytes, writeRemainingLength } from '../src/mqtt/remaining-length.js';

export interface LeanConnectOptions {
  host: string;
  port: number;
  clientId: string;
  username?: string;
  password?: string;
  keepalive?: number;
}

const PUBACK = 0x40;

export class LeanMqttClient {
  /** Every PUBLISH received (QoS 1 ones are acknowledged before this is called). */
  onMessage: (topic: string, payload: Buffer) => void = () => {};
  onError: (err: Error) => void = () => {};
  /** PUBLISHes of ours not yet acknowledged. */
  unacked = 0;
  readonly #socket: Socket;
  #rest: Buffer | null = null;
  #out: Buffer[] = [];
  #nextId = 1;
  #connack: { resolve: () => void; reject: (err: Error) => void } | null = null;
  readonly #subacks = new Map<number, (granted: number) => void>();
  #ping: NodeJS.Timeout | null = null;
  #closed: Promise<void>;
  readonly #flush = () => this.#write();

  private constructor(socket: Socket) {
    this.#socket = socket;
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.#read(chunk));
    socket.on('error', (err) => this.#fail(err));
    this.#closed = new Promise((resolve) => socket.once('close', () => resolve()));
    socket.once('close', () => {
      if (this.#ping) clearInterval(this.#ping);
      this.#fail(new Error('connection closed'));
    });
  }

  static connect(options: LeanConnectOptions): Promise<LeanMqttClient> {
    const socket = netConnect({ host: options.host, port: options.port });
    const client = new LeanMqttClient(socket);
    const keepalive = options.keepalive ?? 60;
    return new Promise((resolve, reject) => {
      client.#connack = { resolve: () => resolve(client), reject };
      socket.once('connect', () => {
        const connect: mqttPacket.IConnectPacket = {
          cmd: 'connect',
          protocolId: 'MQTT',
          protocolVersion: 4,
          clean: true,
          clientId: options.clientId,
          keepalive,
        };
        if (options.username !== undefined) connect.username = options.username;
        if (options.password !== undefined) connect.password = Buffer.from(options.password);
        client.#send(mqttPacket.generate(connect));
        client.#ping = setInterval(() => client.#send(mqttPacket.generate({ cmd: 'pingreq' })), (keepalive * 1000) / 2);
        client.#ping.unref();
      });
    });
  }

  /** Subscribes one filter; resolves with the granted QoS (0x80: refused). */
  subscribe(topic: string, qos: 0 | 1): Promise<number> {
    const messageId = this.#id();
    return new Promise((resolve) => {
      this.#subacks.set(messageId, resolve);
      this.#send(mqttPacket.generate({ cmd: 'subscribe', messageId, subscriptions: [{ topic, qos }] }));
    });
  }

  /** A QoS 1 PUBLISH; `topic` as bytes (encode it once: Buffer.from(topic)), a string payload as latin1 (the bench's are ASCII). */
  publish(topic: Buffer, payload: string | Buffer): void {
    const body = 2 + topic.length + 2 + payload.length;
    const buf = Buffer.allocUnsafe(1 + remainingLengthBytes(body) + body);
    buf[0] = 0x32; // PUBLISH, QoS 1
    let off = writeRemainingLength(buf, 1, body);
    buf.writeUInt16BE(topic.length, off);
    topic.copy(buf, off + 2);
    off += 2 + topic.length;
    buf.writeUInt16BE(this.#id(), off);
    if (typeof payload === 'string') buf.write(payload, off + 2, 'latin1');
    else payload.copy(buf, off + 2);
    this.unacked++;
    this.#send(buf);
  }

  async end(): Promise<void> {
    if (this.#socket.destroyed) return;
    this.#send(mqttPacket.generate({ cmd: 'disconnect' }));
    this.#write();
    this.#socket.end();
    await this.#closed;
  }

  destroy(): void {
    this.#socket.destroy();
  }

  #id(): number {
    const id = this.#nextId;
    this.#nextId = id >= 65535 ? 1 : id + 1;
    return id;
  }

  /** Queues a packet; everything queued in this turn goes out in one write. */
  #send(packet: Buffer): void {
    if (this.#out.push(packet) === 1) process.nextTick(this.#flush);
  }

  #write(): void {
    const out = this.#out;
    if (out.length === 0 || this.#socket.destroyed) return;
    this.#out = [];
    this.#socket.write(out.length === 1 ? out[0]! : Buffer.concat(out));
  }

  #fail(err: Error): void {
    if (this.#connack) {
      this.#connack.reject(err);
      this.#connack = null;
    } else if (err.message !== 'connection closed') this.onError(err);
  }

  #read(chunk: Buffer): void {
    const buf = this.#rest ? Buffer.concat([this.#rest, chunk]) : chunk;
    this.#rest = null;
    let off = 0;
    while (off < buf.length) {
      // Fixed header: type and flags, then the remaining length.
      const remaining = readRemainingLength(buf, off + 1);
      if (remaining === 'malformed') {
        this.#protocolError('remaining length over 4 bytes');
        return;
      }
      if (remaining === null || remaining.end + remaining.length > buf.length) break;
      this.#packet(buf[off]!, buf, remaining.end, remaining.end + remaining.length);
      off = remaining.end + remaining.length;
    }
    if (off < buf.length) this.#rest = buf.subarray(off);
  }

  #packet(header: number, buf: Buffer, start: number, end: number): void {
    switch (header >> 4) {
      case 3: {
        // PUBLISH: topic, packet id when QoS > 0, payload.
        const qos = (header >> 1) & 3;
        const topicEnd = start + 2 + buf.readUInt16BE(start);
        const topic = buf.toString('latin1', start + 2, topicEnd);
        let payloadStart = topicEnd;
        if (qos > 0) {
          const ack = Buffer.allocUnsafe(4);
          ack[0] = PUBACK;
          ack[1] = 2;
          ack[2] = buf[topicEnd]!;
          ack[3] = buf[topicEnd + 1]!;
          this.#send(ack);
          payloadStart += 2;
        }
        this.onMessage(topic, buf.subarray(payloadStart, end));
        return;
      }
      case 4: // PUBACK of one of our scans
        if (end - start !== 2) {
          this.#protocolError('PUBACK of the wrong length');
          return;
        }
        this.unacked--;
        return;
      case 2: {
        // CONNACK: session present, return code.
        const code = buf[start + 1];
        const pending = this.#connack;
        this.#connack = null;
        if (code === 0) pending?.resolve();
        else pending?.reject(new Error(`CONNACK return code ${code}`));
        return;
      }
      case 9: {
        // SUBACK: packet id, one granted QoS per filter.
        const resolve = this.#subacks.get(buf.readUInt16BE(start));
        this.#subacks.delete(buf.readUInt16BE(start));
        resolve?.(buf[end - 1]!);
        return;
      }
      case 13: // PINGRESP
        return;
      default:
        this.#protocolError(`unexpected packet type ${header >> 4}`);
    }
  }

  #protocolError(message: string): void {
    this.onError(new Error(message));
    this.#socket.destroy();
  }
}
