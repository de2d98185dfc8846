import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { type Clock, iso } from '../clock.js';
import type { Feed, FeedCursor, FeedItem } from '../feed/feed.js';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import { writeTransaction } from '../store/transactions.js';

// The delivery log (spec: Outgoing delivery log entry, Outgoing delivery
// states): one row per event sent to one subscription. A row is made, pending, when the
// dispatcher takes the event from the feed, in the same transaction that moves the
// subscription's cursor past it: an event is taken exactly once. Retries and resends are
// attempts of the same row (the same uuid: X-Svc-Delivery-ID), recorded in its history.

/** The feed consumer of a subscription: its cursor in feed_cursors. */
export const consumerOf = (id: number) => `webhook:${id}`;

/** A subscription enabled again: its held head is tried now, not at the retry time it had. */
export function releaseHeldDeliveries(db: Database, subscriptionId: number): void {
  statement(
    db,
    "UPDATE webhook_deliveries SET next_attempt_at = NULL WHERE subscription_id = ? AND status = 'pending'",
  ).run(subscriptionId);
}

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

export interface DeliveryRow {
  id: number;
  uuid: string;
  subscription_id: number;
  project_id: number;
  event: string;
  event_id: string;
  payload: string;
  status: DeliveryStatus;
  attempts: number;
  last_status_code: number | null;
  response_time_ms: number | null;
  next_attempt_at: string | null;
  attempt_history: string;
  created_at: string;
  updated_at: string;
}

export interface Attempt {
  at: string;
  status_code: number | null;
  duration_ms: number;
  error: string | null;
}

export const attemptSchema = z.object({
  at: z.string(),
  status_code: z.number().int().nullable(),
  duration_ms: z.number().int(),
  error: z.string().nullable(),
});
export const deliverySchema = z.object({
  id: z.number().int(),
  delivery_id: z.string().describe('X-Svc-Delivery-ID / webhook-id: the same on every attempt'),
  subscription_id: z.number().int(),
  event: z.string(),
  event_id: z.string(),
  status: z.enum(['pending', 'delivered', 'failed']),
  attempts: z.number().int(),
  last_status_code: z.number().int().nullable(),
  response_time_ms: z.number().int().nullable(),
  next_attempt_at: z.string().nullable(),
  payload: z.record(z.string(), z.unknown()).describe('the body sent: {id, event, timestamp, project_id, data}'),
  attempt_history: z.array(attemptSchema),
  created_at: z.string(),
  updated_at: z.string(),
});
export type DeliveryResource = z.infer<typeof deliverySchema>;

export interface DeliveryFilter {
  projectId: number;
  subscriptionId?: number | undefined;
  event?: string | undefined;
  status?: DeliveryStatus | undefined;
  /** created_at at or after / before (ISO). */
  since?: string | undefined;
  until?: string | undefined;
}

/** How many attempts a row's history keeps (the count goes on). */
const HISTORY = 20;

export class Deliveries {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly feed: Feed,
  ) {}

  resource(r: DeliveryRow): DeliveryResource {
    return {
      id: r.id,
      delivery_id: r.uuid,
      subscription_id: r.subscription_id,
      event: r.event,
      event_id: r.event_id,
      status: r.status,
      attempts: r.attempts,
      last_status_code: r.last_status_code,
      response_time_ms: r.response_time_ms,
      next_attempt_at: r.next_attempt_at,
      payload: JSON.parse(r.payload) as Record<string, unknown>,
      attempt_history: JSON.parse(r.attempt_history) as Attempt[],
      created_at: r.created_at,
      updated_at: r.updated_at,
    };
  }

  get(id: number): DeliveryRow | null {
    return (
      (statement(this.db, 'SELECT * FROM webhook_deliveries WHERE id = ?').get(id) as DeliveryRow | undefined) ?? null
    );
  }

  /** The subscription's oldest pending delivery: the head of its queue (test events are not queued). */
  head(subscriptionId: number): DeliveryRow | null {
    return (
      (statement(
        this.db,
        "SELECT * FROM webhook_deliveries WHERE subscription_id = ? AND status = 'pending' AND event != 'webhook.test' ORDER BY id LIMIT 1",
      ).get(subscriptionId) as DeliveryRow | undefined) ?? null
    );
  }

  /** Pending rows per subscription (for /metrics). */
  pendingCounts(): Map<number, { pending: number; oldest: string | null }> {
    const rows = statement(
      this.db,
      "SELECT subscription_id AS s, COUNT(*) AS n, MIN(created_at) AS oldest FROM webhook_deliveries WHERE status = 'pending' GROUP BY subscription_id",
    ).all() as {
      s: number;
      n: number;
      oldest: string | null;
    }[];
    return new Map(rows.map((r) => [r.s, { pending: r.n, oldest: r.oldest }]));
  }

  /** Makes pending rows of the feed items for the subscription and moves its cursor past them, in one transaction. */
  take(subscriptionId: number, items: readonly FeedItem[], cursor: FeedCursor): number {
    const now = iso(this.clock.now());
    const insert = statement(
      this.db,
      "INSERT INTO webhook_deliveries (uuid, subscription_id, project_id, event, event_id, payload, status, next_attempt_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?)",
    );
    return writeTransaction(this.db, () => {
      for (const item of items) {
        const payload = JSON.stringify({
          id: item.id,
          event: item.event,
          timestamp: item.timestamp,
          project_id: item.projectId,
          data: item.data,
        });
        insert.run(randomUUID(), subscriptionId, item.projectId, item.event, item.id, payload, now, now, now);
      }
      this.feed.saveCursor(consumerOf(subscriptionId), cursor);
      return items.length;
    });
  }

  /** A webhook.test delivery for the subscription, outside its queue. */
  createTest(subscriptionId: number, projectId: number): DeliveryRow {
    const now = this.clock.now();
    const eventId = randomUUID();
    const payload = JSON.stringify({
      id: eventId,
      event: 'webhook.test',
      timestamp: iso(now),
      project_id: projectId,
      data: { subscription_id: subscriptionId, message: 'A test event from Gatehouse.' },
    });
    const id = Number(
      statement(
        this.db,
        "INSERT INTO webhook_deliveries (uuid, subscription_id, project_id, event, event_id, payload, status, created_at, updated_at) VALUES (?, ?, ?, 'webhook.test', ?, ?, 'pending', ?, ?)",
      ).run(randomUUID(), subscriptionId, projectId, eventId, payload, iso(now), iso(now)).lastInsertRowid,
    );
    return this.get(id)!;
  }

  /** Records an attempt and the row's new state. */
  record(id: number, attempt: Attempt, status: DeliveryStatus, nextAttemptAt: string | null): DeliveryRow {
    return writeTransaction(this.db, () => {
      const row = this.get(id);
      if (!row) throw new Error(`delivery ${id} is gone`);
      const history = [...(JSON.parse(row.attempt_history) as Attempt[]), attempt].slice(-HISTORY);
      statement(
        this.db,
        'UPDATE webhook_deliveries SET status = ?, attempts = attempts + 1, last_status_code = ?, response_time_ms = ?, next_attempt_at = ?, attempt_history = ?, updated_at = ? WHERE id = ?',
      ).run(status, attempt.status_code, attempt.duration_ms, nextAttemptAt, JSON.stringify(history), attempt.at, id);
      return this.get(id)!;
    });
  }

  list(filter: DeliveryFilter, offset: number, limit: number): { items: DeliveryRow[]; total: number } {
    const where = ['project_id = ?'];
    const args: unknown[] = [filter.projectId];
    if (filter.subscriptionId !== undefined) where.push('subscription_id = ?'), args.push(filter.subscriptionId);
    if (filter.event !== undefined) where.push('event = ?'), args.push(filter.event);
    if (filter.status !== undefined) where.push('status = ?'), args.push(filter.status);
    if (filter.since !== undefined) where.push('created_at >= ?'), args.push(filter.since);
    if (filter.until !== undefined) where.push('created_at < ?'), args.push(filter.until);
    const clause = where.join(' AND ');
    const total = statement(this.db, `SELECT COUNT(*) FROM webhook_deliveries WHERE ${clause}`)
      .pluck()
      .get(...args) as number;
    const items = statement(
      this.db,
      `SELECT * FROM webhook_deliveries WHERE ${clause} ORDER BY id DESC LIMIT ? OFFSET ?`,
    ).all(...args, limit, offset) as DeliveryRow[];
    return { items, total };
  }

  /** Delivered and failed rows older than `before`, then the
   * oldest past maxRows, go (pending ones stay: they are work). */
  prune(before: string, maxRows: number): number {
    return writeTransaction(this.db, () => {
      let removed = statement(
        this.db,
        "DELETE FROM webhook_deliveries WHERE created_at < ? AND status != 'pending'",
      ).run(before).changes;
      const count = statement(this.db, 'SELECT COUNT(*) FROM webhook_deliveries').pluck().get() as number;
      if (count > maxRows) {
        removed += statement(
          this.db,
          "DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries WHERE status != 'pending' ORDER BY id LIMIT ?)",
        ).run(count - maxRows).changes;
      }
      return removed;
    });
  }
}
