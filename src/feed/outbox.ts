import { randomUUID } from 'node:crypto';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import type { OutboxEntry } from './catalogue.js';

// The domain-event outbox (docs/architecture.md, "The durable feed"): a row per catalogue event,
// written inside the transaction of the change that makes it (events/unit-of-work.ts calls
// this for every event it announces), so a committed change cannot lose its announcement to a
// crash; consumers read it in seq order with a cursor of their own (feed.ts).

/** Appends the entry; call inside the write transaction of the change. */
export function appendToOutbox(db: Database, entry: OutboxEntry, at = new Date()): void {
  statement(db, 'INSERT INTO domain_events (uuid, project_id, event, data, created_at) VALUES (?, ?, ?, ?, ?)').run(
    randomUUID(),
    entry.projectId,
    entry.event,
    JSON.stringify(entry.data),
    at.toISOString(),
  );
}
