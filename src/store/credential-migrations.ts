import type { Migration } from './migration.js';

// Signed credentials (docs/credentials.md).
export const credentialMigrations: readonly Migration[] = [
  {
    version: 29,
    name: 'signed credentials: project keys, the project default, access events decided from a signature',
    sql: `
      -- A project's Ed25519 keys. One signs (status signing) on a cloud or a standalone box; the
      -- keys before it still verify (verifying) until retired (retired: its values are refused,
      -- with that reason). public_key: the 32 raw bytes in base64url, what edges and REST carry.
      -- private_key: PKCS#8 DER in base64, never in a log, an answer or a download; null on an
      -- edge, which holds public keys only. Replicated to edges like the venue's rows (version).
      CREATE TABLE credential_keys (
        id INTEGER PRIMARY KEY,
        project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        public_key TEXT NOT NULL,
        private_key TEXT,
        status TEXT NOT NULL CHECK (status IN ('signing', 'verifying', 'retired')),
        retired_at TEXT,
        version INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE INDEX credential_keys_version ON credential_keys(project_id, version);
      CREATE UNIQUE INDEX credential_keys_signing ON credential_keys(project_id) WHERE status = 'signing';
      -- Whether a credential issued without saying is signed (credentials.signedByDefault).
      ALTER TABLE projects ADD COLUMN signed_credentials_by_default INTEGER NOT NULL DEFAULT 0;
      -- 1: decided from a signed value the box did not hold, its claims verified offline.
      ALTER TABLE access_events ADD COLUMN offline_verified INTEGER NOT NULL DEFAULT 0;
    `,
  },
  {
    version: 30,
    name: 'sync: the protocol version agreed at the hello',
    sql: `
      -- The sync protocol version agreed at the edge's last hello (null: 1, before this column);
      -- its download cursors were moved under it. Pages of protocol 1 carry no public keys: an
      -- edge whose cloud starts speaking 2 pulls again from the start, so the keys it skipped
      -- arrive (docs/sync.md: protocol versions).
      ALTER TABLE sync_link ADD COLUMN agreed_protocol INTEGER;
    `,
  },
];
