import type { Migration } from './migration.js';
import { feedMigrations } from './feed-migrations.js';
import { syncMigrations } from './sync-migrations.js';
import { bridgeMigrations } from './bridge-migrations.js';
import { deviceAndWebhookMigrations } from './device-webhook-migrations.js';
import { accountMigrations } from './account-migrations.js';
import { credentialMigrations } from './credential-migrations.js';
// Ordered schema migrations; PRAGMA user_version records the last one applied.
// Append only: never edit a migration that has shipped. The core schema (accounts, the venue,
// access events) is here; later ones in a file per capability, in version order below.

const coreMigrations: readonly Migration[] = [
  {
    version: 1,
    name: 'accounts, projects, tokens, sessions, settings',
    sql: `
      CREATE TABLE users (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        email TEXT NOT NULL UNIQUE COLLATE NOCASE,
        password_hash TEXT NOT NULL,
        is_admin INTEGER NOT NULL DEFAULT 0,
        is_active INTEGER NOT NULL DEFAULT 1,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE TABLE teams (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        slug TEXT NOT NULL UNIQUE,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE TABLE projects (
        id INTEGER PRIMARY KEY,
        team_id INTEGER NOT NULL REFERENCES teams(id) ON DELETE RESTRICT,
        name TEXT NOT NULL,
        slug TEXT NOT NULL,
        timezone TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (team_id, slug)
      );
      CREATE TABLE team_members (
        user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        team_id INTEGER NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
        created_at TEXT NOT NULL,
        PRIMARY KEY (user_id, team_id)
      );
      CREATE TABLE project_members (
        user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        created_at TEXT NOT NULL,
        PRIMARY KEY (user_id, project_id)
      );
      CREATE TABLE personal_access_tokens (
        id INTEGER PRIMARY KEY,
        user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        token_hash BLOB NOT NULL,
        abilities TEXT NOT NULL,
        expires_at TEXT,
        last_used_at TEXT,
        created_at TEXT NOT NULL
      );
      CREATE INDEX personal_access_tokens_user ON personal_access_tokens(user_id);
      CREATE TABLE sessions (
        id_hash BLOB PRIMARY KEY,
        user_id INTEGER REFERENCES users(id) ON DELETE CASCADE,
        csrf_token TEXT NOT NULL,
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL
      );
      CREATE INDEX sessions_user ON sessions(user_id);
      CREATE TABLE settings (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
    `,
  },
  {
    version: 2,
    name: 'venue: change versions, tombstones, access zones, access points, readers',
    sql: `
      -- One monotonically increasing change version for the whole store; every write to a
      -- venue table takes the next one, and deletions leave a tombstone with theirs (sync reads
      -- both by cursor).
      CREATE TABLE change_sequence (id INTEGER PRIMARY KEY CHECK (id = 1), value INTEGER NOT NULL);
      INSERT INTO change_sequence (id, value) VALUES (1, 0);
      CREATE TABLE tombstones (
        id INTEGER PRIMARY KEY,
        project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        entity TEXT NOT NULL,
        entity_id INTEGER NOT NULL,
        version INTEGER NOT NULL,
        deleted_at TEXT NOT NULL
      );
      CREATE INDEX tombstones_project_version ON tombstones(project_id, version);
      CREATE TABLE access_zones (
        id INTEGER PRIMARY KEY,
        project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        slug TEXT NOT NULL,
        capacity INTEGER CHECK (capacity IS NULL OR capacity >= 0),
        requires_ticket INTEGER NOT NULL DEFAULT 0,
        current_count INTEGER NOT NULL DEFAULT 0 CHECK (current_count >= 0),
        version INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (project_id, slug)
      );
      CREATE INDEX access_zones_version ON access_zones(project_id, version);
      CREATE TABLE access_points (
        id INTEGER PRIMARY KEY,
        project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        access_zone_id INTEGER REFERENCES access_zones(id) ON DELETE RESTRICT,
        name TEXT NOT NULL,
        slug TEXT NOT NULL,
        location TEXT,
        direction TEXT NOT NULL CHECK (direction IN ('in', 'out', 'both')),
        is_active INTEGER NOT NULL DEFAULT 1,
        version INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (project_id, slug)
      );
      CREATE INDEX access_points_version ON access_points(project_id, version);
      CREATE INDEX access_points_zone ON access_points(access_zone_id);
      CREATE TABLE readers (
        id INTEGER PRIMARY KEY,
        project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        access_point_id INTEGER REFERENCES access_points(id) ON DELETE RESTRICT,
        identifier TEXT NOT NULL,
        type TEXT NOT NULL CHECK (type IN ('barcode', 'qr', 'rfid', 'nfc')),
        version INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (project_id, identifier)
      );
      CREATE INDEX readers_version ON readers(project_id, version);
      CREATE INDEX readers_access_point ON readers(access_point_id);
    `,
  },
  {
    version: 3,
    name: 'venue: attendee types and their zones, attendees, credentials',
    sql: `
      CREATE TABLE attendee_types (
        id INTEGER PRIMARY KEY,
        project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        slug TEXT NOT NULL,
        version INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (project_id, slug)
      );
      CREATE INDEX attendee_types_version ON attendee_types(project_id, version);
      CREATE TABLE attendee_type_zones (
        attendee_type_id INTEGER NOT NULL REFERENCES attendee_types(id) ON DELETE CASCADE,
        access_zone_id INTEGER NOT NULL REFERENCES access_zones(id) ON DELETE CASCADE,
        PRIMARY KEY (attendee_type_id, access_zone_id)
      );
      CREATE TABLE attendees (
        id INTEGER PRIMARY KEY,
        project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        attendee_type_id INTEGER REFERENCES attendee_types(id) ON DELETE RESTRICT,
        first_name TEXT NOT NULL,
        last_name TEXT NOT NULL,
        email TEXT,
        external_id TEXT,
        status TEXT NOT NULL CHECK (status IN ('active', 'cancelled')),
        extra TEXT NOT NULL DEFAULT '{}',
        version INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (project_id, external_id)
      );
      CREATE INDEX attendees_version ON attendees(project_id, version);
      CREATE INDEX attendees_email ON attendees(project_id, email COLLATE NOCASE);
      CREATE INDEX attendees_name ON attendees(project_id, last_name COLLATE NOCASE, first_name COLLATE NOCASE);
      CREATE TABLE credentials (
        id INTEGER PRIMARY KEY,
        project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        attendee_id INTEGER NOT NULL REFERENCES attendees(id) ON DELETE RESTRICT,
        value TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('barcode', 'qr', 'rfid', 'nfc')),
        status TEXT NOT NULL CHECK (status IN ('active', 'revoked')),
        valid_from TEXT,
        valid_until TEXT,
        revoked_at TEXT,
        version INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (project_id, value)
      );
      CREATE INDEX credentials_version ON credentials(project_id, version);
      CREATE INDEX credentials_attendee ON credentials(attendee_id);
    `,
  },
  {
    version: 4,
    name: 'venue: time restrictions, blocklist, forms and submissions',
    sql: `
      CREATE TABLE time_restrictions (
        id INTEGER PRIMARY KEY,
        project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        access_zone_id INTEGER NOT NULL REFERENCES access_zones(id) ON DELETE RESTRICT,
        attendee_type_id INTEGER REFERENCES attendee_types(id) ON DELETE RESTRICT,
        days_of_week TEXT NOT NULL,
        start_time TEXT NOT NULL,
        end_time TEXT NOT NULL,
        version INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE INDEX time_restrictions_version ON time_restrictions(project_id, version);
      CREATE INDEX time_restrictions_zone ON time_restrictions(access_zone_id);
      CREATE TABLE blocklist_entries (
        id INTEGER PRIMARY KEY,
        project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        attendee_id INTEGER REFERENCES attendees(id) ON DELETE RESTRICT,
        credential_id INTEGER REFERENCES credentials(id) ON DELETE RESTRICT,
        reason TEXT NOT NULL,
        until TEXT,
        version INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        CHECK ((attendee_id IS NULL) != (credential_id IS NULL))
      );
      CREATE INDEX blocklist_entries_version ON blocklist_entries(project_id, version);
      CREATE TABLE forms (
        id INTEGER PRIMARY KEY,
        project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        slug TEXT NOT NULL,
        fields TEXT NOT NULL,
        is_active INTEGER NOT NULL DEFAULT 1,
        version INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (project_id, slug)
      );
      CREATE INDEX forms_version ON forms(project_id, version);
      CREATE TABLE form_submissions (
        id INTEGER PRIMARY KEY,
        project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        form_id INTEGER NOT NULL REFERENCES forms(id) ON DELETE RESTRICT,
        attendee_id INTEGER REFERENCES attendees(id) ON DELETE SET NULL,
        data TEXT NOT NULL,
        version INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE INDEX form_submissions_form ON form_submissions(form_id, id);
      CREATE INDEX form_submissions_version ON form_submissions(project_id, version);
    `,
  },
  {
    version: 5,
    name: 'access events',
    sql: `
      -- One row per decision, committed before anyone is told about it (docs/architecture.md, the path of one scan).
      CREATE TABLE access_events (
        id INTEGER PRIMARY KEY,
        uuid TEXT NOT NULL UNIQUE,
        project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        access_point_id INTEGER NOT NULL,
        access_zone_id INTEGER,
        reader_id INTEGER,
        credential_id INTEGER,
        credential_value TEXT NOT NULL,
        attendee_id INTEGER,
        granted INTEGER NOT NULL,
        reason TEXT,
        movement TEXT,
        scanned_at TEXT NOT NULL,
        decided_at TEXT NOT NULL,
        source TEXT NOT NULL CHECK (source IN ('mqtt', 'webhook', 'bridge', 'api'))
      );
      CREATE INDEX access_events_project_time ON access_events(project_id, scanned_at);
      CREATE INDEX access_events_zone_time ON access_events(access_zone_id, scanned_at);
    `,
  },
  {
    version: 6,
    name: 'event log: request keys, moves, presence, analytics indexes',
    sql: `
      -- request_key: <scope>:<request_id>, so a retried scan is decided once (docs/engine.md).
      ALTER TABLE access_events ADD COLUMN request_key TEXT;
      -- from_zone_id: the zone an entry moved its holder out of; counted: 1 when the event
      -- changed the zone's occupancy. Together they make occupancy a running sum (analytics).
      ALTER TABLE access_events ADD COLUMN from_zone_id INTEGER;
      ALTER TABLE access_events ADD COLUMN counted INTEGER NOT NULL DEFAULT 0;
      CREATE UNIQUE INDEX access_events_request ON access_events(project_id, request_key) WHERE request_key IS NOT NULL;
      DROP INDEX access_events_project_time;
      CREATE INDEX access_events_project_summary ON access_events(project_id, scanned_at, granted, reason, access_zone_id, access_point_id, attendee_id);
      DROP INDEX access_events_zone_time; -- zone filters use the summary index
      CREATE INDEX access_events_zone_moves ON access_events(access_zone_id, movement, scanned_at, counted) WHERE granted = 1;
      CREATE INDEX access_events_from_zone ON access_events(from_zone_id, scanned_at) WHERE from_zone_id IS NOT NULL;
      -- Who was inside which zone as of access event last_event_id: a snapshot of the occupancy
      -- the log adds up to. At start the snapshot is loaded and the events after it replayed.
      CREATE TABLE zone_presence (
        attendee_id INTEGER PRIMARY KEY,
        access_zone_id INTEGER NOT NULL
      );
      CREATE TABLE zone_presence_mark (id INTEGER PRIMARY KEY CHECK (id = 1), last_event_id INTEGER NOT NULL);
      INSERT INTO zone_presence_mark (id, last_event_id) VALUES (1, 0);
    `,
  },
  {
    version: 7,
    name: 'generated credentials',
    sql: `
      -- Secrets the appliance makes for itself on first start when config does not give them
      -- (the Pusher app id, key and secret: docs/realtime.md). Never served by a route.
      CREATE TABLE generated_credentials (
        name TEXT PRIMARY KEY,
        value TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
    `,
  },
  {
    version: 28,
    name: "re-entry per zone, and a denial's reason_detail",
    sql: `
      -- Anti-passback is a choice of each zone, off unless asked for (docs/engine.md; it was a
      -- box-wide setting, access.antiPassback, on by default: docs/decisions.md, "Re-entry and
      -- every scan's event"). Existing zones start without it, as the spec's checks have no
      -- re-entry rule; a zone that should refuse re-entry is set so over REST.
      ALTER TABLE access_zones ADD COLUMN anti_passback INTEGER NOT NULL DEFAULT 0;
      -- Which cause of not_authorized refused a scan (type_not_permitted, already_inside,
      -- access_point_inactive, access_point_without_zone); null for every other decision and
      -- for events stored before this column.
      ALTER TABLE access_events ADD COLUMN reason_detail TEXT;
    `,
  },
];

// Each subject's file keeps its own migrations; they run in version order.
export const migrations: readonly Migration[] = [
  ...coreMigrations,
  ...deviceAndWebhookMigrations,
  ...feedMigrations,
  ...syncMigrations,
  ...bridgeMigrations,
  ...accountMigrations,
  ...credentialMigrations,
].sort((a, b) => a.version - b.version);
