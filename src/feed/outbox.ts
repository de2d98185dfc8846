import { randomUUID } from 'node:crypto';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import type { OutboxEntry } from './catalogue.js';

// The domain-event outbox (docs/architecture.md, "The durable feed"): a row per catalogue event,
// written inside the transaction of the change that makes it, so a committed change cannot
// lose its announcement to a crash; consumers read it in seq order with a cursor of their own
// (feed.ts). The table's only writer: rows are appended through the unit of work
// (events/unit-of-work.ts commit(), its only caller of appendToOutbox) and pruned by retention.

/** Appends the entry; call inside the write transaction of the change (through commit()'s Work). */
export function appendToOutbox(db: Database, entry: OutboxEntry, at = new Date()): void {
  statement(db, 'INSERT INTO domain_events (uuid, project_id, event, data, created_at) VALUES (?, ?, ?, ?, ?)').run(
    randomUUID(),
    entry.projectId,
    entry.event,
    JSON.stringify(entry.data),
    at.toISOString(),
  );
}

/** Removes the rows older than `before` (ISO time) up to seq `below` (every cursor is past it); answers how many. */
export function pruneOutbox(db: Database, before: string, below: number): number {
  return statement(db, 'DELETE FROM domain_events WHERE created_at < ? AND seq <= ?').run(before, below).changes;
}
