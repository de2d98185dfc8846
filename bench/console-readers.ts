import { performance } from 'node:perf_hooks';
import { LeanMqttClient } from './lean-mqtt.js';

// bench:console's readers: the demo venue's own readers, each logged in as a reader does
// (POST readers/login -> staff read the OTP from GET readers/logins -> POST reader-otp/verify ->
// its MQTT credentials), then one MQTT connection each (the lean client of bench/lean-mqtt.ts,
// QoS 1 both ways, so the bench's own CPU stays small next to Chromium's and the appliance's).
//
// The mix a busy venue's gates make, scans paced on the clock:
//   - 95 %: the demo's credentials GH-000001..GH-005000 in turn (GH-000013, blocklisted, left
//     out), a whole pass entering at GATE-IN-1 / GATE-IN-2, the next pass leaving at GATE-OUT-1,
//     and so on: each is granted (no anti-passback denial, as a holder is never scanned in twice
//     running) and the Arena's count climbs to ~5,000 and back every 10 s at 1,000/s.
//   - 5 %: unknown credentials (`UNKNOWN-<n>`) at VIP-1, BACKSTAGE-1 and PRESS-1, denied
//     (invalid_credential): three gates in a permanent spike of denials.
// Markers (`MARK-<n>`, unknown, denied at PRESS-1) go out on top of the mix when asked.

export const A = '/api/v1/projects/default/default';
const ATTENDEES = 5000; // the demo seeder's
const BLOCKLISTED = 13;
export const GRANT_READERS = ['GATE-IN-1', 'GATE-IN-2', 'GATE-OUT-1'] as const;
export const DENY_READERS = ['VIP-1', 'BACKSTAGE-1', 'PRESS-1'] as const;
const MARKER_READER = 'PRESS-1';
export const MARKER_PREFIX = 'MARK-';

interface Reader {
  identifier: string;
  client: LeanMqttClient;
  scans: Buffer;
}

export interface ScanTally {
  sent: number;
  answered: number;
  granted: number;
  denied: number;
  errors: number;
  /** Answers received per 1-s window since the clock's start. */
  perWindow: number[];
  /** Publish -> decision received, ms, of each answered scan. */
  latencies: number[];
}

type Api = <T>(method: string, path: string, body?: unknown) => Promise<T>;

export class VenueReaders {
  readonly #readers = new Map<string, Reader>();
  readonly #inFlight = new Map<string, number>();
  #seq = 0;
  #next = 0; // position in the credential cycle
  #unknown = 0;
  #origin = 0;
  tally: ScanTally = VenueReaders.#emptyTally();

  static #emptyTally(): ScanTally {
    return { sent: 0, answered: 0, granted: 0, denied: 0, errors: 0, perWindow: [], latencies: [] };
  }

  /** Logs each reader in and connects it; `api` is the staff's REST client. */
  async connect(api: Api, apiNoAuth: Api, mqttHost: string): Promise<void> {
    const identifiers = [...GRANT_READERS, ...DENY_READERS];
    for (const reader_identifier of identifiers) await apiNoAuth('POST', `${A}/readers/login`, { reader_identifier });
    const logins = (await api<{ data: { reader_identifier: string; otp: string }[] }>('GET', `${A}/readers/logins`))
      .data;
    for (const identifier of identifiers) {
      const otp = logins.find((l) => l.reader_identifier === identifier)?.otp;
      if (!otp) throw new Error(`no pending login for reader ${identifier}`);
      const { mqtt } = (
        await apiNoAuth<{
          data: {
            mqtt: { port: number; username: string; password: string; scans_topic: string; decisions_topic: string };
          };
        }>('POST', '/api/v1/reader-otp/verify', {
          otp,
          reader_identifier: identifier,
        })
      ).data;
      const client = await LeanMqttClient.connect({
        host: mqttHost,
        port: mqtt.port,
        clientId: `bench-console-${identifier}`,
        username: mqtt.username,
        password: mqtt.password,
      });
      client.onMessage = (_topic, payload) => this.#answer(payload);
      client.onError = () => this.tally.errors++;
      if ((await client.subscribe(mqtt.decisions_topic, 1)) !== 1)
        throw new Error(`reader ${identifier}: subscription to its decisions refused`);
      this.#readers.set(identifier, { identifier, client, scans: Buffer.from(mqtt.scans_topic) });
    }
  }

  /** A new tally whose 1-s windows count from now. */
  resetTally(): ScanTally {
    const done = this.tally;
    this.tally = VenueReaders.#emptyTally();
    this.#origin = performance.now();
    return done;
  }

  get inFlight(): number {
    return this.#inFlight.size;
  }

  /** The next scan of the mix. */
  scan(): void {
    if (this.#seq % 20 === 19) {
      const n = ++this.#unknown;
      this.#publish(DENY_READERS[n % DENY_READERS.length]!, `UNKNOWN-${n}`);
      return;
    }
    const perPass = ATTENDEES - 1;
    const pass = Math.floor(this.#next / perPass);
    const k = this.#next % perPass;
    this.#next++;
    const n = k + 1 >= BLOCKLISTED ? k + 2 : k + 1;
    const credential = `GH-${String(n).padStart(6, '0')}`;
    this.#publish(pass % 2 === 1 ? 'GATE-OUT-1' : GRANT_READERS[k % 2]!, credential);
  }

  /** An unknown credential of its own at the marker's gate; its row shows it as the attendee. */
  marker(n: number): string {
    const credential = `${MARKER_PREFIX}${n}`;
    this.#publish(MARKER_READER, credential);
    return credential;
  }

  async close(): Promise<void> {
    await Promise.all(
      [...this.#readers.values()].map((r) =>
        Promise.race([r.client.end(), new Promise((done) => setTimeout(done, 2000))]).finally(() => r.client.destroy()),
      ),
    );
  }

  #publish(identifier: string, credential: string): void {
    const reader = this.#readers.get(identifier)!;
    const request_id = `c${this.#seq++}`;
    this.#inFlight.set(request_id, performance.now());
    this.tally.sent++;
    reader.client.publish(
      reader.scans,
      `{"request_id":"${request_id}","credential_value":"${credential}","scan_type":"qr"}`,
    );
  }

  #answer(payload: Buffer): void {
    const now = performance.now();
    const answer = JSON.parse(payload.toString('utf8')) as {
      request_id?: string;
      access_granted?: boolean;
      error?: unknown;
    };
    const sentAt = answer.request_id === undefined ? undefined : this.#inFlight.get(answer.request_id);
    if (sentAt === undefined) return;
    this.#inFlight.delete(answer.request_id!);
    const t = this.tally;
    t.answered++;
    if (answer.access_granted === true) t.granted++;
    else if (answer.access_granted === false) t.denied++;
    else t.errors++;
    t.latencies.push(now - sentAt);
    const w = Math.floor((now - this.#origin) / 1000);
    t.perWindow[w] = (t.perWindow[w] ?? 0) + 1;
  }
}
