import type { Clock } from '../src/clock.js';
import { iso } from '../src/clock.js';
import type { Logger } from '../src/logger.js';
import { createParser, type SerialFraming } from './framing/index.js';
import { keyboardDecoder, posScannerDecoder } from './hid/index.js';
import type { ScanRead } from './scan-read.js';
import type { OpenedPort, Transport } from './transport.js';
import type { BridgeDevice, BridgeDeviceState } from '../src/resources/bridge-device.js';

// One device plugged into the box, while it is enabled: find it, open it, turn its bytes into
// frames, each good frame (not a repeat within debounce_ms) into a decision, and the decision
// into the grant or deny bytes written back. When it goes away it is marked disconnected at
// once, what it was in the middle of sending is dropped (counted, never a scan, never glued onto
// the next frame), and it is looked for again with back-off until it is back (docs/bridge.md).

export type Decide = (device: BridgeDevice, value: string) => Promise<{ granted: boolean } | { refused: string }>;

export interface RunnerDeps {
  transport: Transport;
  decide: Decide;
  clock: Clock;
  log: Logger;
  reopen: { minMs: number; maxMs: number };
  /** Bad frames are logged at most once per this many ms per device (the rest counted). */
  badFrameLogIntervalMs: number;
  connected(device: BridgeDevice, state: BridgeDeviceState): void;
  disconnected(device: BridgeDevice, state: BridgeDeviceState): void;
}

interface Decoder {
  push(chunk: Buffer): ScanRead[];
  reset(): ScanRead[];
}

function decoderFor(device: BridgeDevice): Decoder {
  if (device.framing === 'hid_pos') return posScannerDecoder();
  if (device.framing === 'hid_keyboard')
    return keyboardDecoder({ layout: device.keyboard_layout, ...(device.keymap ? { keymap: device.keymap } : {}) });
  return createParser(device.framing as SerialFraming);
}

export class DeviceRunner {
  readonly #decoder: Decoder;
  readonly #log: Logger;
  /** Credential → when this device last sent it (debounce). */
  readonly #recent = new Map<string, number>();
  #port: OpenedPort | null = null;
  #timer: NodeJS.Timeout | null = null;
  #delay: number;
  #stopped = false;
  #absentSaid: string | null = null;
  #lastBadLog = 0;
  #unloggedBad = 0;
  readonly #feedback: { grant: Buffer | null; deny: Buffer | null };

  constructor(
    readonly device: BridgeDevice,
    readonly state: BridgeDeviceState,
    private readonly deps: RunnerDeps,
  ) {
    this.#decoder = decoderFor(device);
    this.#log = deps.log.child({ device: device.name, device_id: device.id });
    this.#delay = deps.reopen.minMs;
    const bytes = (hex: string | null) => (hex === null ? null : Buffer.from(hex, 'hex'));
    this.#feedback = { grant: bytes(device.feedback.grant), deny: bytes(device.feedback.deny) };
  }

  start(): void {
    void this.#attempt();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    const port = this.#port;
    this.#port = null;
    if (port) {
      await port.close().catch(() => {});
      this.#lost(null);
    }
  }

  async #attempt(): Promise<void> {
    this.#timer = null;
    if (this.#stopped) return;
    const where = await this.deps.transport.locate(this.device).catch((err: Error) => ({ absent: err.message }));
    if (this.#stopped) return;
    if ('absent' in where) {
      // Said once per absence, not once per retry: an unplugged reader is not a stream of errors.
      if (this.#absentSaid !== where.absent) {
        this.#absentSaid = where.absent;
        this.state.last_error = where.absent;
        this.#log.info({ reason: where.absent }, 'bridge device not present; looking again with back-off');
      }
      this.#retry();
      return;
    }
    try {
      const port = await this.deps.transport.open(where.path, this.device, {
        data: (chunk) => this.#data(chunk),
        closed: (reason) => {
          if (this.#port !== port) return;
          this.#port = null;
          this.#lost(reason);
          this.#retry();
        },
      });
      if (this.#stopped) {
        await port.close().catch(() => {});
        return;
      }
      this.#port = port;
      this.#absentSaid = null;
      this.#delay = this.deps.reopen.minMs;
      Object.assign(this.state, { connected: true, opened_path: port.path, last_error: null });
      this.#log.info({ path: port.path }, 'bridge device connected');
      this.deps.connected(this.device, this.state);
    } catch (err) {
      this.#error(`cannot open ${where.path}: ${(err as Error).message}`);
      this.#retry();
    }
  }

  /** Marked disconnected at once; a frame cut short is dropped and counted. */
  #lost(reason: string | null): void {
    for (const result of this.#decoder.reset()) this.#frame(result);
    this.#recent.clear();
    if (!this.state.connected) return;
    Object.assign(this.state, { connected: false, opened_path: null });
    if (reason !== null) {
      this.state.last_error = reason;
      this.#log.warn({ reason }, 'bridge device went away; reopening with back-off');
    }
    this.deps.disconnected(this.device, this.state);
  }

  #retry(): void {
    if (this.#stopped || this.#timer) return;
    const delay = this.#delay * (0.8 + Math.random() * 0.4);
    this.#delay = Math.min(this.deps.reopen.maxMs, this.#delay * 2);
    this.#timer = setTimeout(() => void this.#attempt(), delay);
  }

  #data(chunk: Buffer): void {
    let results: ScanRead[];
    try {
      results = this.#decoder.push(chunk);
    } catch (err) {
      // The parsers never throw by contract; if one does, the bridge still must not crash.
      this.#error(`parser failed: ${(err as Error).message}`);
      this.#decoder.reset();
      return;
    }
    for (const result of results) this.#frame(result);
  }

  #frame(result: ScanRead): void {
    const now = this.deps.clock.now();
    this.state.frames++;
    this.state.last_frame_at = iso(now);
    if (!result.ok) {
      this.state.bad_frames++;
      this.#badLogged(result.reason, result.detail, now);
      return;
    }
    const last = this.#recent.get(result.value);
    this.#recent.set(result.value, now); // a card held on the reader keeps its window open
    if (last !== undefined && now - last < this.device.debounce_ms) {
      this.state.debounced++;
      return;
    }
    if (this.#recent.size > 10_000) this.#forgetOld(now);
    void this.#scan(result.value, now);
  }

  async #scan(value: string, at: number): Promise<void> {
    const port = this.#port;
    let granted = false;
    try {
      const answer = await this.deps.decide(this.device, value);
      this.state.last_scan_at = iso(at);
      if ('refused' in answer) this.#error(`scan not decided: ${answer.refused}`);
      else granted = answer.granted;
    } catch (err) {
      this.#error(`scan failed: ${(err as Error).message}`);
    }
    const bytes = granted ? this.#feedback.grant : this.#feedback.deny;
    // Only to the port the frame came from: a device re-plugged since then did not ask.
    if (bytes === null || port === null || port !== this.#port) return;
    try {
      await port.write(bytes);
    } catch (err) {
      this.#error(`feedback not written: ${(err as Error).message}`);
    }
  }

  #error(message: string): void {
    this.state.errors++;
    this.state.last_error = message;
    this.#log.warn({ err: message }, 'bridge device error');
  }

  #badLogged(reason: string, detail: string, now: number): void {
    if (now - this.#lastBadLog < this.deps.badFrameLogIntervalMs) {
      this.#unloggedBad++;
      return;
    }
    this.#log.warn({ reason, detail, not_logged_since: this.#unloggedBad }, 'bad frame from bridge device');
    this.#lastBadLog = now;
    this.#unloggedBad = 0;
  }

  #forgetOld(now: number): void {
    for (const [value, at] of this.#recent) if (now - at >= this.device.debounce_ms) this.#recent.delete(value);
  }
}
