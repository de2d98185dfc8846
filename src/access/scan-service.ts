import type { Clock } from '../clock.js';
import { iso } from '../clock.js';
import type { EventBus } from '../events/bus.js';
import type { Database } from '../store/database.js';
import { JOURNAL_WRITE, type ScanDeadlines } from './scan-deadlines.js';
import type { AccessEngine } from './engine.js';
import { eventId } from './event-id.js';
import type { AccessEventLog } from '../journal/event-log.js';
import { type DecideOnce, ScanRequests } from './scan-requests.js';
import { outcome, type ScanOutcome } from './scan-outcome.js';
import type { VenueIndex } from './venue-index.js';
import type { ClockOffset } from '../clock-offset.js';

export type { ScanOutcome } from './scan-outcome.js';

// One command path for every transport: decide -> persist -> announce -> answer.
// The decision is made at once, in memory; its access event joins the current group commit
// (journal/event-log.ts); only once that is in the journal is the decision announced on the bus
// and answered. A scan carrying a request_id is decided once (scan-requests.ts: a retry with the
// same id gets the first decision back and writes no second event; docs/engine.md).

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
  /** The transport's ticket in `deadlines` for this scan (scan-deadlines.ts): told what the scan waits on. */
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
    this.#requests = new ScanRequests(db, index, deadlines);
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

  /** `r<reader>:<id>` or `ap<access point>:<id>` (scan-requests.ts). */
  static requestKey(request: Pick<ScanRequest, 'readerId' | 'accessPointId' | 'requestId'>): string | null {
    return ScanRequests.requestKey(request);
  }

  /** Decides, makes the access event durable, announces it, and answers
   * (ScanError only for an access point the project does not have). */
  scan(request: ScanRequest): Promise<ScanOutcome> {
    const requestKey = ScanRequests.requestKey(request);
    if (requestKey === null) return this.#decide(request, null);
    return this.#requests.once(request, requestKey, this.#decideOnce);
  }

  /** Reads the request keys of earlier runs now (at start), so the first scan does not pay for it. */
  loadRequestKeys(): number {
    return this.#requests.loadRequestKeys();
  }

  readonly #decideOnce: DecideOnce = (request, requestKey) => this.#decide(request, requestKey);

  async #decide(request: ScanRequest, requestKey: string | null): Promise<ScanOutcome> {
    const now = this.clock.now();
    const scannedAt = request.scannedAt ?? now;
    const decision = this.engine.decide({
      projectId: request.projectId,
      accessPointId: request.accessPointId,
      credentialValue: request.credentialValue,
      at: scannedAt,
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
        payload: {
          credential_value: request.credentialValue,
          access_point_id: request.accessPointId,
          reason: decision.reason,
          reason_detail: decision.detail,
          timestamp,
        },
      });
    }
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
