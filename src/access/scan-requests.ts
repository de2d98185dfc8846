import { iso } from '../clock.js';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import type { DenialReason, ReasonDetail } from './engine.js';
import { RecentOutcomes, type RememberedOutcome } from './recent-outcomes.js';
import { outcome, type ScanOutcome } from './scan-outcome.js';
import type { VenueIndex } from './venue-index.js';

// The request-id table the scan service keeps (docs/engine.md: a scan carrying a
// request_id is decided once). A retry with the same id from the same reader (MQTT QoS 1
// redelivery, a gateway retrying a timed-out POST) gets the first decision back and writes no
// second event: from memory (recent-outcomes.ts) while it is among the last 200,000, else from
// access_events, read only when the id is known to be there (the keys of earlier runs are held
// as a set). A retry arriving while the first is still being written waits for it. The table
// only finds and remembers: the scan service decides a request id it does not find, and hands
// the decision down to be remembered.

/** What names a scan's request id: its sender's id, scoped by the reader (or the access point without one). */
export interface RequestOf {
  projectId: number;
  accessPointId: number;
  readerId?: number | null;
  requestId?: string | null;
}

/** How many request ids are remembered in memory; older ones are found in the event log. */
const REMEMBERED_REQUESTS = 200_000;
/** Request keys of the log held as a set (no outcomes) so a new
 * request id costs no read; past it, every miss reads the log. */
const KNOWN_KEYS_LIMIT = 1_000_000;

export class ScanRequests {
  /** Made on the first scan with a request id (~17 MB of typed arrays a box without them does not need). */
  #recent: RecentOutcomes<ScanOutcome> | null = null;
  /**
   * Request keys in the event log that are not in #recent: loaded at start, and each key #recent
   * forgets. A key in neither is new, so a new request id is decided without reading SQLite
   * (bench:mqtt: that read was 6 % of the server's time per scan). null: more keys than
   * KNOWN_KEYS_LIMIT, and every miss reads the log as before.
   */
  #known: Set<string> | null = null;
  #knownLoaded = false;

  constructor(
    private readonly db: Database,
    private readonly index: VenueIndex,
  ) {}

  /** `r<reader>:<id>` or `ap<access point>:<id>`: what access_events.request_key holds; null without a request id. */
  static requestKey(request: Omit<RequestOf, 'projectId'>): string | null {
    if (request.requestId === undefined || request.requestId === null) return null;
    const scope = request.readerId ? `r${request.readerId}` : `ap${request.accessPointId}`;
    return `${scope}:${request.requestId}`;
  }

  /** A request id is unique per reader, or per access point for scans with no reader: RecentOutcomes' scope. */
  static #scope(request: Omit<RequestOf, 'projectId' | 'requestId'>): number {
    return request.readerId ? request.readerId : -request.accessPointId;
  }

  /**
   * The first decision of this request id: still being made (a promise of it, replayed), made
   * (remembered, or stored by an earlier run); null when the id is new.
   */
  find(request: RequestOf, requestKey: string): Promise<ScanOutcome> | ScanOutcome | null {
    const seen = this.#recentOutcomes().find(ScanRequests.#scope(request), request.requestId!);
    if (seen instanceof Promise) return seen.then((outcome) => ({ ...outcome, replayed: true }));
    if (seen) return seen;
    const known = this.#knownKeys();
    if (known === null || (known.size > 0 && known.has(`${request.projectId}:${requestKey}`)))
      return this.#stored(request.projectId, requestKey);
    return null;
  }

  /**
   * Remembers the decision of a new request id (find() answered null): pending now, made once durable; a failed one is
   * forgotten.
   */
  remember(request: RequestOf, decided: Promise<ScanOutcome>): void {
    const recent = this.#recentOutcomes();
    const { slot, sequence, evicted } = recent.remember(
      request.projectId,
      ScanRequests.#scope(request),
      request.requestId!,
      decided,
    );
    decided.then(
      (o) => recent.settle(slot, sequence, remembered(o)),
      () => recent.forget(slot, sequence), // a failed journal write decided nothing: the retry is decided anew
    );
    if (evicted && this.#known) {
      // Still in the log (or failed: then a read finds nothing, which is right).
      const scopeKey = evicted.scope > 0 ? `r${evicted.scope}` : `ap${-evicted.scope}`;
      this.#known.add(`${evicted.projectId}:${scopeKey}:${evicted.requestId}`);
      if (this.#known.size > KNOWN_KEYS_LIMIT) this.#known = null;
    }
  }

  #recentOutcomes(): RecentOutcomes<ScanOutcome> {
    return (this.#recent ??= new RecentOutcomes<ScanOutcome>(REMEMBERED_REQUESTS, (r) => this.#replay(r)));
  }

  /** Reads the request keys of earlier runs now (at start), so the first scan does not pay for it. */
  loadRequestKeys(): number {
    return this.#knownKeys()?.size ?? -1;
  }

  /** The request keys of earlier runs, read once (at start, or on the first scan with a request id). */
  #knownKeys(): Set<string> | null {
    if (this.#knownLoaded) return this.#known;
    this.#knownLoaded = true;
    const { n } = statement(this.db, 'SELECT count(*) AS n FROM access_events WHERE request_key IS NOT NULL').get() as {
      n: number;
    };
    if (n > KNOWN_KEYS_LIMIT) return (this.#known = null);
    const known = new Set<string>();
    for (const row of statement(
      this.db,
      'SELECT project_id, request_key FROM access_events WHERE request_key IS NOT NULL',
    ).iterate() as Iterable<{ project_id: number; request_key: string }>) {
      known.add(`${row.project_id}:${row.request_key}`);
    }
    return (this.#known = known);
  }

  /** A remembered decision answered again: the attendee as the index has them now. */
  #replay(r: RememberedOutcome): ScanOutcome {
    const entry = r.attendeeId === null ? undefined : this.index.attendees.get(r.attendeeId);
    const attendee = entry ? { id: entry.id, first_name: entry.firstName, last_name: entry.lastName } : null;
    return outcome(
      r.uuid,
      r.granted,
      r.reason,
      r.reasonDetail,
      r.accessPointId,
      r.zoneId,
      r.decidedAtMs,
      iso(r.decidedAtMs),
      attendee,
      true,
    );
  }

  /** The decision stored for this request key by an earlier run (beyond the in-memory window). */
  #stored(projectId: number, requestKey: string): ScanOutcome | null {
    const row = statement(
      this.db,
      'SELECT uuid, granted, reason, reason_detail, access_point_id, access_zone_id, attendee_id, decided_at FROM access_events WHERE project_id = ? AND request_key = ?',
    ).get(projectId, requestKey) as
      | {
          uuid: string;
          granted: number;
          reason: DenialReason | null;
          reason_detail: ReasonDetail | null;
          access_point_id: number;
          access_zone_id: number | null;
          attendee_id: number | null;
          decided_at: string;
        }
      | undefined;
    if (!row) return null;
    const entry = row.attendee_id === null ? undefined : this.index.attendees.get(row.attendee_id);
    const attendee = entry ? { id: entry.id, first_name: entry.firstName, last_name: entry.lastName } : null;
    return outcome(
      row.uuid,
      row.granted === 1,
      row.reason,
      row.reason_detail,
      row.access_point_id,
      row.access_zone_id,
      Date.parse(row.decided_at),
      row.decided_at,
      attendee,
      true,
    );
  }
}

const remembered = (o: ScanOutcome): RememberedOutcome => ({
  uuid: o.uuid,
  granted: o.granted,
  reason: o.reason,
  reasonDetail: o.reasonDetail,
  accessPointId: o.accessPointId,
  zoneId: o.zoneId,
  attendeeId: o.answer.attendee?.id ?? null,
  decidedAtMs: o.decidedAtMs,
});
