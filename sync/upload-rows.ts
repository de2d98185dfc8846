import {
  type DecidedEvent,
  flagDeletedReference,
  flagReview,
  insertDecidedEvents,
  insertUploadedEvents,
  markCounted,
  storedUuids,
  type UploadedEventOutcome,
  type UploadedEventRow,
} from '../src/journal/access-event-rows.js';
import type { Database } from '../src/store/database.js';
import { effectiveAsScanned } from './uploaded-events.js';

// How a run of uploaded access events reaches access_events (docs/sync.md: limits; docs/decisions.md:
// each row written once): where every event keeps its scan time as its effective time, the run is
// worked out first and each new row written once, whole; where a corrected clock makes the store
// compute an effective time, the run is stored first and its outcomes written onto the rows after.

/** An event's flags as the cloud announces them. */
export interface Flags {
  duplicate_of: string | null;
  review: string | null;
  deleted_reference: string | null;
}

/** What an event's flags and presence move put in its row; `own`: its holder's project's history. */
export const stores = (
  own: boolean,
  flags: Flags,
  counted: boolean,
  fromZoneId: number | null,
): UploadedEventOutcome & { own: boolean } => ({
  own,
  counted,
  fromZoneId: counted ? fromZoneId : null,
  review: flags.review,
  deletedReference: flags.deleted_reference,
});

/** A run's new events by uuid (each once: stored before or earlier in the run, absent), with the
 * id and effective time each has or will have; `firstNew` is below every one of them. */
export interface PlacedRun {
  decidedFirst: boolean;
  fresh: Map<string, { id: number; effective_at: string }>;
  firstNew: number;
}

/** In the slice's write transaction: which of `rows` are new, stored now unless decidedFirst. */
export function placeRun(db: Database, rows: readonly UploadedEventRow[]): PlacedRun {
  if (!rows.every(effectiveAsScanned)) {
    const fresh = insertUploadedEvents(db, rows);
    return { decidedFirst: false, fresh, firstNew: Math.min(...[...fresh.values()].map((r) => r.id)) };
  }
  const { stored: known, nextId: firstNew } = storedUuids(
    db,
    rows.map((r) => r.uuid),
  );
  const fresh = new Map<string, { id: number; effective_at: string }>();
  for (const r of rows)
    if (!known.has(r.uuid) && !fresh.has(r.uuid))
      fresh.set(r.uuid, { id: firstNew + fresh.size, effective_at: r.scannedAt });
  return { decidedFirst: true, fresh, firstNew };
}

/** The run's new events with what was worked out for each, in the run's order: written as placeRun decided. */
export function storeOutcomes(db: Database, placed: PlacedRun, decided: readonly DecidedEvent[]): void {
  if (placed.decidedFirst) {
    insertDecidedEvents(db, decided);
    return;
  }
  for (const { id, outcome } of decided) {
    if (outcome.deletedReference !== null) flagDeletedReference(db, id, outcome.deletedReference);
    if (outcome.review !== null) flagReview(db, id, outcome.review);
  }
  markCounted(
    db,
    decided.flatMap(({ id, outcome }) =>
      outcome.counted ? [[id, outcome.fromZoneId] as [number, number | null]] : [],
    ),
  );
}
