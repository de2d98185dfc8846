import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { delimiter, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import type { SerialPort } from 'serialport';
import { CliError, usage } from '../src/cli/commands.js';
import type { Config } from '../src/config/schema.js';
import { SIMULATOR_DIR } from '../src/devices/bridge-paths.js';
import { EncodeError, type EncodedScan as Scan, encodeScan as encode } from './framing/encode.js';
import { SERIAL_FRAMINGS, type SerialFraming } from './framing/index.js';

// `gatehouse bridge simulate` (docs/bridge.md): a reader "plugged in" without hardware. socat
// makes a pseudo-terminal pair; one end is registered as a bridge device on a running appliance
// over REST, real frames of the chosen framing go into the other, and each decision is read back
// from the feedback bytes (grant 06, deny 15), as a reader's LED would show it. The pair is made
// in the appliance's data directory (bridge-simulator/), the one place besides the serial ports
// that the bridge opens without bridge.allowedPaths (src/devices/bridge-paths.ts): only the
// appliance's own user can make files there.

const GRANT = 0x06;
const DENY = 0x15;
const CONNECT_MS = 10_000;
const ANSWER_MS = 3000;

const options = {
  framing: { type: 'string' },
  url: { type: 'string' },
  token: { type: 'string' },
  email: { type: 'string' },
  password: { type: 'string' },
  project: { type: 'string' },
  reader: { type: 'string' },
  'access-point': { type: 'string' },
  values: { type: 'string' },
  'interval-ms': { type: 'string' },
  keep: { type: 'boolean' },
} as const;

export interface SimulationSummary {
  device_id: number;
  path: string;
  scans: number;
  granted: number;
  denied: number;
  unanswered: number;
}

/** encode(), its refusal as the CLI's error naming the flag. */
function encodeScan(framing: SerialFraming, raw: string): Scan {
  try {
    return encode(framing, raw);
  } catch (err) {
    if (err instanceof EncodeError) throw new CliError(`--values: ${err.message}`);
    throw err;
  }
}

/** The appliance's REST API, each failure a CliError with the answer's status and message. */
class Api {
  constructor(
    readonly base: string,
    public token: string | null,
  ) {}

  async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await this.#send(method, path, body);
    // Rate limited or the store busy: wait as told, once (so the cleanup's DELETE still happens).
    const wait = Number(res.headers.get('retry-after'));
    if ((res.status === 429 || res.status === 503) && wait > 0 && wait <= 60) {
      process.stderr.write(`gatehouse: ${method} ${path} answered ${res.status}; trying again in ${wait} s\n`);
      await sleep(wait * 1000);
      return this.#read<T>(method, path, await this.#send(method, path, body));
    }
    return this.#read<T>(method, path, res);
  }

  async #send(method: string, path: string, body: unknown): Promise<Response> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    try {
      return await fetch(this.base + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(10_000),
      });
    } catch (err) {
      const cause = (err as Error & { cause?: Error }).cause;
      throw new CliError(
        `cannot reach the appliance at ${this.base} (is it running? --url): ${cause?.message ?? (err as Error).message}`,
      );
    }
  }

  async #read<T>(method: string, path: string, res: Response): Promise<T> {
    const text = await res.text();
    let parsed: { message?: string; errors?: Record<string, string[]> } | undefined;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    if (!res.ok) {
      // A 422 message names the first problem only ("(and N more errors)"): then all of them.
      const all = parsed?.errors && Object.keys(parsed.errors).length > 1 ? ` ${JSON.stringify(parsed.errors)}` : '';
      throw new CliError(
        `${method} ${path} answered ${res.status}: ${parsed?.message ?? (text.slice(0, 200) || res.statusText)}${all}`,
      );
    }
    return parsed as T;
  }
}

/** The reader's side of a socat pty pair, open with serialport; what the bridge writes back is kept. */
class ReaderEnd {
  #socat: ChildProcess | null = null;
  #port: SerialPort | null = null;
  #answer: number[] = [];
  /** The folder of this run's pair, made by open(). */
  dir: string | null = null;

  /** `dataDir`: the appliance's data directory (the same config as the appliance's). */
  constructor(readonly dataDir: string) {}

  get device(): string {
    return join(this.dir!, 'reader');
  }

  async open(socat: string): Promise<void> {
    this.dir = simulatorFolder(this.dataDir);
    const line = join(this.dir, 'line');
    let stderr = '';
    const proc = spawn(socat, [`pty,raw,echo=0,link=${this.device}`, `pty,raw,echo=0,link=${line}`], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    this.#socat = proc;
    proc.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    const spawned = { error: '' };
    proc.on('error', (err) => (spawned.error = err.message));
    const deadline = Date.now() + CONNECT_MS;
    while (!(existsSync(this.device) && existsSync(line))) {
      if (spawned.error || proc.exitCode !== null)
        throw new CliError(`socat made no pty pair: ${spawned.error || stderr.trim()}`);
      if (Date.now() > deadline)
        throw new CliError(`socat made no pty pair in ${this.dir} within ${CONNECT_MS / 1000} s`);
      await sleep(20);
    }
    const { SerialPort } = await import('serialport'); // loaded on use, like serial-transport.ts
    const port = new SerialPort({ path: line, baudRate: 9600, autoOpen: false });
    await new Promise<void>((resolve, reject) =>
      port.open((err) => (err ? reject(new CliError(`cannot open ${line}: ${err.message}`)) : resolve())),
    );
    port.on('data', (chunk: Buffer) => this.#answer.push(...chunk));
    port.on('error', () => {});
    this.#port = port;
  }

  /** Sends one frame, answers the first byte written back within `ms` (null: none). */
  async scan(frame: Buffer, ms: number, signal: AbortSignal): Promise<number | null> {
    const port = this.#port!;
    this.#answer = []; // a late answer to the previous frame is not this one's
    await new Promise<void>((resolve, reject) =>
      port.write(frame, (err) => (err ? reject(err) : port.drain((e) => (e ? reject(e) : resolve())))),
    );
    const deadline = Date.now() + ms;
    while (this.#answer.length === 0 && Date.now() < deadline && !signal.aborted) await sleep(10);
    return this.#answer[0] ?? null;
  }

  async close(): Promise<void> {
    const port = this.#port;
    this.#port = null;
    if (port?.isOpen) await new Promise<void>((resolve) => port.close(() => resolve()));
    const socat = this.#socat;
    this.#socat = null;
    if (socat && socat.exitCode === null && socat.signalCode === null) {
      await new Promise<void>((resolve) => {
        socat.once('exit', () => resolve());
        socat.kill('SIGTERM');
      });
    }
  }
}

/** A fresh folder for one run's pty pair under <dataDir>/bridge-simulator/ (0700), where the appliance opens it. */
function simulatorFolder(dataDir: string): string {
  const data = resolve(dataDir);
  if (!existsSync(data)) {
    throw new CliError(
      `the appliance's data directory ${data} is not here: run the simulator on the appliance's box with the appliance's config (dataDir, GATEHOUSE_DATA_DIR); the bridge opens the simulator's pty only under <dataDir>/${SIMULATOR_DIR}/`,
    );
  }
  const parent = join(data, SIMULATOR_DIR);
  mkdirSync(parent, { recursive: true, mode: 0o700 });
  return mkdtempSync(join(parent, 'run-'));
}

function findSocat(): string {
  const found = (process.env.PATH ?? '')
    .split(delimiter)
    .map((dir) => join(dir, 'socat'))
    .find((p) => p.startsWith('/') && existsSync(p));
  if (!found)
    throw new CliError(
      'socat is not on PATH: install socat (e.g. apt-get install socat); the simulator makes its pseudo-terminal pair with it',
    );
  return found;
}

const list = <T>(body: { data: T[] }) => body.data;

/** `gatehouse bridge simulate ...`: plays the scans and answers what to print as JSON. */
export async function runSimulator(
  args: string[],
  config: Readonly<Config>,
  print: (line: string) => void = (l) => process.stdout.write(`${l}\n`),
): Promise<SimulationSummary> {
  const { values: o, positionals } = parseArgs({ args, options, allowPositionals: true, strict: true });
  if (positionals.join(' ') !== 'simulate')
    throw new CliError(`unknown command: bridge ${positionals.join(' ')}\n${usage}`);
  const framing = o.framing as SerialFraming;
  if (!SERIAL_FRAMINGS.includes(framing))
    throw new CliError(
      `--framing must be one of ${SERIAL_FRAMINGS.join(', ')}${o.framing ? ` (not ${o.framing})` : ''}`,
    );
  const given = o.values?.split(',').map((v) => encodeScan(framing, v.trim()));
  const intervalMs = Number(o['interval-ms'] ?? 1000);
  if (!Number.isInteger(intervalMs) || intervalMs < 0)
    throw new CliError('--interval-ms must be a whole number of milliseconds');
  const [team, slug, extra] = (o.project ?? 'default/default').split('/');
  if (!team || !slug || extra !== undefined) throw new CliError(`--project ${o.project} must be written TEAM/PROJECT`);
  const url = o.url ?? `http://localhost:${config.http.port}`;
  if (!URL.canParse(url)) throw new CliError(`--url ${url} is not a URL`);
  if ((o.email === undefined) !== (o.password === undefined)) throw new CliError('--email and --password go together');
  // Flags before the environment: --email and --password win over a GATEHOUSE_TOKEN left exported.
  const token = o.token ?? (o.email ? null : (process.env.GATEHOUSE_TOKEN ?? null));
  if (!token && !o.email)
    throw new CliError('a token is needed: --token T (or GATEHOUSE_TOKEN), or --email E --password P');
  const socat = findSocat();

  const api = new Api(url.replace(/\/+$/, ''), token);
  const P = `/api/v1/projects/${encodeURIComponent(team)}/${encodeURIComponent(slug)}`;
  let ownToken = false;
  if (!token) {
    const made = await api.call<{ token: string }>('POST', '/api/v1/auth/token', {
      email: o.email,
      password: o.password,
      device_name: 'gatehouse bridge simulate',
    });
    api.token = made.token;
    ownToken = true;
  }
  const stop = new AbortController();
  const interrupt = () => stop.abort();
  process.once('SIGINT', interrupt); // Ctrl-C ends the run, and the cleanup still happens
  const reader = o.reader ?? `SIM-${framing}`;
  const end = new ReaderEnd(config.dataDir);
  let deviceId: number | null = null;
  try {
    const accessPointId = await pickAccessPoint(api, P, `${team}/${slug}`, o['access-point']);
    const scans = given ?? (await defaultScans(api, P, framing));
    await end.open(socat);
    const body = {
      name: `simulator ${reader} ${process.pid}`.slice(0, 100),
      path: end.device,
      reader_identifier: reader,
      access_point_id: accessPointId,
      framing,
      feedback: { grant: '06', deny: '15' },
      debounce_ms: 0,
    };
    deviceId = await api.call<{ data: { id: number } }>('POST', `${P}/bridge/devices`, body).then(
      (made) => made.data.id,
      (err: Error) => {
        // The appliance runs with another data directory than the one this command was given.
        if (/answered 422: The path is not a serial port/.test(err.message))
          throw new CliError(
            `${err.message} The appliance does not use ${resolve(end.dataDir)} as its data directory: run the simulator with its config (dataDir, GATEHOUSE_DATA_DIR).`,
          );
        throw err;
      },
    );
    await connected(api, `${P}/bridge/devices/${deviceId}`, end.device, stop.signal);

    const summary: SimulationSummary = {
      device_id: deviceId,
      path: end.device,
      scans: 0,
      granted: 0,
      denied: 0,
      unanswered: 0,
    };
    const width = Math.max(...scans.map((s) => s.value.length));
    for (const [i, scan] of scans.entries()) {
      if (stop.signal.aborted) break;
      if (i > 0) await sleep(intervalMs, undefined, { signal: stop.signal }).catch(() => {});
      if (stop.signal.aborted) break;
      const answer = await end.scan(scan.frame, ANSWER_MS, stop.signal);
      summary.scans++;
      const said =
        answer === GRANT
          ? 'granted'
          : answer === DENY
            ? 'denied'
            : answer === null
              ? 'no answer'
              : `unexpected answer 0x${answer.toString(16).padStart(2, '0')}`;
      if (answer === GRANT) summary.granted++;
      else if (answer === DENY) summary.denied++;
      else summary.unanswered++;
      print(`${scan.value.padEnd(width)}  ${said}`);
    }
    return summary;
  } finally {
    process.removeListener('SIGINT', interrupt);
    if (deviceId !== null && !o.keep) {
      try {
        await api.call('DELETE', `${P}/bridge/devices/${deviceId}`);
      } catch (err) {
        process.stderr.write(`gatehouse: bridge device ${deviceId} not deleted: ${(err as Error).message}\n`);
      }
    }
    try {
      await end.close();
    } catch (err) {
      process.stderr.write(`gatehouse: socat not stopped: ${(err as Error).message}\n`);
    }
    if (end.dir) rmSync(end.dir, { recursive: true, force: true });
    if (ownToken) await api.call('DELETE', '/api/v1/auth/token').catch(() => {}); // the token made for this run only
  }
}

async function pickAccessPoint(api: Api, P: string, project: string, given: string | undefined): Promise<number> {
  if (given !== undefined) {
    if (!/^\d+$/.test(given)) throw new CliError(`--access-point ${given} must be an access point id`);
    return (await api.call<{ data: { id: number } }>('GET', `${P}/access-points/${given}`)).data.id;
  }
  const first = list(await api.call<{ data: { id: number }[] }>('GET', `${P}/access-points?per_page=1`))[0];
  if (!first)
    throw new CliError(
      `the project ${project} has no access points: run \`npm run demo\` first, or name one with --access-point`,
    );
  return first.id;
}

/** When --values is not given: what each framing can carry that the demo venue (or any) decides. */
async function defaultScans(api: Api, P: string, framing: SerialFraming): Promise<Scan[]> {
  if (framing === 'rdm6300' || framing === 'id12')
    return ['0000000001', '62E3086CED'].map((v) => encodeScan(framing, v));
  if (framing !== 'line') return ['123:45678', '1:1'].map((v) => encodeScan(framing, v));
  const values: string[] = [];
  for (const attendee of list(await api.call<{ data: { id: number }[] }>('GET', `${P}/attendees?per_page=3`))) {
    const credentials = list(
      await api.call<{ data: { value: string; status: string }[] }>('GET', `${P}/attendees/${attendee.id}/credentials`),
    );
    const active = credentials.find((c) => c.status === 'active');
    if (active) values.push(active.value);
  }
  return [...values, 'SIM-UNKNOWN'].map((v) => encodeScan(framing, v));
}

/** Waits until the appliance has the pty open; the bridge reports why not in last_error. */
async function connected(api: Api, path: string, device: string, signal: AbortSignal): Promise<void> {
  const deadline = Date.now() + CONNECT_MS;
  let delay = 100;
  for (;;) {
    const { data } = await api.call<{ data: { connected: boolean; last_error: string | null } }>('GET', path);
    if (data.connected) return;
    if (signal.aborted) throw new CliError('interrupted before the appliance opened the device');
    if (Date.now() > deadline) {
      const why = data.last_error ? ` (last_error: ${data.last_error})` : '';
      throw new CliError(
        `the appliance did not open ${device} within ${CONNECT_MS / 1000} s${why}; it must run on this machine with the bridge on (bridge.enabled)`,
      );
    }
    await sleep(delay);
    delay = Math.min(1000, delay * 2); // a dozen requests in all, well inside the standard rate limit
  }
}
