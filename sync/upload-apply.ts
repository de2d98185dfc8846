import { rowAnnouncement } from '../src/access/access-event-payload.js';
import type { Occupancy } from '../src/access/occupancy.js';
import type { VenueIndex } from '../src/access/venue-index.js';
import type { Clock } from '../src/clock.js';
import { iso } from '../src/clock.js';
import type { EventBus } from '../src/events/bus.js';
import { commitWhenFree, type Work } from '../src/events/unit-of-work.js';
import { outboxEntryOf } from '../src/feed/catalogue.js';
import type { DecidedEvent } from '../src/journal/access-event-rows.js';
import type { Database } from '../src/store/database.js';
import type { EdgeRow, SyncEdges } from './edges.js';
import type { NewConflict, SyncConflicts } from './conflicts.js';
import { DoubleEntries, type Movement } from './double-entries.js';
import type { UploadBody, UploadedAccessEvent } from './protocol.js';
import { UploadChanges } from './upload-changes.js';
import { changesFirst, storedMovement, uploadedEventRow } from './uploaded-events.js';
import { type Flags, placeRun, storeOutcomes, stores } from './upload-rows.js';
import {
  deletedReferenceColumn,
  deletedReferenceConflict,
  UploadFlags,
  unknownReferenceConflict,
} from './upload-flags.js';
import type { SyncConflictResource } from '../src/resources/sync-conflict.js';

// The cloud's side of an upload (docs/sync.md). A batch is applied in slices, each a transaction of
// its own with the event loop free between two (docs/sync.md: limits): access events are stored
// once each by uuid (a batch sent again stores nothing new), change items once each by their outbox
// uuid (sync_applied_changes). Each access event keeps the edge's raw scan time; its edge, upload
// time and the edge's clock state are columns of its own. Occupancy moves by the engine's rule
// (Occupancy#move) and follows scan time, not arrival: a movement older than the holder's latest
// one already known is history, not presence (an exit uploaded before the entry it follows leaves
// the entry uncounted), and never into a zone the cloud deleted meanwhile: such an event is kept
// and flagged (upload-flags.ts). Double entries are worked out once each slice is in, for its
// movements and the ones just after them (double-entries.ts). A slice's access events are stored
// and looked up together, a few statements for the lot (docs/sync.md: limits), then worked out in
// order as if stored one by one. After each slice's commit, its new events are announced once on
// the bus (WebSocket; access-event-payload.ts); outgoing webhooks read them from access_events.

/** For the double entries once the batch is in: its movements, their flags as announced, and
 * each holder's latest movement before them. */
interface Arrivals {
  movements: Movement[];
  flags: Map<number, Flags>;
  before: Map<number, Movement>;
}

export interface UploadOutcome {
  accepted: number;
  duplicates: number;
  refused: number;
}

type Emit = () => void;

/** A slice: at most this many items, and no more work than this once one item is done (about a
 * tenth of it on the machines measured: docs/performance.md, bench:sync-upload). */
const SLICE_ITEMS = 200;
const SLICE_MS = 20;

/** How a batch is cut: a slice ends after this many items or this much work, whichever comes
 * first; a slice waits at most busyWaitMs for the store's write lock (then the batch fails:
 * 503 store_busy, sent again). */
export interface SliceOptions {
  sliceItems?: number;
  sliceMs?: number;
  busyWaitMs?: number;
}

export class UploadApply {
  /** Since start: items stored, and items that were already stored (a batch sent again). */
  readonly stats = { accepted: 0, duplicates: 0, batches: 0 };

  readonly #changes: UploadChanges;
  readonly #flags: UploadFlags;
  readonly #doubles: DoubleEntries;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly bus: EventBus,
    private readonly occupancy: Occupancy,
    /** The cloud's decision index: holders' names for the announcements,
     * and for the flags a credential's revocation and the blocklist. */
    private readonly index: VenueIndex,
    private readonly conflicts: SyncConflicts,
    /** After the commit: changed attendees and credentials into the decision index. */
    private readonly refreshIndex: () => Promise<void>,
    private readonly edges: SyncEdges,
    private readonly slicing: SliceOptions = {},
  ) {
    this.#changes = new UploadChanges(db, clock, bus, conflicts);
    this.#flags = new UploadFlags(db, index);
    this.#doubles = new DoubleEntries(db, conflicts);
  }

  /** Index support for the lookups by holder and time; only the cloud pays for it (created at start). */
  prepare(): void {
    this.#doubles.prepare();
  }

  /**
   * Applies a batch in slices (docs/sync.md: limits), the event loop free between two, so a
   * maximal batch never holds the cloud's other requests for more than a slice. Cutting a batch
   * anywhere is safe: each item is applied once by its uuid, so a batch cut short (the store
   * busy past busyWaitMs) is sent again and what was stored is a duplicate then; the batch's
   * feed position is kept in its last slice's transaction only, so the cloud claims a batch only
   * once it holds all of it. Each slice settles the double entries of its own movements in its
   * transaction, as a batch that size would: every stored movement is settled where it is
   * stored, even when the batch never completes.
   */
  async apply(edge: EdgeRow, projectId: number, body: UploadBody): Promise<UploadOutcome> {
    const now = iso(this.clock.now());
    const outcome: UploadOutcome = { accepted: 0, duplicates: 0, refused: 0 };
    const items = changesFirst(body.items);
    for (let at = 0; ; ) {
      at = await this.#slice(edge, projectId, body, items, at, now, outcome);
      if (at >= items.length) break;
      await new Promise((resolve) => setImmediate(resolve)); // everything else's turn
    }
    this.stats.batches++;
    return outcome;
  }

  /** The slice of the batch's `items` from `from`, in one transaction;
   * once committed, announced. Answers where the next slice begins. */
  async #slice(
    edge: EdgeRow,
    projectId: number,
    body: UploadBody,
    items: UploadBody['items'],
    from: number,
    now: string,
    outcome: UploadOutcome,
  ): Promise<number> {
    const { sliceItems = SLICE_ITEMS, sliceMs = SLICE_MS, busyWaitMs } = this.slicing;
    let announce: Emit[] = [];
    let undo: (() => void)[] = [];
    let counts: UploadOutcome = { accepted: 0, duplicates: 0, refused: 0 };
    let venueChanged = false;
    let next = from;
    const rollback = () => {
      for (const step of undo.reverse()) step();
      undo = [];
    };
    try {
      // Through the unit of work: the outbox entries are written in the slice's transaction; the
      // bus hears of them below, after the commit and the index refresh, in the slice's order.
      await commitWhenFree(
        this.db,
        this.bus,
        (work) => {
          rollback(); // writeWhenFree may run this again: nothing of a try that did not commit stays
          announce = [];
          counts = { accepted: 0, duplicates: 0, refused: 0 };
          venueChanged = false;
          next = from;
          this.#flags.begin();
          const arrivals: Arrivals = { movements: [], flags: new Map(), before: new Map() };
          const started = performance.now();
          while (
            next < items.length &&
            next - from < sliceItems &&
            (next === from || performance.now() - started < sliceMs)
          ) {
            const item = items[next]!;
            if (item.kind === 'access') {
              // The run of access events up to the slice's end, stored at once (#accessRun).
              let end = next;
              const limit = Math.min(items.length, from + sliceItems);
              while (end < limit && items[end]!.kind === 'access') end++;
              const run = items.slice(next, end) as UploadedAccessEvent[];
              next = end;
              const fresh = this.#accessRun(edge, projectId, run, body.clock, now, announce, undo, arrivals, work);
              counts.accepted += fresh;
              counts.duplicates += run.length - fresh;
              continue;
            }
            next++;
            const result = this.#changes.apply(edge, projectId, item, now, announce, work);
            const fresh = result !== false;
            if (fresh) counts.accepted++;
            else counts.duplicates++;
            if (result === 'refused') counts.refused++;
            if (fresh && (item.event.startsWith('attendee.') || item.event.startsWith('credential.')))
              venueChanged = true;
          }
          this.#settleDoubles(projectId, arrivals, announce, work);
          // In the last slice's transaction: held exactly when the whole batch is.
          if (next >= items.length && body.feed) this.edges.noteUploaded(edge.id, body.feed);
        },
        busyWaitMs === undefined ? {} : { maxWaitMs: busyWaitMs },
      );
    } catch (err) {
      rollback();
      throw err;
    }
    outcome.accepted += counts.accepted;
    outcome.duplicates += counts.duplicates;
    outcome.refused += counts.refused;
    this.stats.accepted += counts.accepted;
    this.stats.duplicates += counts.duplicates;
    if (venueChanged) await this.refreshIndex(); // first: the announcements name attendees the slice made, and the next slice's flags read the index
    for (const emit of announce) emit();
    // The slice's access events, outbox entries and flags are in the feed: its consumers (webhooks)
    // read them now.
    if (next > from) this.bus.emit('feed.appended', { by: 'upload' });
    return next;
  }

  /**
   * A run of access events, each stored once (by uuid) in a few statements for the lot, each new
   * one worked out in order as if stored alone: an event's presence move needs no later stored
   * movement of its holder, from before the run (DoubleEntries#latest) or earlier in it. The rows
   * are written before or after that, as upload-rows.ts decides. Answers how many were new.
   */
  #accessRun(
    edge: EdgeRow,
    projectId: number,
    run: readonly UploadedAccessEvent[],
    clock: UploadBody['clock'],
    now: string,
    announce: Emit[],
    undo: (() => void)[],
    arrivals: Arrivals,
    work: Work,
  ): number {
    const rows = run.map((e) => uploadedEventRow(e, projectId, edge.id, now, clock));
    const placed = placeRun(this.db, rows);
    const stored = placed.fresh;
    if (stored.size === 0) return 0;
    const holders = run.flatMap((e) =>
      e.granted && e.movement !== null && e.attendee_id !== null ? [e.attendee_id] : [],
    );
    const latest = new Map<number, string>();
    for (const [holder, movement] of this.#doubles.latest(projectId, holders, placed.firstNew)) {
      latest.set(holder, movement.effective_at);
      if (!arrivals.before.has(holder)) arrivals.before.set(holder, movement);
    }
    this.#flags.lookUp(projectId, run);
    const decided: DecidedEvent[] = [];
    for (const [i, e] of run.entries()) {
      const row = stored.get(e.uuid);
      if (!row) continue; // stored before (a batch sent again), or earlier in this run
      stored.delete(e.uuid);
      const outcome = this.#access(edge, projectId, e, row, latest, now, announce, undo, arrivals, work);
      decided.push({ row: rows[i]!, id: row.id, outcome });
      // A later event of the holder's now stored, for the ones after it in the run.
      if (outcome.own && e.granted && e.attendee_id !== null && e.movement !== null) {
        const before = latest.get(e.attendee_id);
        if (before === undefined || row.effective_at > before) latest.set(e.attendee_id, row.effective_at);
      }
    }
    storeOutcomes(this.db, placed, decided);
    return decided.length;
  }

  /** A new access event's flags, presence move and announcement: what to store with it, and
   * whether it is its holder's project's history (not an unknown_reference). */
  #access(
    edge: EdgeRow,
    projectId: number,
    e: UploadedAccessEvent,
    { id, effective_at: at }: { id: number; effective_at: string },
    latest: Map<number, string>,
    now: string,
    announce: Emit[],
    undo: (() => void)[],
    arrivals: Arrivals,
    work: Work,
  ): ReturnType<typeof stores> {
    const flags: Flags = { duplicate_of: null, review: null, deleted_reference: null };
    const conflicts: SyncConflictResource[] = [];
    const gone = this.#flags.goneReferences(projectId, e);
    if (gone.length > 0) {
      flags.deleted_reference = deletedReferenceColumn(gone);
      conflicts.push(this.#raise(projectId, deletedReferenceConflict(edge.id, e, gone), work));
    }
    // Naming what the edge's project never held: kept for review, and
    // nothing more (no count, no name, no flag on anyone's history).
    const unknown = this.#flags.unknownReferences(projectId, e, gone);
    if (unknown.length > 0) {
      flags.review = 'unknown_reference';
      conflicts.push(this.#raise(projectId, unknownReferenceConflict(edge.id, e, unknown), work));
      announce.push(() => this.#announce(projectId, edge, e, now, flags, false, null, conflicts, false));
      return stores(false, flags, false, null);
    }
    const zoneGone = gone.some((g) => g.entity === 'access_zone');
    let counted = false;
    let fromZoneId: number | null = null;
    if (e.granted && e.attendee_id !== null && e.movement !== null && e.access_zone_id !== null) {
      // Presence follows the holder's latest movement on the cloud's
      // clock, and never into (or out of) a zone the cloud no longer has.
      const later = latest.get(e.attendee_id);
      if (!zoneGone && (later === undefined || later <= at)) {
        const { attendee_id: attendeeId, access_zone_id: zoneId, movement } = e;
        const move = this.occupancy.move(attendeeId, zoneId, movement); // the engine's rule (occupancy.ts)
        undo.push(() => this.occupancy.unmove(attendeeId, zoneId, movement, move));
        ({ counted, fromZoneId } = move);
      }
      const review = e.movement === 'in' ? this.#flags.review(projectId, e, at) : null; // letting someone out needs no review
      if (review) {
        flags.review = review;
        conflicts.push(
          this.#raise(
            projectId,
            {
              kind: review,
              edgeId: edge.id,
              eventUuid: e.uuid,
              entity: 'credential',
              entityId: e.credential_id ?? undefined,
            },
            work,
          ),
        );
      }
    }
    if (e.granted && e.attendee_id !== null && e.movement !== null) {
      arrivals.movements.push(storedMovement(id, e, edge.id, at));
      arrivals.flags.set(id, flags);
    }
    announce.push(() => this.#announce(projectId, edge, e, now, flags, counted, fromZoneId, conflicts, true));
    return stores(true, flags, counted, fromZoneId);
  }

  /**
   * Double entries, once the whole slice is in (an exit later in the slice must be seen; one in a
   * later slice is, as the movement just before this one's, when that slice settles): the
   * slice's movements and the ones just after them, from the merged history (double-entries.ts).
   * Each flag raised or cleared goes to the outbox now and on the bus after the commit, after the
   * slice's own events; a new event is announced with its flag as settled.
   */
  #settleDoubles(projectId: number, arrivals: Arrivals, announce: Emit[], work: Work): void {
    const { flags, conflicts } = this.#doubles.settle(projectId, arrivals.movements, arrivals.before);
    for (const [id, duplicateOf] of flags) {
      const announced = arrivals.flags.get(id);
      if (announced) announced.duplicate_of = duplicateOf;
    }
    for (const conflict of conflicts) work.record(outboxEntryOf('sync.conflict', { projectId, conflict })!);
    if (conflicts.length === 0) return;
    announce.push(() => {
      for (const conflict of conflicts) this.bus.emit('sync.conflict', { projectId, conflict });
    });
  }

  #raise(projectId: number, c: NewConflict, work: Work): SyncConflictResource {
    const conflict = this.conflicts.record(projectId, c);
    work.record(outboxEntryOf('sync.conflict', { projectId, conflict })!);
    return conflict;
  }

  /** `named`: the holder is this project's, so the announcement may carry their name. */
  #announce(
    projectId: number,
    edge: EdgeRow,
    e: UploadedAccessEvent,
    now: string,
    flags: Flags,
    counted: boolean,
    fromZoneId: number | null,
    conflicts: SyncConflictResource[],
    named: boolean,
  ): void {
    const uploaded = { uuid: e.uuid, edge_id: edge.id, uploaded_at: now, ...flags };
    const holder = named && e.attendee_id !== null ? this.index.attendees.get(e.attendee_id) : undefined;
    const announced = rowAnnouncement({
      ...e,
      reason_detail: e.reason_detail ?? null,
      first_name: holder?.firstName ?? null,
      last_name: holder?.lastName ?? null,
    });
    if (announced?.granted)
      this.bus.emit('access.granted', { projectId, payload: { ...announced.payload, ...uploaded } });
    else if (announced) this.bus.emit('access.denied', { projectId, payload: { ...announced.payload, ...uploaded } });
    // null: a grant naming no holder, credential or zone, or a denial with no reason: stored as
    // sent, not announced live.
    if (counted && e.access_zone_id !== null) {
      this.bus.emit('zone.occupancy_changed', {
        projectId,
        zoneIds: fromZoneId === null ? [e.access_zone_id] : [e.access_zone_id, fromZoneId],
        timestamp: e.scanned_at,
      });
    }
    for (const conflict of conflicts) this.bus.emit('sync.conflict', { projectId, conflict });
  }
}
