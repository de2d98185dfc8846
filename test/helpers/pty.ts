import { encodeScan } from '../../firmware-bridge/framing/encode.js';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SerialPort } from 'serialport';

// A pseudo-terminal pair from socat (docs/bridge.md): the bridge opens `device`, the test holds
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
    this.#socat = spawn('socat', [`pty,raw,echo=0,link=${this.device}`, `pty,raw,echo=0,link=${this.lineEnd}`], {
      stdio: 'ignore',
    });
    // A missing socat fails at once, naming the package (scripts/test-tools.mjs checks it before a run too).
    let failed: Error | null = null;
    this.#socat.once('error', (err: NodeJS.ErrnoException) => {
      failed =
        err.code === 'ENOENT'
          ? new Error('socat is not installed: apt-get install -y socat (the README names what npm test needs)')
          : err;
    });
    const deadline = Date.now() + 10_000;
    while (!(existsSync(this.device) && existsSync(this.lineEnd))) {
      if (failed) throw failed;
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
    await new Promise<void>((resolve, reject) =>
      line.write(bytes, (err) => (err ? reject(err) : line.drain((e) => (e ? reject(e) : resolve())))),
    );
  }

  /** Everything the bridge wrote back so far. */
  received(): Buffer {
    return Buffer.concat(this.#received);
  }

  /** Waits until the bridge wrote back `n` bytes in all. */
  async receivedBytes(n: number, ms = 10_000): Promise<Buffer> {
    const deadline = Date.now() + ms;
    while (this.received().length < n) {
      if (Date.now() > deadline)
        throw new Error(`expected ${n} feedback bytes, got ${this.received().toString('hex')}`);
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

/** A config file (in `dir`) that lets the bridge open the pty pairs made in `dir`: by default it
 * opens serial ports only (docs/bridge.md: Device paths), so a test adds its own folder through
 * bridge.allowedPaths, as an operator would. `bridge` adds other bridge settings. */
export function ptyConfigFile(dir: string, bridge: Record<string, unknown> = {}): string {
  const file = join(dir, 'gatehouse-pty.json');
  writeFileSync(file, JSON.stringify({ bridge: { allowedPaths: [`${dir}/`], ...bridge } }));
  return file;
}

/** Real frames of each framing (firmware-bridge/framing/encode.ts, which the simulator plays;
 * test/bridge/framing.test.ts checks the parsers against frames written out by hand). */
export const rdm6300 = (data: string): Buffer => encodeScan('rdm6300', data).frame;
export const id12 = (data: string): Buffer => encodeScan('id12', data).frame;
/** Wiegand 26 as the converter sends it: the 26 bits as hex text, no line end. */
export const wiegand26 = (facility: number, card: number): string =>
  encodeScan('wiegand26', `${facility}:${card}`).frame.toString('latin1').trimEnd();
