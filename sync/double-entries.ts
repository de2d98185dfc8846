import type { Database } from '../src/store/database.js';
import { setDuplicateOf } from '../src/journal/access-event-rows.js';
import { statement } from '../src/store/statements.js';
import type { SyncConflicts } from './conflicts.js';
import type { SyncConflictResource } from '../src/resources/sync-conflict.js';

// Double entries on the cloud (docs/sync.md: conflicts, "Flags are a function of the merged
// history by corrected time"). An entry into a zone repeats another when the holder's movement
// just before it, by (effective_at, id), is an entry into the same zone at another edge; its
// `duplicate_of` names that entry. The flag depends on that one neighbour only, and access
// events are only ever added (effective_at never changes), so an arrival changes the flag of
// itself and of the holder's movement just after it, nothing else. Once a batch is stored, both
// are worked out again from the merged history: a flag that no longer holds is cleared (the
// column back to null, its conflict kept with cleared_at), one that now holds is raised, one
// that names another entry now is both. Runs inside the upload's transaction (upload-apply.ts).

/** A holder's granted movement, as the duplicate rule reads it. */
export interface Movement {
  id: number;
  uuid: string;
  attendee_id: number;
  edge_id: number | null;
  movement: 'in' | 'out';
  access_zone_id: number | null;
  effective_at: string;
  duplicate_of: string | null;
}

export interface Settled {
  /** Each event whose flag changed: its duplicate_of now. */
  flags: Map<number, string | null>;
  /** The conflicts raised and cleared, in the order made: each is announced (sync.conflict). */
  conflicts: SyncConflictResource[];
}

const COLUMNS = 'id, uuid, attendee_id, edge_id, movement, access_zone_id, effective_at, duplicate_of';
/** A holder's history is their project's events, without those naming
 * what the project never held (upload-flags.ts: unknown_reference). */
const OWN = "project_id = ? AND review IS NOT 'unknown_reference'";

export class DoubleEntries {
  constructor(
    private readonly db: Database,
    private readonly conflicts: SyncConflicts,
  ) {}

  /** Index support for the lookups by holder and time, and for a flagged
   * event's conflicts; only the cloud pays for them (created at start). */
  prepare(): void {
    // A holder's movements in the cloud's time (effective_at: the scan time corrected by the edge's clock offset).
    this.db.exec('DROP INDEX IF EXISTS access_events_holder_time');
    this.db.exec(
      'CREATE INDEX IF NOT EXISTS access_events_holder_effective ON access_events(attendee_id, effective_at) WHERE attendee_id IS NOT NULL AND granted = 1',
    );
    this.db.exec(
      'CREATE INDEX IF NOT EXISTS sync_conflicts_event ON sync_conflicts(event_uuid) WHERE event_uuid IS NOT NULL',
    );
  }

  /** The holder's granted movement just before (or after) the
   * one at (effective time, id) in the project: ties by id. */
  neighbour(projectId: number, attendeeId: number, at: string, id: number, side: 'before' | 'after'): Movement | null {
    const sql =
      side === 'before'
        ? `SELECT ${COLUMNS} FROM access_events
           WHERE attendee_id = ? AND granted = 1 AND movement IS NOT NULL AND ${OWN} AND (effective_at, id) < (?, ?) ORDER BY effective_at DESC, id DESC LIMIT 1`
        : `SELECT ${COLUMNS} FROM access_events
           WHERE attendee_id = ? AND granted = 1 AND movement IS NOT NULL AND ${OWN} AND (effective_at, id) > (?, ?) ORDER BY effective_at, id LIMIT 1`;
    return (statement(this.db, sql).get(attendeeId, projectId, at, id) as Movement | undefined) ?? null;
  }

  /**
   * Once the batch is stored: the flags of its movements (`arrivals`: granted movements of a
   * holder, with their effective time) and of the movement just after each, from the merged
   * history. Per holder, one read of the window the batch's movements span, with the movement
   * just before and just after it: each flag needs only its own predecessor, all in that window.
   */
  settle(projectId: number, arrivals: readonly Arrival[]): Settled {
    const byHolder = new Map<number, Arrival[]>();
    for (const a of arrivals) {
      const list = byHolder.get(a.attendeeId);
      if (list) list.push(a);
      else byHolder.set(a.attendeeId, [a]);
    }
    const settled: Settled = { flags: new Map(), conflicts: [] };
    for (const [holder, own] of byHolder) {
      own.sort(byTime);
      const first = own[0]!;
      const last = own[own.length - 1]!;
      const before = this.neighbour(projectId, holder, first.at, first.id, 'before');
      const window = statement(
        this.db,
        `SELECT ${COLUMNS} FROM access_events WHERE attendee_id = ? AND granted = 1 AND movement IS NOT NULL AND ${OWN}
           AND (effective_at, id) >= (?, ?) AND (effective_at, id) <= (?, ?) ORDER BY effective_at, id`,
      ).all(holder, projectId, first.at, first.id, last.at, last.id) as Movement[];
      const after = this.neighbour(projectId, holder, last.at, last.id, 'after');
      const history = [...(before ? [before] : []), ...window, ...(after ? [after] : [])];
      const arrived = new Set(own.map((a) => a.id));
      for (let i = 0; i < history.length; i++) {
        const event = history[i]!;
        // A target: an arrival, or the movement just after one.
        if (!arrived.has(event.id) && !(i > 0 && arrived.has(history[i - 1]!.id))) continue;
        const repeats = repeatOf(event, i > 0 ? history[i - 1]! : null);
        if (repeats === event.duplicate_of) continue;
        if (event.duplicate_of !== null)
          settled.conflicts.push(...this.conflicts.clear(projectId, 'duplicate_entry', event.uuid));
        setDuplicateOf(this.db, event.id, repeats);
        if (repeats !== null)
          settled.conflicts.push(
            this.conflicts.record(projectId, {
              kind: 'duplicate_entry',
              edgeId: event.edge_id,
              eventUuid: event.uuid,
              relatedUuid: repeats,
            }),
          );
        settled.flags.set(event.id, repeats);
      }
    }
    return settled;
  }
}

/** A stored granted movement of a holder, as the batch put it: its access event id and effective time. */
export interface Arrival {
  id: number;
  attendeeId: number;
  at: string;
}

const byTime = (x: Arrival, y: Arrival) => (x.at < y.at ? -1 : x.at > y.at ? 1 : x.id - y.id);

/** The rule: an entry repeats the holder's previous movement
 * when that is an entry into the same zone at another edge. */
function repeatOf(event: Movement, previous: Movement | null): string | null {
  if (event.movement !== 'in' || event.access_zone_id === null) return null; // letting someone out is never a double entry
  if (previous?.movement !== 'in' || previous.access_zone_id !== event.access_zone_id) return null;
  return previous.edge_id !== event.edge_id ? previous.uuid : null; // one edge's own repeat is its anti-passback's business
}
