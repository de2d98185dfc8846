import type { Migration } from './migration.js';

// Devices on the broker, incoming webhooks, the access-event journal's position and changes by
// other processes, after the core schema of migrations.ts. Append only.

export const deviceAndWebhookMigrations: readonly Migration[] = [
  {
    version: 8,
    name: 'devices: reader logins, device tokens, gateways',
    sql: `
      -- Reader login (spec: Authentication item 8, docs/mqtt.md): a one-time password staff read
      -- out to whoever sets the reader up. The otp is kept in clear only while pending (staff
      -- list it); it is blanked when used, locked, superseded or expired.
      CREATE TABLE reader_logins (
        id INTEGER PRIMARY KEY,
        project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        reader_id INTEGER NOT NULL REFERENCES readers(id) ON DELETE CASCADE,
        otp TEXT,
        status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'used', 'locked', 'superseded', 'expired')),
        attempts INTEGER NOT NULL DEFAULT 0,
        requested_ip TEXT,
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        used_at TEXT
      );
      CREATE INDEX reader_logins_reader ON reader_logins(reader_id, status);
      CREATE INDEX reader_logins_project ON reader_logins(project_id, status);
      -- Gateways: hardware that fronts readers and reports their state (spec: mqtt-gateway-status).
      CREATE TABLE gateways (
        id INTEGER PRIMARY KEY,
        project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        identifier TEXT NOT NULL,
        name TEXT,
        status TEXT NOT NULL DEFAULT 'unknown',
        last_seen TEXT,
        last_report TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (project_id, identifier)
      );
      ALTER TABLE readers ADD COLUMN gateway_id INTEGER REFERENCES gateways(id) ON DELETE SET NULL;
      -- MQTT credentials of readers and gateways: "<kind>:<id>:<secret>" shown once, SHA-256 kept.
      CREATE TABLE device_tokens (
        id INTEGER PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ('reader', 'gateway')),
        device_id INTEGER NOT NULL,
        project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        token_hash BLOB NOT NULL,
        created_at TEXT NOT NULL,
        expires_at TEXT
      );
      CREATE INDEX device_tokens_device ON device_tokens(kind, device_id);
    `,
  },
  {
    version: 9,
    name: 'incoming webhooks: sources and the request log',
    sql: `
      -- Who may post which incoming webhook, per project (docs/webhooks-incoming.md). The secret is
      -- kept readable: an HMAC is verified by computing it. previous_secret verifies until
      -- previous_secret_expires_at after a rotation.
      CREATE TABLE webhook_sources (
        id INTEGER PRIMARY KEY,
        project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        kind TEXT NOT NULL CHECK (kind IN ('access-event', 'gateway-status', 'registration-partner', 'attendee-sync', 'upload-finalized')),
        name TEXT NOT NULL,
        secret TEXT NOT NULL,
        previous_secret TEXT,
        previous_secret_expires_at TEXT,
        ip_allowlist TEXT NOT NULL DEFAULT '[]',
        enabled INTEGER NOT NULL DEFAULT 1,
        rate_limit_per_minute INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE INDEX webhook_sources_project ON webhook_sources(project_id);
      -- Every incoming webhook request (spec: incoming webhook log entry), bounded by retention.
      CREATE TABLE incoming_webhook_log (
        id INTEGER PRIMARY KEY,
        endpoint TEXT NOT NULL,
        method TEXT NOT NULL,
        status INTEGER NOT NULL,
        source_ip TEXT NOT NULL,
        received_at TEXT NOT NULL,
        response_time_ms REAL NOT NULL,
        source_id INTEGER,
        project_id INTEGER,
        reason TEXT,
        body_head TEXT
      );
      CREATE INDEX incoming_webhook_log_project ON incoming_webhook_log(project_id, id);
      CREATE INDEX incoming_webhook_log_received ON incoming_webhook_log(received_at);
    `,
  },
  {
    version: 10,
    name: 'incoming webhooks: registration partner events and check-ins',
    sql: `
      -- Registration partner events applied, one row per event_id and project, written in the
      -- same transaction as the event's changes: a replayed event_id is acknowledged and not
      -- applied again (docs/webhooks-incoming.md). Kept; the partner sends few.
      CREATE TABLE partner_events (
        project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        event_id TEXT NOT NULL,
        event_type TEXT NOT NULL,
        registration_id TEXT NOT NULL,
        outcome TEXT NOT NULL,
        attendee_id INTEGER REFERENCES attendees(id) ON DELETE SET NULL,
        received_at TEXT NOT NULL,
        PRIMARY KEY (project_id, event_id)
      );
      CREATE INDEX partner_events_attendee ON partner_events(attendee_id); -- ON DELETE SET NULL looks here
      -- attendee.checked_in as the partner reports it: a record, not an access event (it moves
      -- nobody into a zone and changes no occupancy).
      CREATE TABLE check_ins (
        id INTEGER PRIMARY KEY,
        project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        attendee_id INTEGER REFERENCES attendees(id) ON DELETE SET NULL,
        registration_id TEXT NOT NULL,
        event_id TEXT NOT NULL,
        checked_in_at TEXT NOT NULL,
        received_at TEXT NOT NULL
      );
      CREATE INDEX check_ins_attendee ON check_ins(attendee_id);
      CREATE INDEX check_ins_project ON check_ins(project_id, checked_in_at);
    `,
  },
  {
    version: 11,
    name: 'incoming webhooks: finalised uploads',
    sql: `
      -- large-upload-finalized notices and the attendee imports they queued (docs/webhooks-incoming.md).
      CREATE TABLE finalized_uploads (
        id INTEGER PRIMARY KEY,
        project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        bucket TEXT NOT NULL,
        name TEXT NOT NULL,
        content_type TEXT,
        size INTEGER,
        time_created TEXT,
        status TEXT NOT NULL CHECK (status IN ('recorded', 'queued', 'imported', 'failed')),
        report TEXT,
        received_at TEXT NOT NULL,
        finished_at TEXT
      );
      CREATE INDEX finalized_uploads_project ON finalized_uploads(project_id, id);
    `,
  },
  {
    version: 12,
    name: 'access-event journal position',
    sql: `
      -- How far the ingest worker has taken the access-event journal into access_events
      -- (segment number and byte offset), written in the same transaction as the rows
      -- (journal/event-journal.ts, docs/storage.md).
      CREATE TABLE event_journal_position (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        segment INTEGER NOT NULL,
        offset INTEGER NOT NULL
      );
      INSERT INTO event_journal_position (id, segment, offset) VALUES (1, 0, 0);
    `,
  },
  {
    version: 13,
    name: 'venue changes made by other processes',
    sql: `
      -- Counted up by a CLI command that changed venue data (a change version was taken), so a
      -- running appliance reads those changes into its decision index (access/external-changes.ts).
      CREATE TABLE external_changes (id INTEGER PRIMARY KEY CHECK (id = 1), value INTEGER NOT NULL);
      INSERT INTO external_changes (id, value) VALUES (1, 0);
    `,
  },
  {
    version: 14,
    name: 'incoming webhooks: durable receipts, and the log budgets',
    sql: `
      -- Accepted webhook deliveries, remembered for each endpoint's window so a captured one sent
      -- again later is not applied again (webhooks/receipts.ts): keyed by the
      -- source and the SHA-256 of the body (or of the Standard Webhooks webhook-id), with the first
      -- answer when it is small enough to give again. keep_until is accepted_at plus the endpoint's
      -- window; the id orders the row-count bound (oldest first).
      CREATE TABLE webhook_receipts (
        id INTEGER PRIMARY KEY,
        source_id INTEGER NOT NULL REFERENCES webhook_sources(id) ON DELETE CASCADE,
        digest BLOB NOT NULL,
        accepted_at INTEGER NOT NULL,
        keep_until INTEGER NOT NULL,
        status INTEGER NOT NULL,
        answer TEXT,
        content_type TEXT
      );
      CREATE UNIQUE INDEX webhook_receipts_key ON webhook_receipts(source_id, digest);
      CREATE INDEX webhook_receipts_keep_until ON webhook_receipts(keep_until);
      -- The log's two row budgets: requests that applied something (reason
      -- NULL) and those that did not (refused, or a retry answered again), each pruned newest-kept.
      CREATE INDEX incoming_webhook_log_applied ON incoming_webhook_log(id) WHERE reason IS NULL;
      CREATE INDEX incoming_webhook_log_not_applied ON incoming_webhook_log(id) WHERE reason IS NOT NULL;
    `,
  },
];
