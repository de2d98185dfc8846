import type { DenialReason, ReasonDetail } from './engine.js';
import { DENIAL_REASONS, REASON_DETAILS } from '../resources/access-events.js';

// The decisions of the last `capacity` scans that carried a request id, so a retry with the same
// id (QoS 1 redelivery, a gateway retrying) is answered with the first decision and writes no
// second event (docs/engine.md: idempotency). Kept in typed arrays, not as objects: every scan
// adds an entry that lives for minutes, and a young object that lives is copied by each
// scavenge it survives. Outcome objects and their promises held here made the scavenges at
// 12k scans/s take 4-20 ms (bench:mqtt, open-loop p99 18-24 ms), and so did Maps: a growing
// Map reallocates its table, which then survives scavenges too. So the index is an
// open-addressing hash table in an Int32Array (linear probing, deletion by backward shift), and
// what a scan leaves on the heap is its request id string (JSON.parse interns short ones). A scan
// still being decided is held as its promise until it settles. Entries are per scope: a reader
// (its id) or, for scans with no reader, an access point (minus its id).

export interface RememberedOutcome {
  uuid: string;
  granted: boolean;
  reason: DenialReason | null;
  reasonDetail: ReasonDetail | null;
  accessPointId: number;
  zoneId: number | null;
  attendeeId: number | null;
  decidedAtMs: number;
}

export type Evicted = { projectId: number; scope: number; requestId: string };

const NONE = -1;

export class RecentOutcomes<T> {
  /** Open addressing: 0 empty, else slot + 1; at most half full. */
  readonly #table: Int32Array;
  readonly #mask: number;
  readonly #hash: Int32Array;
  readonly #pending: (Promise<T> | undefined)[];
  /** Per slot: the entry's sequence number (0: free), scope and request id. */
  readonly #sequence: Float64Array;
  readonly #scope: Int32Array;
  readonly #project: Int32Array;
  readonly #requestId: (string | undefined)[];
  readonly #settled: Uint8Array;
  readonly #granted: Uint8Array;
  readonly #reason: Uint8Array;
  readonly #detail: Uint8Array;
  readonly #accessPoint: Int32Array;
  readonly #zone: Int32Array;
  readonly #attendee: Int32Array;
  readonly #decidedAt: Float64Array;
  readonly #uuid: Uint8Array;
  #next = 1;

  constructor(
    readonly capacity: number,
    /** Rebuilds the outcome of a settled entry, as replayed. */
    private readonly rebuild: (remembered: RememberedOutcome) => T,
  ) {
    let size = 16;
    while (size < capacity * 2) size *= 2;
    this.#table = new Int32Array(size);
    this.#mask = size - 1;
    this.#hash = new Int32Array(capacity);
    this.#pending = new Array<Promise<T> | undefined>(capacity);
    this.#sequence = new Float64Array(capacity);
    this.#scope = new Int32Array(capacity);
    this.#project = new Int32Array(capacity);
    this.#requestId = new Array<string | undefined>(capacity);
    this.#settled = new Uint8Array(capacity);
    this.#granted = new Uint8Array(capacity);
    this.#reason = new Uint8Array(capacity);
    this.#detail = new Uint8Array(capacity);
    this.#accessPoint = new Int32Array(capacity);
    this.#zone = new Int32Array(capacity);
    this.#attendee = new Int32Array(capacity);
    this.#decidedAt = new Float64Array(capacity);
    this.#uuid = new Uint8Array(capacity * 16);
  }

  /** The decision remembered for this request: the pending promise,
   * or the settled outcome rebuilt; undefined when not remembered. */
  find(scope: number, requestId: string): Promise<T> | T | undefined {
    const slot = this.#lookup(scope, requestId, hashOf(scope, requestId));
    if (slot < 0) return undefined;
    if (!this.#settled[slot]) return this.#pending[slot];
    const zone = this.#zone[slot]!;
    const attendee = this.#attendee[slot]!;
    const reason = this.#reason[slot]!;
    const detail = this.#detail[slot]!;
    return this.rebuild({
      uuid: uuidText(this.#uuid, slot * 16),
      granted: this.#granted[slot] === 1,
      reason: reason === 0 ? null : DENIAL_REASONS[reason - 1]!,
      reasonDetail: detail === 0 ? null : REASON_DETAILS[detail - 1]!,
      accessPointId: this.#accessPoint[slot]!,
      zoneId: zone === NONE ? null : zone,
      attendeeId: attendee === NONE ? null : attendee,
      decidedAtMs: this.#decidedAt[slot]!,
    });
  }

  /**
   * Remembers a scan being decided: `settle` its outcome when it is durable, `forget` it when it
   * failed (a retry is then decided anew). Answers the oldest entry when it made room for this one.
   */
  remember(
    projectId: number,
    scope: number,
    requestId: string,
    pending: Promise<T>,
  ): { slot: number; sequence: number; evicted: Evicted | null } {
    const sequence = this.#next++;
    const slot = sequence % this.capacity;
    let evicted: Evicted | null = null;
    if (this.#sequence[slot]! !== 0) {
      const old = { projectId: this.#project[slot]!, scope: this.#scope[slot]!, requestId: this.#requestId[slot]! };
      this.#drop(slot);
      evicted = old;
    }
    this.#sequence[slot] = sequence;
    this.#scope[slot] = scope;
    this.#project[slot] = projectId;
    this.#requestId[slot] = requestId;
    this.#settled[slot] = 0;
    this.#pending[slot] = pending;
    const hash = hashOf(scope, requestId);
    this.#hash[slot] = hash;
    let i = hash & this.#mask;
    while (this.#table[i] !== 0) i = (i + 1) & this.#mask;
    this.#table[i] = slot + 1;
    return { slot, sequence, evicted };
  }

  settle(slot: number, sequence: number, outcome: RememberedOutcome): void {
    if (this.#sequence[slot] !== sequence) return; // evicted meanwhile
    this.#pending[slot] = undefined;
    this.#settled[slot] = 1;
    this.#granted[slot] = outcome.granted ? 1 : 0;
    this.#reason[slot] = outcome.reason === null ? 0 : DENIAL_REASONS.indexOf(outcome.reason) + 1;
    this.#detail[slot] = outcome.reasonDetail === null ? 0 : REASON_DETAILS.indexOf(outcome.reasonDetail) + 1;
    this.#accessPoint[slot] = outcome.accessPointId;
    this.#zone[slot] = outcome.zoneId ?? NONE;
    this.#attendee[slot] = outcome.attendeeId ?? NONE;
    this.#decidedAt[slot] = outcome.decidedAtMs;
    uuidBytes(outcome.uuid, this.#uuid, slot * 16);
  }

  forget(slot: number, sequence: number): void {
    if (this.#sequence[slot] === sequence) this.#drop(slot);
  }

  #lookup(scope: number, requestId: string, hash: number): number {
    const table = this.#table;
    for (let i = hash & this.#mask; table[i] !== 0; i = (i + 1) & this.#mask) {
      const slot = table[i]! - 1;
      if (this.#hash[slot] === hash && this.#scope[slot] === scope && this.#requestId[slot] === requestId) return slot;
    }
    return -1;
  }

  #drop(slot: number): void {
    const table = this.#table;
    const mask = this.#mask;
    let i = this.#hash[slot]! & mask;
    while (table[i] !== slot + 1) i = (i + 1) & mask;
    // Backward-shift deletion: pull later entries of the probe run into the hole when their home allows.
    for (let j = (i + 1) & mask; table[j] !== 0; j = (j + 1) & mask) {
      const home = this.#hash[table[j]! - 1]! & mask;
      if (i <= j ? home <= i || home > j : home <= i && home > j) {
        table[i] = table[j]!;
        i = j;
      }
    }
    table[i] = 0;
    this.#pending[slot] = undefined;
    this.#sequence[slot] = 0;
    this.#requestId[slot] = undefined;
  }
}

/** FNV-1a over the request id's UTF-16 code units, seeded with the scope. */
function hashOf(scope: number, requestId: string): number {
  let h = (0x811c9dc5 ^ scope) >>> 0;
  for (let i = 0; i < requestId.length; i++) h = Math.imul(h ^ requestId.charCodeAt(i), 0x01000193);
  return h | 0;
}

/** The 16 bytes of a UUID's 32 hex digits (dashes skipped). */
function uuidBytes(uuid: string, into: Uint8Array, at: number): void {
  let byte = 0;
  for (let i = 0; i < uuid.length && byte < 16; i++) {
    const high = hexValue(uuid.charCodeAt(i));
    if (high < 0) continue;
    into[at + byte++] = (high << 4) | hexValue(uuid.charCodeAt(++i));
  }
}

function hexValue(code: number): number {
  if (code >= 48 && code <= 57) return code - 48;
  if (code >= 97 && code <= 102) return code - 87;
  if (code >= 65 && code <= 70) return code - 55;
  return -1;
}

function uuidText(bytes: Uint8Array, at: number): string {
  const hex = Buffer.from(bytes.buffer, bytes.byteOffset + at, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
