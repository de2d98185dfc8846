import type { Database } from '../store/database.js';
import type { ChunkQuery } from '../store/chunked-read.js';
import { readInParallel } from '../store/parallel-read.js';
import { isPostgres } from '../store/postgres/pg-database.js';
import { IdTable } from './id-table.js';
import { SigningKeys } from './signing-keys.js';

// The in-memory picture of every project's venue that decisions read (docs/engine.md):
// credentials by value, attendees, type permissions, zones, access points, readers, time
// windows and the blocklist. Loaded once at start; kept coherent by access/index-sync.ts from
// the domain events, so a decision never waits on SQLite.

export interface CredentialEntry {
  id: number;
  projectId: number;
  attendeeId: number;
  value: string;
  status: 'active' | 'revoked';
  validFrom: number | null;
  validUntil: number | null;
  revokedAt: number | null;
}

export interface AttendeeEntry {
  id: number;
  projectId: number;
  typeId: number | null;
  firstName: string;
  lastName: string;
  status: 'active' | 'cancelled';
}

export interface ZoneEntry {
  id: number;
  projectId: number;
  capacity: number | null;
  requiresTicket: boolean;
  /** Deny re-entry to a holder already inside (the zone's anti_passback; docs/engine.md). */
  antiPassback: boolean;
}

export interface AccessPointEntry {
  id: number;
  projectId: number;
  zoneId: number | null;
  direction: 'in' | 'out' | 'both';
  isActive: boolean;
}

export interface ReaderEntry {
  id: number;
  projectId: number;
  identifier: string;
  accessPointId: number | null;
}

export interface WindowEntry {
  id: number;
  zoneId: number;
  typeId: number | null;
  days: ReadonlySet<number>;
  /** Minutes after midnight. */
  start: number;
  end: number;
}

export interface BlockEntry {
  id: number;
  attendeeId: number | null;
  credentialId: number | null;
  until: number | null;
}

const ms = (s: string | null) => (s === null ? null : Date.parse(s));
const minutes = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));
/** The key of `readers`: a reader identifier is unique within its project. */
export const readerKey = (projectId: number, value: string) => `${projectId}\u0000${value}`;

type Row = Record<string, unknown>;

export class VenueIndex {
  /** Credentials by project, then by value: no composite key string per credential. */
  readonly #credentials = new Map<number, Map<string, CredentialEntry>>();
  readonly credentialsById = new IdTable<CredentialEntry>();
  readonly attendees = new IdTable<AttendeeEntry>();
  readonly typeZones = new Map<number, Set<number>>();
  readonly zones = new Map<number, ZoneEntry>();
  readonly accessPoints = new Map<number, AccessPointEntry>();
  /** Readers by readerKey(projectId, identifier). */
  readonly readers = new Map<string, ReaderEntry>();
  readonly #readersById = new Map<number, ReaderEntry>();
  /** Readers by identifier alone, for senders that name no project (the access-event webhook). */
  readonly #readersByIdentifier = new Map<string, Set<ReaderEntry>>();
  readonly windows = new Map<number, WindowEntry[]>();
  readonly blocks = new Map<number, BlockEntry>();
  /** Blocklist entries by what they name (`a:<attendeeId>`, `c:<credentialId>`), so a decision looks up two keys. */
  /** Blocklist entries by the attendee or the credential they name (number keys: no key string per scan). */
  readonly #blocksByAttendee = new Map<number, Set<BlockEntry>>();
  readonly #blocksByCredential = new Map<number, Set<BlockEntry>>();
  readonly timezones = new Map<number, string>();
  /** The projects' public keys, for signed values the index does not hold (signing-keys.ts). */
  readonly keys = new SigningKeys();

  constructor(private readonly db: Database) {}

  /** The big tables' columns the index is made of, read in chunks by id (store/chunked-read.ts). */
  static readonly bigTables: readonly [ChunkQuery, ChunkQuery] = [
    {
      table: 'credentials',
      columns: ['id', 'project_id', 'attendee_id', 'value', 'status', 'valid_from', 'valid_until', 'revoked_at'],
      after: 0,
    },
    {
      table: 'attendees',
      columns: ['id', 'project_id', 'attendee_type_id', 'first_name', 'last_name', 'status'],
      after: 0,
    },
  ];

  load(): void {
    // iterate(), not all(): a million credentials never sit in memory twice.
    const all = (sql: string) => this.db.prepare(sql).iterate() as Iterable<Row>;
    for (const p of all('SELECT id, timezone FROM projects')) this.timezones.set(p.id as number, p.timezone as string);
    // Credentials and attendees are the big tables: a worker thread reads both on the second core
    // (store/parallel-read.ts) while this thread makes the entries of each chunk it hands over.
    // Nothing writes while the index loads (start, before the servers listen). In-memory
    // databases (tests) and PostgreSQL (a cloud's: no file a thread could open) are read here,
    // as raw arrays of the columns in chunks by id (all() per chunk is much faster than
    // iterate(), and memory stays bounded).
    const db = this.db;
    const [credentials, attendees] = VenueIndex.bigTables;
    const here = function* ({ table, columns, after: from }: ChunkQuery): Iterable<unknown[]> {
      const chunk = db.prepare(`SELECT ${columns.join(', ')} FROM ${table} WHERE id > ? ORDER BY id LIMIT 20000`);
      chunk.raw(true);
      for (let after = from; ; ) {
        const rows = chunk.all(after) as unknown[][];
        if (rows.length === 0) return;
        yield* rows;
        after = rows[rows.length - 1]![0] as number;
      }
    };
    const read =
      db.memory || isPostgres(db)
        ? { rows: (index: number) => here(index === 0 ? credentials : attendees) }
        : readInParallel(db.name, [credentials, attendees]);
    for (const [id, projectId, attendeeId, value, status, validFrom, validUntil, revokedAt] of read.rows(0)) {
      this.#addCredential({
        id: id as number,
        projectId: projectId as number,
        attendeeId: attendeeId as number,
        value: value as string,
        status: status as CredentialEntry['status'],
        validFrom: ms(validFrom as string | null),
        validUntil: ms(validUntil as string | null),
        revokedAt: ms(revokedAt as string | null),
      });
    }
    for (const [id, projectId, typeId, firstName, lastName, status] of read.rows(1)) {
      this.attendees.set(id as number, {
        id: id as number,
        projectId: projectId as number,
        typeId: (typeId as number | null) ?? null,
        firstName: firstName as string,
        lastName: lastName as string,
        status: status as AttendeeEntry['status'],
      });
    }
    for (const r of all('SELECT id FROM attendee_types')) this.typeZones.set(r.id as number, new Set());
    for (const r of all('SELECT * FROM attendee_type_zones'))
      this.typeZones.get(r.attendee_type_id as number)?.add(r.access_zone_id as number);
    for (const r of all('SELECT * FROM access_zones')) this.putZone(r);
    for (const r of all('SELECT * FROM access_points')) this.putAccessPoint(r);
    for (const r of all('SELECT * FROM readers')) this.putReader(r);
    for (const r of all('SELECT * FROM time_restrictions')) this.putWindow(r);
    for (const r of all('SELECT * FROM blocklist_entries')) this.putBlock(r);
    for (const r of all('SELECT id, project_id, public_key, status FROM credential_keys')) this.keys.put(r);
  }

  /** The credential with this value in this project. */
  credential(projectId: number, value: string): CredentialEntry | undefined {
    return this.#credentials.get(projectId)?.get(value);
  }

  get credentialCount(): number {
    return this.credentialsById.size;
  }

  #addCredential(entry: CredentialEntry): void {
    let byValue = this.#credentials.get(entry.projectId);
    if (!byValue) this.#credentials.set(entry.projectId, (byValue = new Map()));
    byValue.set(entry.value, entry);
    this.credentialsById.set(entry.id, entry);
  }

  putCredential(r: Row): void {
    this.dropCredential(r.id as number);
    this.#addCredential({
      id: r.id as number,
      projectId: r.project_id as number,
      attendeeId: r.attendee_id as number,
      value: r.value as string,
      status: r.status as CredentialEntry['status'],
      validFrom: ms(r.valid_from as string | null),
      validUntil: ms(r.valid_until as string | null),
      revokedAt: ms(r.revoked_at as string | null),
    });
  }

  dropCredential(id: number): void {
    const entry = this.credentialsById.get(id);
    if (!entry) return;
    this.#credentials.get(entry.projectId)?.delete(entry.value);
    this.credentialsById.delete(id);
  }

  putAttendee(r: Row): void {
    this.attendees.set(r.id as number, {
      id: r.id as number,
      projectId: r.project_id as number,
      typeId: (r.attendee_type_id as number | null) ?? null,
      firstName: r.first_name as string,
      lastName: r.last_name as string,
      status: r.status as AttendeeEntry['status'],
    });
  }

  dropAttendee(id: number): void {
    this.attendees.delete(id);
  }

  /** An attendee type's zones (its `zone_ids`). */
  putAttendeeType(r: Row): void {
    this.typeZones.set(r.id as number, new Set(r.zone_ids as number[]));
  }

  dropAttendeeType(id: number): void {
    this.typeZones.delete(id);
  }

  setTimezone(projectId: number, timezone: string): void {
    this.timezones.set(projectId, timezone);
  }

  putZone(r: Row): void {
    this.zones.set(r.id as number, {
      id: r.id as number,
      projectId: r.project_id as number,
      capacity: (r.capacity as number | null) ?? null,
      requiresTicket: r.requires_ticket === 1 || r.requires_ticket === true,
      antiPassback: r.anti_passback === 1 || r.anti_passback === true,
    });
  }

  dropZone(id: number): void {
    this.zones.delete(id);
  }

  putAccessPoint(r: Row): void {
    this.accessPoints.set(r.id as number, {
      id: r.id as number,
      projectId: r.project_id as number,
      zoneId: (r.access_zone_id as number | null) ?? null,
      direction: r.direction as AccessPointEntry['direction'],
      isActive: r.is_active === 1 || r.is_active === true,
    });
  }

  dropAccessPoint(id: number): void {
    this.accessPoints.delete(id);
  }

  putReader(r: Row): void {
    this.dropReader(r.id as number);
    const entry: ReaderEntry = {
      id: r.id as number,
      projectId: r.project_id as number,
      identifier: r.identifier as string,
      accessPointId: (r.access_point_id as number | null) ?? null,
    };
    this.readers.set(readerKey(entry.projectId, entry.identifier), entry);
    this.#readersById.set(entry.id, entry);
    const same = this.#readersByIdentifier.get(entry.identifier) ?? new Set();
    same.add(entry);
    this.#readersByIdentifier.set(entry.identifier, same);
  }

  dropReader(id: number): void {
    const entry = this.#readersById.get(id);
    if (!entry) return;
    this.readers.delete(readerKey(entry.projectId, entry.identifier));
    this.#readersById.delete(id);
    const same = this.#readersByIdentifier.get(entry.identifier);
    same?.delete(entry);
    if (same?.size === 0) this.#readersByIdentifier.delete(entry.identifier);
  }

  readerById(id: number): ReaderEntry | undefined {
    return this.#readersById.get(id);
  }

  /** Every reader with this identifier, across projects. */
  readersWithIdentifier(identifier: string): ReaderEntry[] {
    return [...(this.#readersByIdentifier.get(identifier) ?? [])];
  }

  putWindow(r: Row): void {
    this.dropWindow(r.id as number);
    const days =
      typeof r.days_of_week === 'string' ? (JSON.parse(r.days_of_week) as number[]) : (r.days_of_week as number[]);
    const entry: WindowEntry = {
      id: r.id as number,
      zoneId: r.access_zone_id as number,
      typeId: (r.attendee_type_id as number | null) ?? null,
      days: new Set(days),
      start: minutes(r.start_time as string),
      end: minutes(r.end_time as string),
    };
    const list = this.windows.get(entry.zoneId) ?? [];
    list.push(entry);
    this.windows.set(entry.zoneId, list);
  }

  dropWindow(id: number): void {
    for (const [zoneId, list] of this.windows) {
      const kept = list.filter((w) => w.id !== id);
      if (kept.length !== list.length) this.windows.set(zoneId, kept);
    }
  }

  putBlock(r: Row): void {
    this.dropBlock(r.id as number);
    const entry: BlockEntry = {
      id: r.id as number,
      attendeeId: (r.attendee_id as number | null) ?? null,
      credentialId: (r.credential_id as number | null) ?? null,
      until: ms(r.until as string | null),
    };
    this.blocks.set(entry.id, entry);
    const [bySubject, key] = this.#blockSubject(entry);
    const set = bySubject.get(key) ?? new Set();
    set.add(entry);
    bySubject.set(key, set);
  }

  dropBlock(id: number): void {
    const entry = this.blocks.get(id);
    if (!entry) return;
    this.blocks.delete(id);
    const [bySubject, key] = this.#blockSubject(entry);
    const set = bySubject.get(key);
    set?.delete(entry);
    if (set?.size === 0) bySubject.delete(key);
  }

  /** Whether an entry naming this attendee or this credential
   * is in force at `at` (allocates nothing: it runs per scan). */
  isBlocked(attendeeId: number, credentialId: number, at: number): boolean {
    return (
      inForce(this.#blocksByAttendee.get(attendeeId), at) || inForce(this.#blocksByCredential.get(credentialId), at)
    );
  }

  #blockSubject(entry: BlockEntry): [Map<number, Set<BlockEntry>>, number] {
    return entry.attendeeId !== null
      ? [this.#blocksByAttendee, entry.attendeeId]
      : [this.#blocksByCredential, entry.credentialId!];
  }

  /** Rows written by a bulk import or an attendee sync, read back by their version range; answers how many. */
  loadImported(projectId: number, fromVersion: number, toVersion: number): number {
    const range = (table: string) =>
      this.db
        .prepare(`SELECT * FROM ${table} WHERE project_id = ? AND version BETWEEN ? AND ?`)
        .all(projectId, fromVersion, toVersion) as Row[];
    const attendees = range('attendees');
    const credentials = range('credentials');
    for (const r of attendees) this.putAttendee(r);
    for (const r of credentials) this.putCredential(r);
    return attendees.length + credentials.length;
  }
}

function inForce(blocks: Set<BlockEntry> | undefined, at: number): boolean {
  if (blocks === undefined) return false;
  for (const block of blocks) if (block.until === null || at < block.until) return true;
  return false;
}
