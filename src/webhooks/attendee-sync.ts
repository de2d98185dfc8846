import { z } from 'zod';
import type { Clock } from '../clock.js';
import { iso } from '../clock.js';
import { fieldErrorsFromZod } from '../errors.js';
import type { EventBus } from '../events/bus.js';
import { commit } from '../events/unit-of-work.js';
import type { Database } from '../store/database.js';
import { writeAttendees } from '../venue/attendee-writer.js';
import { statement } from '../store/statements.js';

// POST /webhook/v1/attendee-sync (spec: Endpoints, Incoming webhooks;
// docs/webhooks-incoming.md). An external system pushes attendees keyed by external_id:
// `upsert` creates or updates, `create` only creates (known ids are skipped), `update` only
// updates (unknown ids are skipped). Bad records are reported by index and the good ones applied.
// Set-based like the importer (venue/attendee-import.ts): the project's types and external ids
// are read once into maps, every record is judged in memory, and the writes run with prepared
// statements and one reserved block of change versions, all inside one transaction. One
// `attendee.imported` event afterwards reloads that version range into the VenueIndex.

export const SYNC_MODES = ['upsert', 'create', 'update'] as const;
export type SyncMode = (typeof SYNC_MODES)[number];
export const MAX_SYNC_RECORDS = 10_000;
/** 10,000 records of a few hundred bytes each, with room to spare. */
export const SYNC_BODY_LIMIT = 10 * 1024 * 1024;

export const attendeeSyncBody = z.object({
  project_slug: z.string().min(1).max(255),
  team_slug: z.string().min(1).max(255),
  sync_mode: z.enum(SYNC_MODES),
  // Records are judged one by one below, so one bad record never fails the request.
  attendees: z
    .array(z.unknown())
    .max(MAX_SYNC_RECORDS, { error: `at most ${MAX_SYNC_RECORDS} records are taken in one request` }),
});

const blankToNull = (v: unknown) => (typeof v === 'string' && v.trim() === '' ? null : v);

/** A record names the fields it sets; an absent field keeps its value on update. */
export const syncRecordSchema = z.object({
  external_id: z.string().trim().min(1).max(255),
  first_name: z.string().trim().min(1).max(255).optional(),
  last_name: z.preprocess(blankToNull, z.string().trim().max(255).nullable().optional()),
  email: z.preprocess(blankToNull, z.email().max(255).nullable().optional()),
  attendee_type: z.preprocess(blankToNull, z.string().max(60).nullable().optional()),
});

export interface SyncError {
  index: number;
  external_id: string | null;
  messages: string[];
}

export interface SyncResults {
  created: number;
  updated: number;
  skipped: number;
  errors: SyncError[];
}

interface Stored {
  id: number;
  first_name: string;
  last_name: string;
  email: string | null;
  attendee_type_id: number | null;
}

type Fields = Omit<Stored, 'id'>;
type Write = { kind: 'create'; externalId: string; fields: Fields } | { kind: 'update'; id: number; fields: Fields };

const externalIdOf = (raw: unknown): string | null => {
  const value = (raw as { external_id?: unknown } | null)?.external_id;
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : null;
};

export class AttendeeSync {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly bus: EventBus,
  ) {}

  run(projectId: number, mode: SyncMode, records: readonly unknown[]): SyncResults {
    const results: SyncResults = { created: 0, updated: 0, skipped: 0, errors: [] };
    // Immediate: the plan is judged on what is read here, so no other connection may write in between.
    commit(this.db, this.bus, (work) => {
      const writes = this.plan(projectId, mode, records, results);
      const written = writes.length ? this.write(projectId, writes) : null;
      if (written)
        work.emit('attendee.imported', {
          projectId,
          count: written.count,
          credentials: 0,
          fromVersion: written.fromVersion,
          toVersion: written.toVersion,
        });
    });
    return results;
  }

  /** Judges every record against the project as it is, in memory; counts skips and errors. */
  private plan(projectId: number, mode: SyncMode, records: readonly unknown[], results: SyncResults): Write[] {
    const types = new Map(
      (
        statement(this.db, 'SELECT slug, id FROM attendee_types WHERE project_id = ?').all(projectId) as {
          slug: string;
          id: number;
        }[]
      ).map((t) => [t.slug, t.id]),
    );
    const existing = new Map(
      (
        statement(
          this.db,
          'SELECT id, external_id, first_name, last_name, email, attendee_type_id FROM attendees WHERE project_id = ? AND external_id IS NOT NULL',
        ).all(projectId) as (Stored & {
          external_id: string;
        })[]
      ).map(({ external_id, ...row }) => [external_id, row]),
    );
    // Which record was meant is unknowable when one external id occurs twice: none of them is applied.
    const occurrences = new Map<string, number>();
    for (const raw of records) {
      const id = externalIdOf(raw);
      if (id !== null) occurrences.set(id, (occurrences.get(id) ?? 0) + 1);
    }

    const writes: Write[] = [];
    records.forEach((raw, index) => {
      const messages: string[] = [];
      const parsed =
        typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? syncRecordSchema.safeParse(raw) : null;
      if (!parsed)
        messages.push('The record must be an object with external_id, first_name, last_name, email and attendee_type.');
      else if (!parsed.success) messages.push(...Object.values(fieldErrorsFromZod(parsed.error)).flat());
      const v = parsed?.success ? parsed.data : null;
      const externalId = v ? v.external_id : externalIdOf(raw);
      if (externalId !== null && (occurrences.get(externalId) ?? 0) > 1)
        messages.push(`The external_id "${externalId}" occurs more than once in this request.`);
      const typeId = v?.attendee_type ? types.get(v.attendee_type) : null;
      if (v?.attendee_type && typeId === undefined)
        messages.push(`The attendee type "${v.attendee_type}" does not exist in this project.`);
      const stored = v ? existing.get(v.external_id) : undefined;
      if (v && !stored && mode !== 'update' && v.first_name === undefined)
        messages.push('The first_name field is required to create an attendee.');
      if (messages.length || !v) {
        results.errors.push({ index, external_id: externalId, messages });
        return;
      }

      if (stored ? mode === 'create' : mode === 'update') {
        results.skipped++;
        return;
      }
      const base: Fields = stored ?? { first_name: '', last_name: '', email: null, attendee_type_id: null };
      const fields: Fields = {
        first_name: v.first_name ?? base.first_name,
        last_name: v.last_name === undefined ? base.last_name : (v.last_name ?? ''),
        email: v.email === undefined ? base.email : (v.email?.toLowerCase() ?? null),
        attendee_type_id: v.attendee_type === undefined ? base.attendee_type_id : (typeId ?? null),
      };
      if (!stored) {
        writes.push({ kind: 'create', externalId: v.external_id, fields });
        results.created++;
      } else if (Object.keys(fields).some((k) => fields[k as keyof Fields] !== stored[k as keyof Fields])) {
        writes.push({ kind: 'update', id: stored.id, fields });
        results.updated++;
      } else {
        results.skipped++; // identical to what is stored: no write, no new version
      }
    });
    return writes;
  }

  private write(projectId: number, writes: Write[]): { count: number; fromVersion: number; toVersion: number } {
    // One block of change versions, and of ids for the new attendees (venue/attendee-writer.ts).
    const { fromVersion, toVersion } = writeAttendees(
      this.db,
      projectId,
      writes.map((w) => {
        const { attendee_type_id, first_name, last_name, email } = w.fields;
        return w.kind === 'create'
          ? {
              op: 'create',
              values: {
                attendee_type_id,
                first_name,
                last_name,
                email,
                external_id: w.externalId,
                status: 'active',
                extra: '{}',
              },
            }
          : { op: 'update', id: w.id, values: { attendee_type_id, first_name, last_name, email } };
      }),
      iso(this.clock.now()),
    );
    return { count: writes.length, fromVersion, toVersion };
  }
}
