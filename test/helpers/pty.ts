import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { SerialPort } from 'serialport';

// A pseudo-terminal pair from socat (issue 27, Tests): the bridge opens `device`, the test holds
// `line` (the reader's side) with serialport, writes real frames and reads the feedback bytes.
// kill() is an unplug: socat dies, `device` disappears; plug() makes the pair again at the
// same paths (a re-plug at the same path).

export class PtyPair {
  #socat: ChildProcess | null = null;
  #line: SerialPort | null = null;
  #received: Buffer[] = [];

  constructor(
    readonly device: string,
    readonly lineEnd: string,
  ) {}

  static async open(dir: string, name: string): Promise<PtyPair> {
    const pair = new PtyPair(`${dir}/${name}-dev`, `${dir}/${name}-line`);
    await pair.plug();
    return pair;
  }

  /** socat up, both ends there, the reader's side open. */
  async plug(): Promise<void> {
    this.#socat = spawn('socat', [`pty,raw,echo=0,link=${this.device}`, `pty,raw,echo=0,link=${this.lineEnd}`], { stdio: 'ignore' });
    const deadline = Date.now() + 10_000;
    while (!(existsSync(this.device) && existsSync(this.lineEnd))) {
      if (Date.now() > deadline) throw new Error(`socat made no pty pair at ${this.device}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    const line = new SerialPort({ path: this.lineEnd, baudRate: 9600, autoOpen: false });
    await new Promise<void>((resolve, reject) => line.open((err) => (err ? reject(err) : resolve())));
    line.on('data', (chunk: Buffer) => this.#received.push(chunk));
    line.on('error', () => {});
    this.#line = line;
  }

  /** Bytes as the reader sends them. */
  async write(bytes: Buffer | string): Promise<void> {
    const line = this.#line!;
    await new Promise<void>((resolve, reject) => line.write(bytes, (err) => (err ? reject(err) : line.drain((e) => (e ? reject(e) : resolve())))));
  }

  /** Everything the bridge wrote back so far. */
  received(): Buffer {
    return Buffer.concat(this.#received);
  }

  /** Waits until the bridge wrote back `n` bytes in all. */
  async receivedBytes(n: number, ms = 10_000): Promise<Buffer> {
    const deadline = Date.now() + ms;
    while (this.received().length < n) {
      if (Date.now() > deadline) throw new Error(`expected ${n} feedback bytes, got ${this.received().toString('hex')}`);
      await new Promise((r) => setTimeout(r, 10));
    }
    return this.received();
  }

  /** The unplug: socat killed, both ends gone. */
  async kill(): Promise<void> {
    const socat = this.#socat;
    this.#socat = null;
    this.#line?.removeAllListeners('data');
    this.#line = null;
    if (!socat || socat.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      socat.once('exit', () => resolve());
      socat.kill('SIGKILL');
    });
  }
}

export function socatInstalled(): boolean {
  return ['/usr/bin/socat', '/bin/socat', '/usr/local/bin/socat'].some((p) => existsSync(p));
}

/** A valid rdm6300 frame for 10 hex digits: STX, the digits, their XOR checksum, ETX. */
export function rdm6300(data: string): Buffer {
  return Buffer.from(`\x02${data}${checksum(data)}\x03`, 'latin1');
}

/** A valid ID-12 frame: STX, the digits, checksum, CR LF, ETX. */
export function id12(data: string): Buffer {
  return Buffer.from(`\x02${data}${checksum(data)}\r\n\x03`, 'latin1');
}

export function checksum(data: string): string {
  let x = 0;
  for (let i = 0; i < 10; i += 2) x ^= Number.parseInt(data.slice(i, i + 2), 16);
  return x.toString(16).toUpperCase().padStart(2, '0');
}

/** Wiegand 26 as the converter sends it: the 26 bits as hex text (even parity over the first 12 data bits, odd over the last 12). */
export function wiegand26(facility: number, card: number): string {
  const data = (facility << 16) | card; // 24 bits
  const ones = (n: number) =>
    n
      .toString(2)
      .split('')
      .filter((b) => b === '1').length;
  const even = ones(data >>> 12) % 2;
  const odd = (ones(data & 0xfff) + 1) % 2;
  return ((even << 25) | (data << 1) | odd).toString(16).toUpperCase();
}
