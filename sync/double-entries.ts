import type { Database } from '../src/store/database.js';
import { setDuplicateOf } from '../src/journal/access-event-rows.js';
import { paddedRuns, places, rowsOf } from '../src/store/batches.js';
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

export class DoubleEntries {
  constructor(
    private readonly db: Database,
    private readonly conflicts: SyncConflicts,
  ) {}

  /** Index support for the lookups by holder and time, and for a flagged
   * event's conflicts; only the cloud pays for them (created at start). */
  prepare(): void {
    // A holder's movements in the cloud's time (effective_at: the scan time corrected by the edge's
    // clock offset), ties by id: the id is SQLite's rowid, in its index already, and named for
    // PostgreSQL's, whose index would otherwise read a holder's whole history to find one neighbour.
    this.db.exec('DROP INDEX IF EXISTS access_events_holder_time');
    this.db.exec('DROP INDEX IF EXISTS access_events_holder_effective');
    this.db.exec(
      'CREATE INDEX IF NOT EXISTS access_events_holder_moves ON access_events(attendee_id, effective_at, id) WHERE attendee_id IS NOT NULL AND granted = 1',
    );
    this.db.exec(
      'CREATE INDEX IF NOT EXISTS sync_conflicts_event ON sync_conflicts(event_uuid) WHERE event_uuid IS NOT NULL',
    );
  }

  /**
   * Each holder's latest granted movement in the project stored before the run that begins with
   * id `firstNew`, in (effective_at, id) order (holders with none are absent): an event of the run
   * is followed by one of those exactly when that one's time is later (its id is smaller: a tie is
   * not later); settle takes them as the movements just before the batch's, where those are all
   * later. Scalar subqueries, so each holder is one read down the index whatever the planner
   * thinks of the table's size (store/batches.ts); then the rows, by id.
   */
  latest(projectId: number, holders: readonly number[], firstNew: number): Map<number, Movement> {
    const ids: number[] = [];
    for (const run of paddedRuns([...new Set(holders)]))
      for (const row of statement(
        this.db,
        `WITH holders (holder) AS (VALUES ${rowsOf(run.length, '(CAST(? AS BIGINT))')})
         SELECT (SELECT x.id FROM access_events x WHERE ${holderMoves('x', 'holder')} AND x.id < ?
           ORDER BY x.effective_at DESC, x.id DESC LIMIT 1) AS id FROM holders`,
      ).all(...run, projectId, firstNew) as { id: number | null }[])
        if (row.id !== null) ids.push(row.id);
    const latest = new Map<number, Movement>();
    for (const row of this.#rows(ids)) latest.set(row.attendee_id, row);
    return latest;
  }

  /**
   * Once the batch is stored: the flags of its movements (`arrivals`: granted movements of a
   * holder, with their effective time) and of the movement just after each, from the merged
   * history. Per holder, the window the batch's movements span with the movement just before and
   * just after it: each flag needs only its own predecessor, all in that window.
   */
  settle(projectId: number, arrivals: readonly Movement[], before: ReadonlyMap<number, Movement>): Settled {
    const byHolder = new Map<number, Movement[]>();
    for (const a of arrivals) {
      const list = byHolder.get(a.attendee_id);
      if (list) list.push(a);
      else byHolder.set(a.attendee_id, [a]);
    }
    for (const own of byHolder.values()) own.sort(byTime);
    const histories = this.#histories(projectId, byHolder, before);
    const settled: Settled = { flags: new Map(), conflicts: [] };
    for (const [holder, own] of byHolder) {
      const history = histories.get(holder)!;
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

  /**
   * Each holder's history from the movement just before their first arrival to the one just after
   * their last, in (effective_at, id) order. Where every arrival is later than the holder's latest
   * movement stored before the batch (`before`, from latest: arrivals in time order, the usual
   * case), that movement and the arrivals are the history. Otherwise, in a few statements for those
   * holders (store/batches.ts): each one's neighbours' ids and how many movements lie between the
   * two arrivals; when those are the arrivals alone, the window is what the batch stored; else
   * (another edge's movements uploaded in between) it is read.
   */
  #histories(
    projectId: number,
    byHolder: Map<number, Movement[]>,
    before: ReadonlyMap<number, Movement>,
  ): Map<number, Movement[]> {
    const histories = new Map<number, Movement[]>();
    const late: [number, Movement[]][] = [];
    for (const [holder, own] of byHolder) {
      const previous = before.get(holder);
      if (previous === undefined || byTime(previous, own[0]!) < 0)
        histories.set(holder, previous ? [previous, ...own] : own);
      else late.push([holder, own]);
    }
    const spans = late.map(([holder, own]) => {
      const first = own[0]!;
      const last = own[own.length - 1]!;
      return [holder, first.effective_at, first.id, last.effective_at, last.id] as const;
    });
    const found = new Map<number, { before_id: number | null; after_id: number | null; inside: number }>();
    for (const run of paddedRuns(spans))
      for (const row of statement(this.db, SPANS_SQL(run.length)).all(
        ...run.flat(),
        projectId,
        projectId,
        projectId,
      ) as {
        holder: number;
        before_id: number | null;
        after_id: number | null;
        inside: number;
      }[])
        found.set(row.holder, row);
    const neighbours = new Map<number, Movement>();
    const ids = [...found.values()].flatMap((f) => [f.before_id, f.after_id]).filter((id): id is number => id !== null);
    for (const row of this.#rows(ids)) neighbours.set(row.id, row);
    for (const [holder, own] of late) {
      const { before_id: previous, after_id: after, inside } = found.get(holder)!;
      const first = own[0]!;
      const last = own[own.length - 1]!;
      const window =
        inside === own.length
          ? own
          : (statement(
              this.db,
              `SELECT ${COLUMNS} FROM access_events WHERE ${holderMoves('access_events', '?')}
                 AND (effective_at, id) >= (?, ?) AND (effective_at, id) <= (?, ?) ORDER BY effective_at, id`,
            ).all(holder, projectId, first.effective_at, first.id, last.effective_at, last.id) as Movement[]);
      histories.set(holder, [
        ...(previous !== null ? [neighbours.get(previous)!] : []),
        ...window,
        ...(after !== null ? [neighbours.get(after)!] : []),
      ]);
    }
    return histories;
  }

  /** Stored movements by id, a few statements for all. */
  *#rows(ids: readonly number[]): Iterable<Movement> {
    for (const run of paddedRuns(ids))
      yield* statement(this.db, `SELECT ${COLUMNS} FROM access_events WHERE id IN ${places(run.length)}`).all(
        ...run,
      ) as Movement[];
  }
}

/** A holder's granted movements in the project, less those naming what the project never held
 * (upload-flags.ts: unknown_reference): `alias`'s rows of the holder `holder` (a column or `?`),
 * then a `?` for the project. */
const holderMoves = (alias: string, holder: string): string =>
  `${alias}.attendee_id = ${holder} AND ${alias}.granted = 1 AND ${alias}.movement IS NOT NULL AND ${alias}.project_id = ? AND ${alias}.review IS NOT 'unknown_reference'`;

/** `n` holders' spans (holder, first at, first id, last at, last id), then the project id three
 * times → per holder: the id of the movement just before the span and just after it, and how
 * many lie within it. */
const SPANS_SQL = (n: number): string =>
  `WITH spans (holder, first_at, first_id, last_at, last_id) AS (VALUES ${rowsOf(n, '(CAST(? AS BIGINT), ?, CAST(? AS BIGINT), ?, CAST(? AS BIGINT))')})
   SELECT s.holder,
     (SELECT x.id FROM access_events x WHERE ${holderMoves('x', 's.holder')} AND (x.effective_at, x.id) < (s.first_at, s.first_id)
       ORDER BY x.effective_at DESC, x.id DESC LIMIT 1) AS before_id,
     (SELECT x.id FROM access_events x WHERE ${holderMoves('x', 's.holder')} AND (x.effective_at, x.id) > (s.last_at, s.last_id)
       ORDER BY x.effective_at, x.id LIMIT 1) AS after_id,
     (SELECT COUNT(*) FROM access_events x WHERE ${holderMoves('x', 's.holder')}
       AND (x.effective_at, x.id) >= (s.first_at, s.first_id) AND (x.effective_at, x.id) <= (s.last_at, s.last_id)) AS inside
   FROM spans s`;

const byTime = (x: Movement, y: Movement) =>
  x.effective_at < y.effective_at ? -1 : x.effective_at > y.effective_at ? 1 : x.id - y.id;

/** The rule: an entry repeats the holder's previous movement
 * when that is an entry into the same zone at another edge. */
function repeatOf(event: Movement, previous: Movement | null): string | null {
  if (event.movement !== 'in' || event.access_zone_id === null) return null; // letting someone out is never a double entry
  if (previous?.movement !== 'in' || previous.access_zone_id !== event.access_zone_id) return null;
  return previous.edge_id !== event.edge_id ? previous.uuid : null; // one edge's own repeat is its anti-passback's business
}
