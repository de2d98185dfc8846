import type { Clock } from '../clock.js';
import { iso } from '../clock.js';
import type { EventBus } from '../events/bus.js';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import { JOURNAL_WRITE, PENDING_ENTRY, type AnswerDeadlines } from './answer-deadlines.js';
import type { AccessEngine, DenialReason } from './engine.js';
import { eventId } from './event-id.js';
import type { AccessEventLog } from './event-log.js';
import { RecentOutcomes, type RememberedOutcome } from './recent-outcomes.js';
import type { VenueIndex } from './venue-index.js';

// One command path for every transport (STYLE): decide -> persist -> announce -> answer.
// The decision is made at once, in memory; its access event joins the current group commit
// (access/event-log.ts); only once that is in the journal is the decision announced on the bus
// and answered. A scan carrying a request_id is decided once: a retry with the same id (MQTT
// QoS 1 redelivery, a gateway retrying a timed-out POST) gets the first decision back and
// writes no second event (docs/engine.md).

export type ScanSource = 'mqtt' | 'webhook' | 'bridge' | 'api';

export interface ScanRequest {
  projectId: number;
  accessPointId: number;
  readerId?: number | null;
  credentialValue: string;
  scannedAt?: number;
  source: ScanSource;
  /** The sender's id for this scan, unique per reader (or per access point without a reader). */
  requestId?: string | null;
  /** The transport's ticket in `deadlines` for this scan (answer-deadlines.ts): told what the scan waits on. */
  deadline?: number;
}

export interface AnswerAttendee {
  id: number;
  first_name: string;
  last_name: string;
}

export interface ScanAnswer {
  success: true;
  access_granted: boolean;
  reason?: DenialReason;
  attendee: AnswerAttendee | null;
}

export interface ScanOutcome {
  uuid: string;
  granted: boolean;
  reason: DenialReason | null;
  accessPointId: number;
  zoneId: number | null;
  decidedAt: string;
  decidedAtMs: number;
  /** true when this is the stored decision of an earlier scan with the same request_id. */
  replayed: boolean;
  answer: ScanAnswer;
}

/** How many request ids are remembered in memory; older ones are found in the event log. */
const REMEMBERED_REQUESTS = 200_000;
/** Request keys of the log held as a set (no outcomes) so a new request id costs no read; past it, every miss reads the log. */
const KNOWN_KEYS_LIMIT = 1_000_000;

export class ScanService {
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
    private readonly clock: Clock,
    private readonly bus: EventBus,
    private readonly engine: AccessEngine,
    private readonly index: VenueIndex,
    private readonly eventLog: AccessEventLog,
    /** Where transports open a ticket per scan they wait on, so none waits past the bound (issue 22). */
    readonly deadlines: AnswerDeadlines | null = null,
  ) {}

  /** Resolves once every scan answered so far is in access_events (for readers of that table). */
  settled(): Promise<void> {
    return this.eventLog.settled();
  }

  /** settled(), waiting at most ms: false when access_events is still behind then. */
  async settledWithin(ms: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
    try {
      return await Promise.race([this.settled().then(() => true as const), timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Group-commit figures: batches committed and events in them. */
  get eventLogStats(): { batches: number; events: number } {
    return this.eventLog.stats;
  }

  static requestKey(request: Pick<ScanRequest, 'readerId' | 'accessPointId' | 'requestId'>): string | null {
    if (request.requestId === undefined || request.requestId === null) return null;
    const scope = request.readerId ? `r${request.readerId}` : `ap${request.accessPointId}`;
    return `${scope}:${request.requestId}`;
  }

  /** A request id is unique per reader, or per access point for scans with no reader: RecentOutcomes' scope. */
  static #scope(request: Pick<ScanRequest, 'readerId' | 'accessPointId'>): number {
    return request.readerId ? request.readerId : -request.accessPointId;
  }

  /** Decides, makes the access event durable, announces it, and answers (ScanError when the access point cannot decide). */
  scan(request: ScanRequest): Promise<ScanOutcome> {
    const requestKey = ScanService.requestKey(request);
    if (requestKey === null) return this.#decide(request, null);
    const requestId = request.requestId!;
    const scope = ScanService.#scope(request);
    const recent = (this.#recent ??= new RecentOutcomes<ScanOutcome>(REMEMBERED_REQUESTS, (r) => this.#replay(r)));
    const seen = recent.find(scope, requestId);
    if (seen instanceof Promise) {
      if (request.deadline) this.deadlines?.waitingOn(request.deadline, PENDING_ENTRY);
      return seen.then((outcome) => ({ ...outcome, replayed: true }));
    }
    if (seen) return Promise.resolve(seen);
    const known = this.#knownKeys();
    if (known === null || (known.size > 0 && known.has(`${request.projectId}:${requestKey}`))) {
      const stored = this.#stored(request.projectId, requestKey);
      if (stored) return Promise.resolve(stored);
    }
    const outcome = this.#decide(request, requestKey);
    const { slot, sequence, evicted } = recent.remember(request.projectId, scope, requestId, outcome);
    outcome.then(
      (o) => recent.settle(slot, sequence, remembered(o)),
      () => recent.forget(slot, sequence), // a failed journal write decided nothing: the retry is decided anew
    );
    if (evicted && this.#known) {
      // Still in the log (or failed: then a read finds nothing, which is right).
      const scopeKey = evicted.scope > 0 ? `r${evicted.scope}` : `ap${-evicted.scope}`;
      this.#known.add(`${evicted.projectId}:${scopeKey}:${evicted.requestId}`);
      if (this.#known.size > KNOWN_KEYS_LIMIT) this.#known = null;
    }
    return outcome;
  }

  /** Reads the request keys of earlier runs now (at start), so the first scan does not pay for it. */
  loadRequestKeys(): number {
    return this.#knownKeys()?.size ?? -1;
  }

  /** The request keys of earlier runs, read once (at start, or on the first scan with a request id). */
  #knownKeys(): Set<string> | null {
    if (this.#knownLoaded) return this.#known;
    this.#knownLoaded = true;
    const { n } = statement(this.db, 'SELECT count(*) AS n FROM access_events WHERE request_key IS NOT NULL').get() as { n: number };
    if (n > KNOWN_KEYS_LIMIT) return (this.#known = null);
    const known = new Set<string>();
    for (const row of statement(this.db, 'SELECT project_id, request_key FROM access_events WHERE request_key IS NOT NULL').iterate() as Iterable<{ project_id: number; request_key: string }>) {
      known.add(`${row.project_id}:${row.request_key}`);
    }
    return (this.#known = known);
  }

  async #decide(request: ScanRequest, requestKey: string | null): Promise<ScanOutcome> {
    const now = this.clock.now();
    const scannedAt = request.scannedAt ?? now;
    const decision = this.engine.decide({ projectId: request.projectId, accessPointId: request.accessPointId, credentialValue: request.credentialValue, at: scannedAt });
    const uuid = eventId(now); // time-ordered: the uuid index grows at its end, like the log
    const decidedAt = iso(now);
    const timestamp = scannedAt === now ? decidedAt : iso(scannedAt);
    if (request.deadline) this.deadlines?.waitingOn(request.deadline, JOURNAL_WRITE);
    try {
      await this.eventLog.append({
        uuid,
        projectId: request.projectId,
        accessPointId: request.accessPointId,
        zoneId: decision.zoneId,
        readerId: request.readerId ?? null,
        credentialId: decision.credential?.id ?? null,
        credentialValue: request.credentialValue,
        attendeeId: decision.attendee?.id ?? null,
        granted: decision.granted,
        reason: decision.granted ? null : decision.reason,
        movement: decision.granted ? decision.movement : null,
        counted: decision.granted && decision.counted,
        fromZoneId: decision.granted ? decision.fromZoneId : null,
        scannedAt: timestamp,
        decidedAt,
        source: request.source,
        requestKey,
      });
    } catch (err) {
      this.engine.undo(decision);
      throw err;
    }
    if (decision.granted) {
      this.bus.emit('AccessGranted', {
        projectId: request.projectId,
        payload: {
          attendee_id: decision.attendee.id,
          attendee: { first_name: decision.attendee.firstName, last_name: decision.attendee.lastName },
          access_point_id: request.accessPointId,
          access_zone_id: decision.zoneId,
          credential_id: decision.credential.id,
          timestamp,
        },
      });
    } else {
      this.bus.emit('AccessDenied', {
        projectId: request.projectId,
        payload: { credential_value: request.credentialValue, access_point_id: request.accessPointId, reason: decision.reason, timestamp },
      });
    }
    if (decision.granted && decision.counted) {
      const zoneIds = decision.fromZoneId === null ? [decision.zoneId] : [decision.zoneId, decision.fromZoneId];
      this.bus.emit('zone.occupancy_changed', { projectId: request.projectId, zoneIds, timestamp });
    }
    const attendee = decision.attendee ? { id: decision.attendee.id, first_name: decision.attendee.firstName, last_name: decision.attendee.lastName } : null;
    return outcome(uuid, decision.granted, decision.granted ? null : decision.reason, request.accessPointId, decision.zoneId, now, decidedAt, attendee, false);
  }

  /** A remembered decision answered again: the attendee as the index has them now. */
  #replay(r: RememberedOutcome): ScanOutcome {
    const entry = r.attendeeId === null ? undefined : this.index.attendees.get(r.attendeeId);
    const attendee = entry ? { id: entry.id, first_name: entry.firstName, last_name: entry.lastName } : null;
    return outcome(r.uuid, r.granted, r.reason, r.accessPointId, r.zoneId, r.decidedAtMs, iso(r.decidedAtMs), attendee, true);
  }

  /** The decision stored for this request key by an earlier run (beyond the in-memory window). */
  #stored(projectId: number, requestKey: string): ScanOutcome | null {
    const row = statement(this.db, 'SELECT uuid, granted, reason, access_point_id, access_zone_id, attendee_id, decided_at FROM access_events WHERE project_id = ? AND request_key = ?').get(
      projectId,
      requestKey,
    ) as { uuid: string; granted: number; reason: DenialReason | null; access_point_id: number; access_zone_id: number | null; attendee_id: number | null; decided_at: string } | undefined;
    if (!row) return null;
    const entry = row.attendee_id === null ? undefined : this.index.attendees.get(row.attendee_id);
    const attendee = entry ? { id: entry.id, first_name: entry.firstName, last_name: entry.lastName } : null;
    return outcome(row.uuid, row.granted === 1, row.reason, row.access_point_id, row.access_zone_id, Date.parse(row.decided_at), row.decided_at, attendee, true);
  }
}

function outcome(
  uuid: string,
  granted: boolean,
  reason: DenialReason | null,
  accessPointId: number,
  zoneId: number | null,
  decidedAtMs: number,
  decidedAt: string,
  attendee: AnswerAttendee | null,
  replayed: boolean,
): ScanOutcome {
  const answer: ScanAnswer = granted ? { success: true, access_granted: true, attendee } : { success: true, access_granted: false, reason: reason!, attendee };
  return { uuid, granted, reason, accessPointId, zoneId, decidedAt, decidedAtMs, replayed, answer };
}

const remembered = (o: ScanOutcome): RememberedOutcome => ({
  uuid: o.uuid,
  granted: o.granted,
  reason: o.reason,
  accessPointId: o.accessPointId,
  zoneId: o.zoneId,
  attendeeId: o.answer.attendee?.id ?? null,
  decidedAtMs: o.decidedAtMs,
});
