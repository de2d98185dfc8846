import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { describe, expect, it } from 'vitest';

// Each table has its owner (docs/architecture.md: tables and their owners): only the owner's
// source text writes it (INSERT, UPDATE, DELETE, REPLACE); everyone else calls the owner. The
// seam a second database would need. In the spirit of test/store/transactions.test.ts: the
// source of src/ and the wings is read and every write of a table outside its owner is named.

interface Owner {
  /** Files, or folders (ending in /), relative to the repository. */
  owners: readonly string[];
  /** Why a table has more than one owner, or none. */
  reason?: string;
}

const VENUE = 'src/venue/';

/** Every table the migrations create, and who writes it. */
const OWNERS: Record<string, Owner> = {
  // The venue model: every write takes a change version (src/venue/versioned-table.ts).
  access_zones: { owners: [VENUE] },
  access_points: { owners: [VENUE] },
  readers: { owners: [VENUE] },
  attendee_types: { owners: [VENUE] },
  attendee_type_zones: { owners: [VENUE] },
  attendees: { owners: [VENUE] },
  credentials: { owners: [VENUE] },
  time_restrictions: { owners: [VENUE] },
  blocklist_entries: { owners: [VENUE] },
  forms: { owners: [VENUE] },
  form_submissions: { owners: [VENUE] },
  tombstones: { owners: [VENUE] },
  // A project's signing keys (docs/credentials.md); the edge's replica writes their public part.
  credential_keys: { owners: [VENUE] },
  row_id_marks: { owners: ['src/venue/row-ids.ts'] },
  change_sequence: { owners: ['src/venue/versioned-table.ts'] },
  external_changes: {
    owners: [],
    reason: 'made by migration 13 and no longer written (access/external-changes.ts polls change_sequence)',
  },
  // The access events and the journal's position.
  access_events: { owners: ['src/journal/access-event-rows.ts'] },
  event_journal_position: { owners: ['src/journal/journal-format.ts'] },
  zone_presence: { owners: ['src/access/presence.ts'] },
  zone_presence_mark: { owners: ['src/access/presence.ts'] },
  // The durable feed.
  domain_events: { owners: ['src/feed/outbox.ts'] },
  feed_cursors: { owners: ['src/feed/feed.ts'] },
  // Accounts and auth.
  users: { owners: ['src/accounts/users.ts'] },
  teams: { owners: ['src/accounts/teams.ts'] },
  projects: { owners: ['src/accounts/projects.ts'] },
  team_members: { owners: ['src/accounts/memberships.ts'] },
  project_members: { owners: ['src/accounts/memberships.ts'] },
  settings: { owners: ['src/accounts/settings.ts'] },
  sessions: { owners: ['src/auth/sessions.ts'] },
  personal_access_tokens: { owners: ['src/auth/tokens.ts'] },
  generated_credentials: { owners: ['src/realtime/credentials.ts'] },
  // Devices.
  device_tokens: { owners: ['src/devices/device-tokens.ts'] },
  reader_logins: { owners: ['src/devices/reader-logins.ts'] },
  gateways: { owners: ['src/devices/gateways.ts'] },
  bridge_devices: { owners: ['src/devices/bridge-devices.ts'] },
  // Incoming webhooks.
  webhook_sources: { owners: ['src/webhooks/sources.ts'] },
  webhook_receipts: { owners: ['src/webhooks/receipts.ts'] },
  incoming_webhook_log: { owners: ['src/webhooks/request-log.ts'] },
  finalized_uploads: { owners: ['src/webhooks/upload-imports.ts'] },
  partner_events: { owners: ['src/webhooks/registration-partner.ts'] },
  check_ins: { owners: ['src/webhooks/registration-partner.ts'] },
  // Outgoing webhooks.
  webhook_subscriptions: { owners: ['src/outgoing-webhooks/subscriptions.ts'] },
  webhook_deliveries: { owners: ['src/outgoing-webhooks/deliveries.ts'] },
  // Cloud sync (the wing).
  sync_edges: { owners: ['sync/edges.ts'] },
  sync_link: { owners: ['sync/link-state.ts'] },
  sync_conflicts: { owners: ['sync/conflicts.ts'] },
  sync_applied_changes: { owners: ['sync/upload-changes.ts'] },
  replica_versions: { owners: ['sync/replica.ts'] },
};

/** Tables that must have one owner module (or, for the venue's, the venue folder) and no exception. */
const SINGLE_OWNER = ['attendees', 'credentials', 'change_sequence', 'domain_events', 'access_events'];

/** Files whose SQL names its table at run time (`INSERT INTO ${table}`): the venue's generic writers, over venue tables only. */
const DYNAMIC_WRITERS: Record<string, string> = {
  'src/venue/versioned-table.ts': 'VersionedTable: the project-scoped venue tables, each built in src/venue/',
  'src/venue/attendee-writer.ts': 'attendees and credentials, by column set',
  'src/venue/replica-rows.ts': "the edge replica's venue tables (checked against its list)",
};

/** Not writers of the domain's rows: store tools that name tables at run time. */
const STORE_TOOLS: Record<string, string> = {
  'src/cli/cloud-migrate.ts': 'gatehouse cloud migrate: every table copied as it is into an empty PostgreSQL database',
  'src/store/postgres/dialect.ts': "translates the services' statements for PostgreSQL; runs none",
};

interface Write {
  verb: string;
  /** The table, or `${` / `' +` when it is named at run time. */
  table: string;
  at: number;
}

const CONFLICT = String.raw`(?:\s+OR\s+(?:IGNORE|REPLACE|ABORT|FAIL|ROLLBACK))?`;
const TARGET = String.raw`\s+\\?["\x60\[]?(\w+|\$\{|['"\x60]\s*\+)`;
// An UPDATE is one only with SET right after its table: plain English ("update the rows") is no write.
const UPDATE_TARGET = String.raw`\s+\\?["\x60\[]?(\w+(?=\\?["\x60\]]?\s+SET\b)|\$\{[^}]*\}(?=\s+SET\b)|['"\x60]\s*\+)`;
const WRITE = new RegExp(
  String.raw`\b(INSERT${CONFLICT}\s+INTO|REPLACE\s+INTO|DELETE\s+FROM)${TARGET}|\b(UPDATE${CONFLICT})${UPDATE_TARGET}`,
  'gi',
);

/** The table writes in `source`, across whitespace and newlines, in any case. */
function tableWrites(source: string): Write[] {
  return [...source.matchAll(WRITE)].map((m) => {
    const verb = (m[1] ?? m[3])!.replace(/\s+/g, ' ').toUpperCase();
    const target = (m[2] ?? m[4])!;
    return { verb, table: /^\w+$/.test(target) ? target.toLowerCase() : target.slice(0, 2), at: m.index };
  });
}

/** A write whose table is named at run time. */
function isDynamic(w: Write): boolean {
  return !/^\w+$/.test(w.table);
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'node_modules' ? [] : sourceFiles(path);
    return /\.(ts|mts|js|mjs)$/.test(name) ? [path] : [];
  });
}

const posix = (path: string) => path.split(sep).join('/');
const ownedBy = (file: string, owners: readonly string[]) =>
  owners.some((o) => (o.endsWith('/') ? file.startsWith(o) : file === o));
const isMigration = (file: string) => /^src\/store\/[\w-]*migrations\.ts$/.test(file);

/** The tables the migrations create (a table made to replace another and renamed to it counts under its final name). */
function migratedTables(): string[] {
  const text = readdirSync('src/store')
    .filter((f) => f.endsWith('migrations.ts'))
    .map((f) => readFileSync(join('src/store', f), 'utf8'))
    .join('\n');
  const renamed = new Set([...text.matchAll(/ALTER TABLE (\w+) RENAME TO/gi)].map((m) => m[1]!.toLowerCase()));
  const created = [...text.matchAll(/CREATE TABLE (?:IF NOT EXISTS )?(\w+)/gi)].map((m) => m[1]!.toLowerCase());
  return [...new Set(created)].filter((t) => !renamed.has(t)).sort();
}

function lineOf(text: string, at: number): number {
  return text.slice(0, at).split('\n').length;
}

describe('table owners', () => {
  it('finds writes in source text: split over lines, in any case, with a conflict clause, or named at run time', () => {
    const sample = `
      statement(db, \`INSERT INTO attendees (id) VALUES (?)\`);
      db.prepare('insert or ignore into\n   credentials (id) values (?)');
      db.exec("REPLACE INTO settings (key, value) VALUES ('a', 'b')");
      statement(db, 'UPDATE change_sequence\n  SET value = value + 1 WHERE id = 1');
      db.prepare("delete from \\"domain_events\\" where seq < ?");
      statement(db, \`INSERT OR REPLACE INTO access_events (uuid) VALUES (?)\`);
      statement(db, \`UPDATE \${table} SET a = 1\`);
      db.prepare('DELETE FROM ' + table);
    `;
    expect(tableWrites(sample).map((w) => `${w.verb} ${w.table}`)).toEqual([
      'INSERT INTO attendees',
      'INSERT OR IGNORE INTO credentials',
      'REPLACE INTO settings',
      'UPDATE change_sequence',
      'DELETE FROM domain_events',
      'INSERT OR REPLACE INTO access_events',
      'UPDATE ${',
      "DELETE FROM ' ",
    ]);
    expect(tableWrites(sample).filter(isDynamic)).toHaveLength(2);
    // Reads and prose are not writes.
    const prose = `
      // update the rows; the CLI's "users update \${email} --password"
      statement(db, 'SELECT * FROM attendees WHERE id = ?');
      db.prepare('INSERT INTO sync_edges (id) VALUES (?) ON CONFLICT (id) DO UPDATE SET name = excluded.name');
    `;
    expect(tableWrites(prose).map((w) => `${w.verb} ${w.table}`)).toEqual(['INSERT INTO sync_edges']);
  });

  it('names an owner for every table the migrations create, and no table they do not', () => {
    const tables = migratedTables();
    expect(tables.length).toBeGreaterThan(40);
    expect(Object.keys(OWNERS).sort()).toEqual(tables);
    for (const [table, { owners, reason }] of Object.entries(OWNERS))
      if (owners.length !== 1) expect(reason, `${table}: more than one owner, or none, needs a reason`).toBeTruthy();
    for (const table of SINGLE_OWNER) {
      expect(OWNERS[table]!.owners, table).toHaveLength(1);
      expect(OWNERS[table]!.reason, table).toBeUndefined();
    }
  });

  it('writes each table only in its owner (migrations aside)', () => {
    const offenders: string[] = [];
    for (const path of ['src', 'sync', 'firmware-bridge'].flatMap(sourceFiles)) {
      const file = posix(relative('.', path));
      if (isMigration(file)) continue;
      const text = readFileSync(path, 'utf8');
      for (const w of tableWrites(text)) {
        const where = `${file}:${lineOf(text, w.at)}: ${w.verb} ${w.table}`;
        if (isDynamic(w)) {
          if (!(file in DYNAMIC_WRITERS) && !(file in STORE_TOOLS))
            offenders.push(`${where} (a table named at run time)`);
          continue;
        }
        const owner = OWNERS[w.table];
        if (owner && !ownedBy(file, owner.owners))
          offenders.push(`${where} (owner: ${owner.owners.join(', ') || 'none'})`);
      }
    }
    expect(offenders).toEqual([]);
  });

  it('builds the venue tables\u2019 generic writers only in src/venue/', () => {
    for (const file of Object.keys(DYNAMIC_WRITERS)) expect(ownedBy(file, [VENUE]), file).toBe(true);
    const offenders: string[] = [];
    for (const path of ['src', 'sync', 'firmware-bridge'].flatMap(sourceFiles)) {
      const file = posix(relative('.', path));
      if (!file.startsWith(VENUE) && /new VersionedTable\b/.test(readFileSync(path, 'utf8'))) offenders.push(file);
    }
    expect(offenders).toEqual([]);
  });

  it('appends to the outbox only through the unit of work (commit(), events/unit-of-work.ts)', () => {
    const callers: string[] = [];
    for (const path of ['src', 'sync', 'firmware-bridge'].flatMap(sourceFiles)) {
      const file = posix(relative('.', path));
      if (file !== 'src/feed/outbox.ts' && /\bappendToOutbox\b/.test(readFileSync(path, 'utf8'))) callers.push(file);
    }
    expect(callers).toEqual(['src/events/unit-of-work.ts']);
  });
});
