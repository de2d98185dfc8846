import type { Clock } from '../clock.js';
import { iso } from '../clock.js';
import type { EventBus } from '../events/bus.js';
import type { Database } from '../store/database.js';
import { JOURNAL_WRITE, PENDING_ENTRY, type ScanDeadlines } from './scan-deadlines.js';
import type { AccessEngine } from './engine.js';
import { decisionPayload } from './access-event-payload.js';
import { eventId } from './event-id.js';
import type { AccessEventLog } from '../journal/event-log.js';
import { ScanRequests } from './scan-requests.js';
import { outcome, type ScanOutcome } from './scan-outcome.js';
import type { VenueIndex } from './venue-index.js';
import type { ClockOffset } from '../clock-offset.js';

export type { ScanOutcome } from './scan-outcome.js';

// One command path for every transport: decide -> persist -> announce -> answer.
// The decision is made at once, in memory; its access event joins the current group commit
// (journal/event-log.ts); only once that is in the journal is the decision announced on the bus
// and answered (its payload: access-event-payload.ts). A scan carrying a request_id is decided
// once: the service looks it up in its request table (scan-requests.ts) and decides only an id
// the table does not know, handing it the decision to remember; a retry with the same id gets the
// first decision back and writes no second event (docs/engine.md). On the transport's ticket in
// the answer deadlines (scan-deadlines.ts) the service notes what the scan waits on.

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
  /** The transport's ticket in `deadlines` for this scan (scan-deadlines.ts): noted with what the scan waits on. */
  deadline?: number;
}

export class ScanService {
  readonly #requests: ScanRequests;

  constructor(
    db: Database,
    private readonly clock: Clock,
    private readonly bus: EventBus,
    private readonly engine: AccessEngine,
    index: VenueIndex,
    private readonly eventLog: AccessEventLog,
    /** Where transports open a ticket per scan they wait on, so none waits
     * past the bound (docs/mqtt.md, "Answered in bounded time"). */
    readonly deadlines: ScanDeadlines | null = null,
    /** On an edge: its clock against its cloud's, stamped on each event as it is decided (docs/sync.md: clocks). */
    private readonly clockOffset: ClockOffset | null = null,
  ) {
    this.#requests = new ScanRequests(db, index);
  }

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

  /** The journal's figures under the group commit (writes, slow writes: journal/event-journal.ts). */
  get journalStats(): AccessEventLog['journalStats'] {
    return this.eventLog.journalStats;
  }

  /**
   * Decides, makes the access event durable, announces it, and answers (ScanError only for an access point the project
   * does not have).
   */
  scan(request: ScanRequest): Promise<ScanOutcome> {
    const requestKey = ScanRequests.requestKey(request);
    if (requestKey === null) return this.#decide(request, null);
    const first = this.#requests.find(request, requestKey);
    if (first instanceof Promise) {
      if (request.deadline) this.deadlines?.waitingOn(request.deadline, PENDING_ENTRY);
      return first;
    }
    if (first) return Promise.resolve(first);
    const decided = this.#decide(request, requestKey);
    this.#requests.remember(request, decided);
    return decided;
  }

  /** Reads the request keys of earlier runs now (at start), so the first scan does not pay for it. */
  loadRequestKeys(): number {
    return this.#requests.loadRequestKeys();
  }

  async #decide(request: ScanRequest, requestKey: string | null): Promise<ScanOutcome> {
    const now = this.clock.now();
    const scannedAt = request.scannedAt ?? now;
    const decision = this.engine.decide({
      projectId: request.projectId,
      accessPointId: request.accessPointId,
      credentialValue: request.credentialValue,
      at: scannedAt,
      readerId: request.readerId ?? null,
    });
    const uuid = eventId(now); // time-ordered: the uuid index grows at its end, like the log
    const decidedAt = iso(now);
    const timestamp = scannedAt === now ? decidedAt : iso(scannedAt);
    if (request.deadline) this.deadlines?.waitingOn(request.deadline, JOURNAL_WRITE);
    const stamp = this.clockOffset?.known ? this.clockOffset.now() : null; // an edge's clock against its cloud's, as it decides
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
        reasonDetail: decision.granted ? null : decision.detail,
        movement: decision.granted ? decision.movement : null,
        counted: decision.granted && decision.counted,
        fromZoneId: decision.granted ? decision.fromZoneId : null,
        scannedAt: timestamp,
        decidedAt,
        source: request.source,
        requestKey,
        clockOffsetMs: stamp === null ? null : stamp.offsetMs,
        clockUnsynchronised: stamp === null ? null : stamp.synchronised ? 0 : 1,
        offlineVerified: decision.offlineVerified,
      });
    } catch (err) {
      this.engine.undo(decision);
      throw err;
    }
    const { projectId, accessPointId, credentialValue } = request;
    if (decision.granted)
      this.bus.emit('access.granted', {
        projectId,
        payload: decisionPayload(decision, accessPointId, credentialValue, timestamp),
      });
    else
      this.bus.emit('access.denied', {
        projectId,
        payload: decisionPayload(decision, accessPointId, credentialValue, timestamp),
      });
    if (decision.granted && decision.counted) {
      const zoneIds = decision.fromZoneId === null ? [decision.zoneId] : [decision.zoneId, decision.fromZoneId];
      this.bus.emit('zone.occupancy_changed', { projectId: request.projectId, zoneIds, timestamp });
    }
    const attendee = decision.attendee
      ? { id: decision.attendee.id, first_name: decision.attendee.firstName, last_name: decision.attendee.lastName }
      : null;
    return outcome(
      uuid,
      decision.granted,
      decision.granted ? null : decision.reason,
      decision.granted ? null : decision.detail,
      request.accessPointId,
      decision.zoneId,
      now,
      decidedAt,
      attendee,
      false,
    );
  }
}
