import type { Migration } from './migration.js';

// Cloud sync (docs/sync.md).

export const syncMigrations: readonly Migration[] = [
  {
    version: 16,
    name: 'cloud sync: edges, applied changes, conflicts, the edge link state, access-event provenance and flags',
    sql: `
      -- On the cloud: the edges it serves, each with a sync token (SHA-256 kept) scoped to one project.
      CREATE TABLE sync_edges (
        id INTEGER PRIMARY KEY,
        project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        token_hash BLOB NOT NULL,
        revoked_at TEXT,
        last_contact_at TEXT,
        last_upload_at TEXT,
        protocol_version INTEGER,
        app_version TEXT,
        backlog INTEGER,
        clock_offset_ms INTEGER,
        created_at TEXT NOT NULL
      );
      CREATE INDEX sync_edges_project ON sync_edges(project_id);
      -- On the cloud: the uploaded change items (not access events, which are unique by their own
      -- uuid) already applied, so a batch sent again applies nothing twice.
      CREATE TABLE sync_applied_changes (
        uuid TEXT PRIMARY KEY,
        edge_id INTEGER NOT NULL,
        applied_at TEXT NOT NULL
      );
      -- Flagged access events (duplicate entries, admissions after a revocation) and field
      -- conflicts of attendees changed on both sides, for review.
      CREATE TABLE sync_conflicts (
        id INTEGER PRIMARY KEY,
        project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        kind TEXT NOT NULL CHECK (kind IN ('duplicate_entry', 'revoked_credential', 'blocklisted', 'attendee_field', 'credential_value')),
        edge_id INTEGER,
        event_uuid TEXT,
        related_uuid TEXT,
        entity TEXT,
        entity_id INTEGER,
        field TEXT,
        edge_value TEXT,
        cloud_value TEXT,
        created_at TEXT NOT NULL,
        reviewed_at TEXT
      );
      CREATE INDEX sync_conflicts_project ON sync_conflicts(project_id, id);
      -- On an edge: its link to the cloud (one row once linked).
      CREATE TABLE sync_link (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        edge_id INTEGER NOT NULL,
        project_id INTEGER NOT NULL,
        cloud_project_id INTEGER NOT NULL,
        download_cursor TEXT,
        revocation_cursor TEXT,
        last_upload_at TEXT,
        last_download_at TEXT,
        clock_offset_ms INTEGER
      );
      -- Where an access event was decided (null: here), when it reached this box, the edge's clock
      -- offset measured at its last contact, and flags set on the cloud.
      ALTER TABLE access_events ADD COLUMN edge_id INTEGER;
      ALTER TABLE access_events ADD COLUMN uploaded_at TEXT;
      ALTER TABLE access_events ADD COLUMN clock_offset_ms INTEGER;
      ALTER TABLE access_events ADD COLUMN clock_unsynchronised INTEGER;
      ALTER TABLE access_events ADD COLUMN duplicate_of TEXT;
      ALTER TABLE access_events ADD COLUMN review TEXT;
    `,
  },
  {
    version: 19,
    name: 'cloud sync: refused changes among the conflicts',
    sql: `
      -- An edge's change the cloud could not apply as sent (docs/sync.md: conflicts): a field
      -- naming what the cloud no longer has or gave someone else, or a change its store refused;
      -- detail says why in words.
      -- SQLite cannot widen a CHECK in place: the table is made again with the same rows.
      CREATE TABLE sync_conflicts_new (
        id INTEGER PRIMARY KEY,
        project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        kind TEXT NOT NULL CHECK (kind IN ('duplicate_entry', 'revoked_credential', 'blocklisted', 'attendee_field', 'credential_value', 'refused_change')),
        edge_id INTEGER,
        event_uuid TEXT,
        related_uuid TEXT,
        entity TEXT,
        entity_id INTEGER,
        field TEXT,
        edge_value TEXT,
        cloud_value TEXT,
        detail TEXT,
        created_at TEXT NOT NULL,
        reviewed_at TEXT
      );
      INSERT INTO sync_conflicts_new (id, project_id, kind, edge_id, event_uuid, related_uuid, entity, entity_id, field, edge_value, cloud_value, created_at, reviewed_at) SELECT id, project_id, kind, edge_id, event_uuid, related_uuid, entity, entity_id, field, edge_value, cloud_value, created_at, reviewed_at FROM sync_conflicts;
      DROP TABLE sync_conflicts;
      ALTER TABLE sync_conflicts_new RENAME TO sync_conflicts;
      CREATE INDEX sync_conflicts_project ON sync_conflicts(project_id, id);
    `,
  },
  {
    version: 20,
    name: 'cloud sync: conflicts for reused ids, rows deleted on the other side, events naming deleted rows; flags cleared',
    sql: `
      -- New kinds (docs/sync.md: conflicts): id_conflict (an edge created a row under an id the
      -- cloud already holds: never an overwrite), deleted_row (a row edited on one side and
      -- deleted on the other), deleted_reference (an access event naming a reader, access point
      -- or zone the cloud deleted meanwhile). cleared_at: a flag a later arrival explained
      -- (a double entry whose missing exit arrived), kept for the record.
      -- SQLite cannot widen a CHECK in place: the table is made again with the same rows.
      CREATE TABLE sync_conflicts_new (
        id INTEGER PRIMARY KEY,
        project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        kind TEXT NOT NULL CHECK (kind IN ('duplicate_entry', 'revoked_credential', 'blocklisted', 'attendee_field', 'credential_value', 'refused_change', 'id_conflict', 'deleted_row', 'deleted_reference')),
        edge_id INTEGER,
        event_uuid TEXT,
        related_uuid TEXT,
        entity TEXT,
        entity_id INTEGER,
        field TEXT,
        edge_value TEXT,
        cloud_value TEXT,
        detail TEXT,
        created_at TEXT NOT NULL,
        reviewed_at TEXT,
        cleared_at TEXT
      );
      INSERT INTO sync_conflicts_new (id, project_id, kind, edge_id, event_uuid, related_uuid, entity, entity_id, field, edge_value, cloud_value, detail, created_at, reviewed_at)
        SELECT id, project_id, kind, edge_id, event_uuid, related_uuid, entity, entity_id, field, edge_value, cloud_value, detail, created_at, reviewed_at FROM sync_conflicts;
      DROP TABLE sync_conflicts;
      ALTER TABLE sync_conflicts_new RENAME TO sync_conflicts;
      CREATE INDEX sync_conflicts_project ON sync_conflicts(project_id, id);
    `,
  },
  {
    version: 21,
    name: "cloud sync: the edge's replica keeps each row's newest cloud version applied",
    sql: `
      -- On an edge (docs/sync.md: the edge's replica): per replicated row, the newest cloud change
      -- version applied to it, a deletion's included. A downloaded change is applied only when its
      -- version is newer, whichever path brought it, so a page fetched before a revocation never
      -- undoes it. A table of its own rather than a column: a deletion leaves no row to hold its
      -- version, and the venue tables stay as the cloud and local writes know them. Empty at first
      -- on an edge upgraded in place: a row with no version held is taken. Empty on a cloud.
      CREATE TABLE replica_versions (
        entity TEXT NOT NULL,
        id INTEGER NOT NULL,
        cloud_version INTEGER NOT NULL,
        PRIMARY KEY (entity, id)
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 22,
    name: 'shared ids: a high-water mark per table and block that survives deletes; tombstones by entity id',
    sql: `
      -- An id is never given twice in its block (docs/sync.md: ids): the highest id given or
      -- seen per table (attendees, credentials) and block (edge_id × 2^32; 0 for the cloud's
      -- own rows), kept when the row goes. Seeded from the rows and the deletions on record.
      CREATE TABLE row_id_marks (
        table_name TEXT NOT NULL,
        block_base INTEGER NOT NULL,
        high INTEGER NOT NULL,
        PRIMARY KEY (table_name, block_base)
      ) WITHOUT ROWID;
      INSERT INTO row_id_marks (table_name, block_base, high)
        SELECT 'attendees', (id / 4294967296) * 4294967296 AS block, MAX(id) FROM (
          SELECT id FROM attendees UNION ALL SELECT entity_id FROM tombstones WHERE entity = 'attendee'
        ) AS ids WHERE id > 0 GROUP BY block;
      INSERT INTO row_id_marks (table_name, block_base, high)
        SELECT 'credentials', (id / 4294967296) * 4294967296 AS block, MAX(id) FROM (
          SELECT id FROM credentials UNION ALL SELECT entity_id FROM tombstones WHERE entity = 'credential'
        ) AS ids WHERE id > 0 GROUP BY block;
      -- The cloud asks whether an uploaded create names an id it deleted before.
      CREATE INDEX tombstones_entity_id ON tombstones(entity, entity_id);
    `,
  },
  {
    version: 23,
    name: 'cloud sync: access events naming a reader, access point or zone the cloud deleted',
    sql: `
      -- On the cloud: what an uploaded access event names that the cloud no longer has
      -- (docs/sync.md: conflicts, deleted_reference), comma-separated in the order reader,
      -- access_point, access_zone. A column of its own, not review: an event can be both.
      ALTER TABLE access_events ADD COLUMN deleted_reference TEXT;
    `,
  },
  {
    version: 24,
    name: "access events: the scan time on the cloud's clock (effective_at), for ordering an edge's events among others",
    sql: `
      -- An edge's raw scan time corrected by the clock offset in force when it decided, when
      -- its clock was off (docs/sync.md: clocks); the raw time stays as it was. Ordering a
      -- holder's movements, double entries and admissions after a revocation use it. A clock
      -- within the tolerance keeps its own time: its offset is within the measurement's own
      -- error (half a round trip), and correcting by it would misorder events a moment apart.
      -- Computed, never stored (a VIRTUAL column), so no row is rewritten.
      ALTER TABLE access_events ADD COLUMN effective_at TEXT GENERATED ALWAYS AS (
        CASE WHEN clock_unsynchronised = 1 AND clock_offset_ms IS NOT NULL AND clock_offset_ms != 0
        THEN strftime('%Y-%m-%dT%H:%M:%fZ', scanned_at, printf('%+.3f seconds', clock_offset_ms / 1000.0)) ELSE scanned_at END
      ) VIRTUAL;
    `,
    // PostgreSQL has stored generated columns only, from immutable expressions, and no strftime:
    // the same time, in the same format, from a function declared immutable (an ISO-8601 time in
    // UTC reads the same whatever the session's settings).
    postgres: `
      CREATE FUNCTION gatehouse_effective_at(scanned TEXT, offset_ms BIGINT) RETURNS TEXT
        LANGUAGE sql IMMUTABLE PARALLEL SAFE
        RETURN to_char((scanned::timestamptz + offset_ms * interval '1 millisecond') AT TIME ZONE 'UTC',
          'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
      ALTER TABLE access_events ADD COLUMN effective_at TEXT GENERATED ALWAYS AS (
        CASE WHEN clock_unsynchronised = 1 AND clock_offset_ms IS NOT NULL AND clock_offset_ms != 0
        THEN gatehouse_effective_at(scanned_at, clock_offset_ms) ELSE scanned_at END
      ) STORED;
    `,
  },
  {
    version: 26,
    name: "cloud sync: conflicts for access events naming what the edge's project does not hold",
    sql: `
      -- A new kind (docs/sync.md: conflicts): unknown_reference, an uploaded access event naming
      -- an attendee, credential, reader, access point or zone its edge's project never held (its
      -- event is kept, flagged review = 'unknown_reference', and moves no count). As migration 20,
      -- the table is made again with the same rows to widen the CHECK.
      CREATE TABLE sync_conflicts_new (
        id INTEGER PRIMARY KEY,
        project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        kind TEXT NOT NULL CHECK (kind IN ('duplicate_entry', 'revoked_credential', 'blocklisted', 'attendee_field', 'credential_value', 'refused_change', 'id_conflict', 'deleted_row', 'deleted_reference', 'unknown_reference')),
        edge_id INTEGER,
        event_uuid TEXT,
        related_uuid TEXT,
        entity TEXT,
        entity_id INTEGER,
        field TEXT,
        edge_value TEXT,
        cloud_value TEXT,
        detail TEXT,
        created_at TEXT NOT NULL,
        reviewed_at TEXT,
        cleared_at TEXT
      );
      INSERT INTO sync_conflicts_new SELECT id, project_id, kind, edge_id, event_uuid, related_uuid, entity, entity_id, field, edge_value, cloud_value, detail, created_at, reviewed_at, cleared_at FROM sync_conflicts;
      DROP TABLE sync_conflicts;
      ALTER TABLE sync_conflicts_new RENAME TO sync_conflicts;
      CREATE INDEX sync_conflicts_project ON sync_conflicts(project_id, id);
    `,
  },
  {
    version: 25,
    name: 'cloud sync: what a cloud holds of each edge, what an edge knows the cloud holds, a cloud found behind an edge',
    sql: `
      -- On the cloud: the edge's feed position just past the last batch it stored, written in
      -- that batch's transaction (docs/sync.md: a cloud restored from a backup). A restored
      -- cloud answers an older one in hello, and the edge sends again from there.
      ALTER TABLE sync_edges ADD COLUMN uploaded_access_event_id INTEGER;
      ALTER TABLE sync_edges ADD COLUMN uploaded_domain_event_seq INTEGER;
      -- On an edge: the position it sent with the last batch the cloud acknowledged (what the
      -- cloud should hold); whether a pull from the start is running after the cloud was found
      -- behind (rows it no longer sends are removed once the pull is through); and the last time
      -- the cloud was found behind, with what was done.
      ALTER TABLE sync_link ADD COLUMN acked_access_event_id INTEGER;
      ALTER TABLE sync_link ADD COLUMN acked_domain_event_seq INTEGER;
      ALTER TABLE sync_link ADD COLUMN resync_pending INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE sync_link ADD COLUMN cloud_rollback_at TEXT;
      ALTER TABLE sync_link ADD COLUMN cloud_rollback_resent INTEGER;
      ALTER TABLE sync_link ADD COLUMN cloud_rollback_pulled INTEGER;
    `,
  },
  {
    version: 27,
    name: 'cloud sync: who issued each edge, and edges suspended when their issuer lost access',
    sql: `
      -- The user whose access an edge's sync token stands on (docs/sync.md: edges and their
      -- issuers). Null once that user is deleted: an edge without an issuer is suspended.
      ALTER TABLE sync_edges ADD COLUMN issued_by INTEGER REFERENCES users(id) ON DELETE SET NULL;
      -- Set when the issuer lost access to the project (deactivated, removed, demoted, deleted);
      -- the edge is refused until an administrator re-confirms it and becomes its issuer.
      ALTER TABLE sync_edges ADD COLUMN suspended_at TEXT;
      ALTER TABLE sync_edges ADD COLUMN suspended_reason TEXT;
      -- Edges issued before anyone was recorded: the first active administrator's (decision in
      -- docs/decisions.md); with none, no issuer, so suspended until re-confirmed.
      UPDATE sync_edges SET issued_by = (SELECT MIN(id) FROM users WHERE is_admin = 1 AND is_active = 1);
      CREATE INDEX sync_edges_issued_by ON sync_edges(issued_by);
    `,
  },
];
