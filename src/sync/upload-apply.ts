import type { Occupancy } from '../access/occupancy.js';
import type { VenueIndex } from '../access/venue-index.js';
import type { Clock } from '../clock.js';
import { iso } from '../clock.js';
import type { EventBus } from '../events/bus.js';
import { outboxEntryOf } from '../feed/catalogue.js';
import { appendToOutbox } from '../feed/outbox.js';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import { writeTransaction } from '../store/transactions.js';
import type { EdgeRow, SyncEdges } from './edges.js';
import type { NewConflict, SyncConflictResource, SyncConflicts } from './conflicts.js';
import type { UploadBody, UploadedAccessEvent } from './protocol.js';
import { UploadChanges } from './upload-changes.js';
import { deletedReferenceColumn, deletedReferenceConflict, UploadFlags } from './upload-flags.js';

// The cloud's side of an upload (issue 26 items 4-6, 11). One batch is one transaction:
// access events are stored once each by uuid (a batch sent again stores nothing new), change
// items once each by their outbox uuid (sync_applied_changes). Each access event keeps the
// edge's raw scan time; its edge, upload time and the edge's clock state are columns of its
// own. Occupancy follows scan time, not arrival: a movement older than the holder's latest
// one already known is history, not presence (an exit uploaded before the entry it follows
// leaves the entry uncounted), and never into a zone the cloud deleted meanwhile: such an event
// is kept and flagged (upload-flags.ts). After the commit, each new event is announced once on the bus
// (WebSocket); outgoing webhooks read it from access_events like any other.

interface Movement {
  uuid: string;
  edge_id: number | null;
  movement: 'in' | 'out';
  access_zone_id: number;
  scanned_at: string;
  duplicate_of: string | null;
}

interface Flags {
  duplicate_of: string | null;
  review: string | null;
  deleted_reference: string | null;
}

/** An entry stored by this batch, for the duplicate check once the batch is in. */
interface Entry {
  e: UploadedAccessEvent;
  id: number;
  /** Its scan time on the cloud's clock (effective_at). */
  at: string;
  flags: Flags;
  conflicts: SyncConflictResource[];
}

export interface UploadOutcome {
  accepted: number;
  duplicates: number;
  refused: number;
}

type Emit = () => void;

export class UploadApply {
  /** Since start: items stored, and items that were already stored (a batch sent again). */
  readonly stats = { accepted: 0, duplicates: 0, batches: 0 };

  readonly #changes: UploadChanges;
  readonly #flags: UploadFlags;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly bus: EventBus,
    private readonly occupancy: Occupancy,
    /** The cloud's decision index: holders' names for the announcements, and for the flags a credential's revocation and the blocklist. */
    private readonly index: VenueIndex,
    private readonly conflicts: SyncConflicts,
    /** After the commit: changed attendees and credentials into the decision index. */
    private readonly refreshIndex: () => Promise<void>,
    private readonly edges: SyncEdges,
  ) {
    this.#changes = new UploadChanges(db, clock, bus, conflicts);
    this.#flags = new UploadFlags(db, index);
  }

  /** Index support for the scan-time lookups by holder; only the cloud pays for it (created at start). */
  prepare(): void {
    // A holder's movements in the cloud's time (effective_at: the scan time corrected by the edge's clock offset).
    this.db.exec('DROP INDEX IF EXISTS access_events_holder_time');
    this.db.exec('CREATE INDEX IF NOT EXISTS access_events_holder_effective ON access_events(attendee_id, effective_at) WHERE attendee_id IS NOT NULL AND granted = 1');
  }

  async apply(edge: EdgeRow, projectId: number, body: UploadBody): Promise<UploadOutcome> {
    const now = iso(this.clock.now());
    const announce: Emit[] = [];
    const undo: (() => void)[] = [];
    let venueChanged = false;
    const outcome: UploadOutcome = { accepted: 0, duplicates: 0, refused: 0 };
    try {
      writeTransaction(this.db, () => {
        this.#flags.begin();
        const entries: Entry[] = [];
        for (const item of body.items) {
          const result = item.kind === 'access' ? this.#access(edge, projectId, item, body.clock, now, announce, undo, entries) : this.#changes.apply(edge, projectId, item, now, announce);
          const fresh = result !== false;
          if (fresh) outcome.accepted++;
          else outcome.duplicates++;
          if (result === 'refused') outcome.refused++;
          if (fresh && item.kind === 'change' && item.event.startsWith('attendee.')) venueChanged = true;
          if (fresh && item.kind === 'change' && item.event.startsWith('credential.')) venueChanged = true;
        }
        this.#flagDuplicates(edge, projectId, entries);
        if (body.feed) this.edges.noteUploaded(edge.id, body.feed); // in the batch's transaction: held exactly when the batch is
      });
    } catch (err) {
      for (const step of undo.reverse()) step();
      throw err;
    }
    this.stats.accepted += outcome.accepted;
    this.stats.duplicates += outcome.duplicates;
    this.stats.batches++;
    if (venueChanged) await this.refreshIndex(); // first: the announcements name attendees the batch made
    for (const emit of announce) emit();
    return outcome;
  }

  #access(edge: EdgeRow, projectId: number, e: UploadedAccessEvent, clock: UploadBody['clock'], now: string, announce: Emit[], undo: (() => void)[], entries: Entry[]): boolean {
    // Stored first (once: the uuid is unique); what it changes is worked out only for a new one.
    // The clock offset in force when the edge decided it, or (an edge that does not stamp events) the batch's.
    const offset = e.clock_offset_ms !== undefined ? e.clock_offset_ms : clock.offset_ms;
    const synchronised = e.clock_synchronised !== undefined ? e.clock_synchronised : clock.synchronised;
    const stored = statement(
      this.db,
      `INSERT INTO access_events (uuid, project_id, access_point_id, access_zone_id, reader_id, credential_id, credential_value, attendee_id, granted, reason, movement,
         counted, from_zone_id, scanned_at, decided_at, source, request_key, edge_id, uploaded_at, clock_offset_ms, clock_unsynchronised, duplicate_of, review)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, NULL, ?, ?, ?, NULL, ?, ?, ?, ?, NULL, NULL) ON CONFLICT (uuid) DO NOTHING RETURNING id, effective_at`,
    ).get(
      e.uuid,
      projectId,
      e.access_point_id,
      e.access_zone_id,
      e.reader_id,
      e.credential_id,
      e.credential_value,
      e.attendee_id,
      e.granted ? 1 : 0,
      e.reason,
      e.movement,
      e.scanned_at,
      e.decided_at,
      e.source,
      edge.id,
      now,
      offset,
      synchronised ? 0 : 1,
    ) as { id: number; effective_at: string } | undefined;
    if (!stored) return false;
    const { id, effective_at: at } = stored;
    const flags: Flags = { duplicate_of: null, review: null, deleted_reference: null };
    const conflicts: SyncConflictResource[] = [];
    const gone = this.#flags.goneReferences(projectId, e);
    if (gone.length > 0) {
      flags.deleted_reference = deletedReferenceColumn(gone);
      statement(this.db, 'UPDATE access_events SET deleted_reference = ? WHERE id = ?').run(flags.deleted_reference, id);
      conflicts.push(this.#raise(projectId, deletedReferenceConflict(edge.id, e, gone)));
    }
    const zoneGone = gone.some((g) => g.entity === 'access_zone');
    let counted = false;
    let fromZoneId: number | null = null;
    if (e.granted && e.attendee_id !== null && e.movement !== null && e.access_zone_id !== null) {
      // Presence follows the holder's latest movement on the cloud's clock, and never into (or out of) a zone the cloud no longer has.
      if (!zoneGone && !this.#neighbour(e.attendee_id, at, id, 'after')) {
        ({ counted, fromZoneId } = this.#move(e.attendee_id, e.access_zone_id, e.movement, undo));
        if (counted) statement(this.db, 'UPDATE access_events SET counted = 1, from_zone_id = ? WHERE id = ?').run(fromZoneId, id);
      }
      const review = e.movement === 'in' ? this.#flags.review(projectId, e, at) : null; // letting someone out needs no review
      if (review) {
        flags.review = review;
        statement(this.db, 'UPDATE access_events SET review = ? WHERE id = ?').run(review, id);
        conflicts.push(this.#raise(projectId, { kind: review, edgeId: edge.id, eventUuid: e.uuid, entity: 'credential', entityId: e.credential_id ?? undefined }));
      }
      if (e.movement === 'in') entries.push({ e, id, at, flags, conflicts });
    }
    announce.push(() => this.#announce(projectId, edge, e, now, flags, counted, fromZoneId, conflicts));
    return true;
  }

  /**
   * Duplicate entries, once the whole batch is in (an exit later in the batch must be seen):
   * an entry whose previous movement by scan time is an entry into the same zone at another
   * edge repeats it; an entry whose next movement is such an entry is repeated by it.
   */
  #flagDuplicates(edge: EdgeRow, projectId: number, entries: readonly Entry[]): void {
    for (const entry of entries) {
      const { e, id, at } = entry;
      const previous = this.#neighbour(e.attendee_id!, at, id, 'before');
      if (entry.flags.duplicate_of === null && previous && isCrossEdgeRepeat(previous, edge.id, e.access_zone_id!)) {
        entry.flags.duplicate_of = previous.uuid;
        statement(this.db, 'UPDATE access_events SET duplicate_of = ? WHERE id = ?').run(previous.uuid, id);
        entry.conflicts.push(this.#raise(projectId, { kind: 'duplicate_entry', edgeId: edge.id, eventUuid: e.uuid, relatedUuid: previous.uuid }));
      }
      const next = this.#neighbour(e.attendee_id!, at, id, 'after');
      if (next && next.duplicate_of === null && next.edge_id !== edge.id && next.movement === 'in' && next.access_zone_id === e.access_zone_id) {
        statement(this.db, 'UPDATE access_events SET duplicate_of = ? WHERE uuid = ?').run(e.uuid, next.uuid);
        entry.conflicts.push(this.#raise(projectId, { kind: 'duplicate_entry', edgeId: next.edge_id, eventUuid: next.uuid, relatedUuid: e.uuid }));
      }
    }
  }

  #raise(projectId: number, c: NewConflict): SyncConflictResource {
    const conflict = this.conflicts.record(projectId, c);
    appendToOutbox(this.db, outboxEntryOf('sync.conflict', { projectId, conflict })!);
    return conflict;
  }

  #announce(projectId: number, edge: EdgeRow, e: UploadedAccessEvent, now: string, flags: Flags, counted: boolean, fromZoneId: number | null, conflicts: SyncConflictResource[]): void {
    const uploaded = { uuid: e.uuid, edge_id: edge.id, uploaded_at: now, ...flags };
    if (e.granted && e.attendee_id !== null && e.credential_id !== null && e.access_zone_id !== null) {
      const holder = this.index.attendees.get(e.attendee_id);
      this.bus.emit('AccessGranted', {
        projectId,
        payload: {
          attendee_id: e.attendee_id,
          attendee: { first_name: holder?.firstName ?? '', last_name: holder?.lastName ?? '' },
          access_point_id: e.access_point_id,
          access_zone_id: e.access_zone_id,
          credential_id: e.credential_id,
          timestamp: e.scanned_at,
          ...uploaded,
        },
      });
    } else {
      this.bus.emit('AccessDenied', {
        projectId,
        payload: { credential_value: e.credential_value, access_point_id: e.access_point_id, reason: e.reason ?? 'denied', timestamp: e.scanned_at, ...uploaded },
      });
    }
    if (counted && e.access_zone_id !== null) {
      this.bus.emit('zone.occupancy_changed', { projectId, zoneIds: fromZoneId === null ? [e.access_zone_id] : [e.access_zone_id, fromZoneId], timestamp: e.scanned_at });
    }
    for (const conflict of conflicts) this.bus.emit('sync.conflict', { projectId, conflict });
  }

  /** The holder's granted movement just before (or after) the one at (effective time, id): ties by id. */
  #neighbour(attendeeId: number, at: string, id: number, side: 'before' | 'after'): Movement | null {
    const sql =
      side === 'before'
        ? `SELECT uuid, edge_id, movement, access_zone_id, scanned_at, duplicate_of FROM access_events
           WHERE attendee_id = ? AND granted = 1 AND movement IS NOT NULL AND (effective_at, id) < (?, ?) ORDER BY effective_at DESC, id DESC LIMIT 1`
        : `SELECT uuid, edge_id, movement, access_zone_id, scanned_at, duplicate_of FROM access_events
           WHERE attendee_id = ? AND granted = 1 AND movement IS NOT NULL AND (effective_at, id) > (?, ?) ORDER BY effective_at, id LIMIT 1`;
    return (statement(this.db, sql).get(attendeeId, at, id) as Movement | undefined) ?? null;
  }

  #move(attendeeId: number, zoneId: number, movement: 'in' | 'out', undo: (() => void)[]): { counted: boolean; fromZoneId: number | null } {
    const before = this.occupancy.zoneOf(attendeeId);
    undo.push(() => (before === undefined ? this.occupancy.forget(attendeeId) : this.occupancy.enter(attendeeId, before)));
    if (movement === 'out') return { counted: this.occupancy.leave(attendeeId, zoneId), fromZoneId: null };
    if (before === zoneId) return { counted: false, fromZoneId: null };
    return { counted: true, fromZoneId: this.occupancy.enter(attendeeId, zoneId) };
  }
}

function isCrossEdgeRepeat(previous: Movement, edgeId: number, zoneId: number): boolean {
  return previous.movement === 'in' && previous.access_zone_id === zoneId && previous.edge_id !== edgeId;
}
