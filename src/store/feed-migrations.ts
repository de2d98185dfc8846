import type { Migration } from './migration.js';

// The durable feed and outgoing webhooks (docs/architecture.md, "The durable feed").

export const feedMigrations: readonly Migration[] = [
  {
    version: 15,
    name: 'durable feed: domain-event outbox, consumer cursors; outgoing webhooks',
    sql: `
      -- Domain events that consumers outside the process must not miss (webhooks, sync), each
      -- written in the same transaction as the change that makes it (events/unit-of-work.ts), or
      -- when observed for states (zone at capacity, reader offline). Ordered by seq.
      CREATE TABLE domain_events (
        seq INTEGER PRIMARY KEY,
        uuid TEXT NOT NULL UNIQUE,
        project_id INTEGER NOT NULL,
        event TEXT NOT NULL,
        data TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE INDEX domain_events_project ON domain_events(project_id, seq);
      -- How far each consumer has read the two ordered sources: access_events by id (ingest
      -- order) and domain_events by seq. A consumer's cursor moves in the same transaction as
      -- what it did with what it read.
      CREATE TABLE feed_cursors (
        consumer TEXT PRIMARY KEY,
        access_event_id INTEGER NOT NULL,
        domain_event_seq INTEGER NOT NULL
      );
      -- No new index on access_events: the feed reads it by id (its primary key) from a cursor,
      -- and every index there is paid for by the ingest of every scan.

      CREATE TABLE webhook_subscriptions (
        id INTEGER PRIMARY KEY,
        project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        user_id INTEGER REFERENCES users(id) ON DELETE SET NULL,
        url TEXT NOT NULL,
        events TEXT NOT NULL,
        signature_scheme TEXT NOT NULL CHECK (signature_scheme IN ('sha256', 'standard')),
        secret TEXT NOT NULL,
        previous_secret TEXT,
        previous_secret_until TEXT,
        active INTEGER NOT NULL DEFAULT 1,
        disabled_reason TEXT,
        failing_since TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE INDEX webhook_subscriptions_project ON webhook_subscriptions(project_id);

      -- One row per event sent to one subscription: made when the event is taken from the feed
      -- (pending), then delivered or failed; retries and resends keep the row and its uuid (the
      -- X-Svc-Delivery-ID a receiver deduplicates by).
      CREATE TABLE webhook_deliveries (
        id INTEGER PRIMARY KEY,
        uuid TEXT NOT NULL UNIQUE,
        subscription_id INTEGER NOT NULL REFERENCES webhook_subscriptions(id) ON DELETE CASCADE,
        project_id INTEGER NOT NULL,
        event TEXT NOT NULL,
        event_id TEXT NOT NULL,
        payload TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
        attempts INTEGER NOT NULL DEFAULT 0,
        last_status_code INTEGER,
        response_time_ms INTEGER,
        next_attempt_at TEXT,
        attempt_history TEXT NOT NULL DEFAULT '[]',
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE INDEX webhook_deliveries_subscription ON webhook_deliveries(subscription_id, id);
      CREATE INDEX webhook_deliveries_pending ON webhook_deliveries(subscription_id, id) WHERE status = 'pending';
      CREATE INDEX webhook_deliveries_project ON webhook_deliveries(project_id, id);
      CREATE INDEX webhook_deliveries_created ON webhook_deliveries(created_at);
    `,
  },
];
