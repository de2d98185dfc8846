import { z } from 'zod';
import type { Clock } from '../clock.js';
import { found, validationError } from '../errors.js';
import type { EventBus } from '../events/bus.js';
import { commit, type Work } from '../events/unit-of-work.js';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import type { AttendeeTypes } from './attendee-types.js';
import type { Credentials } from './credentials.js';
import { VersionedTable } from './versioned-table.js';
import { ATTENDEE_STATUSES, type AttendeeResource } from '../resources/venue.js';

// Attendees (spec: Resources, Attendee; the full record is an open point: docs/venue.md).
// attendee_type is the slug of one of the project's attendee types.

export interface AttendeeRow {
  id: number;
  project_id: number;
  attendee_type_id: number | null;
  first_name: string;
  last_name: string;
  email: string | null;
  external_id: string | null;
  status: (typeof ATTENDEE_STATUSES)[number];
  extra: string;
  version: number;
  created_at: string;
  updated_at: string;
}

export const createAttendeeBody = z.strictObject({
  first_name: z.string().trim().min(1).max(255),
  last_name: z.string().trim().max(255).default(''),
  email: z.email().max(255).nullable().optional(),
  attendee_type: z.string().min(1).max(60).nullable().optional().describe('slug of an attendee type of the project'),
  external_id: z.string().trim().min(1).max(255).nullable().optional(),
  status: z.enum(ATTENDEE_STATUSES).optional(),
  extra: z.record(z.string(), z.unknown()).optional().describe('any further fields, kept as JSON'),
});
export const updateAttendeeBody = createAttendeeBody
  .extend({ last_name: z.string().trim().max(255).optional() })
  .partial();

export const attendeeQuery = z.object({
  search: z
    .string()
    .trim()
    .max(255)
    .optional()
    .describe('matches first or last name, "first last", email or external_id'),
  attendee_type: z.string().max(60).optional(),
  status: z.enum(ATTENDEE_STATUSES).optional(),
  changed_since: z.coerce
    .number()
    .int()
    .min(0)
    .optional()
    .describe(
      'only attendees written after this change version, in version order (what an attendee.imported event changed: docs/webhooks-outgoing.md)',
    ),
});

export class Attendees {
  readonly table: VersionedTable<AttendeeRow>;
  private readonly blocks: VersionedTable<{ id: number; project_id: number }>;

  constructor(
    private readonly db: Database,
    clock: Clock,
    private readonly bus: EventBus,
    private readonly types: AttendeeTypes,
    private readonly credentials: Credentials,
  ) {
    this.table = new VersionedTable(db, clock, 'attendees', 'attendee');
    this.blocks = new VersionedTable(db, clock, 'blocklist_entries', 'blocklist_entry');
  }

  resource(r: AttendeeRow): AttendeeResource {
    const type = r.attendee_type_id === null ? null : this.types.table.find(r.project_id, r.attendee_type_id);
    return {
      id: r.id,
      first_name: r.first_name,
      last_name: r.last_name,
      email: r.email,
      attendee_type: type?.slug ?? null,
      attendee_type_id: r.attendee_type_id,
      external_id: r.external_id,
      status: r.status,
      extra: JSON.parse(r.extra) as Record<string, unknown>,
      version: r.version,
      created_at: r.created_at,
      updated_at: r.updated_at,
    };
  }

  get(projectId: number, id: number): AttendeeRow {
    return found(this.table.find(projectId, id), 'Attendee');
  }

  search(
    projectId: number,
    q: z.output<typeof attendeeQuery>,
    offset: number,
    limit: number,
  ): { items: AttendeeRow[]; total: number } {
    const where = ['a.project_id = @projectId'];
    const params: Record<string, string | number> = { projectId, offset, limit };
    if (q.search) {
      where.push(
        `(a.first_name LIKE @like OR a.last_name LIKE @like OR (a.first_name || ' ' || a.last_name) LIKE @like OR a.email LIKE @like OR a.external_id = @exact)`,
      );
      params.like = `%${q.search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      params.exact = q.search;
    }
    if (q.attendee_type) {
      where.push('t.slug = @type');
      params.type = q.attendee_type;
    }
    if (q.status) {
      where.push('a.status = @status');
      params.status = q.status;
    }
    if (q.changed_since !== undefined) {
      where.push('a.version > @changedSince');
      params.changedSince = q.changed_since;
    }
    const order =
      q.changed_since !== undefined
        ? 'a.version, a.id'
        : 'a.last_name COLLATE NOCASE, a.first_name COLLATE NOCASE, a.id';
    const from =
      `FROM attendees a LEFT JOIN attendee_types t ON t.id = a.attendee_type_id WHERE ${where.join(' AND ')}`.replaceAll(
        'LIKE @like',
        "LIKE @like ESCAPE '\\'",
      );
    const items = statement(this.db, `SELECT a.* ${from} ORDER BY ${order} LIMIT @limit OFFSET @offset`).all(
      params,
    ) as AttendeeRow[];
    const { n } = statement(this.db, `SELECT COUNT(*) AS n ${from}`).get(params) as { n: number };
    return { items, total: n };
  }

  private typeId(projectId: number, slug: string | null | undefined): number | null | undefined {
    if (slug === undefined || slug === null) return slug;
    const type = this.types.bySlug(projectId, slug);
    if (!type)
      throw validationError({ attendee_type: [`The attendee type "${slug}" does not exist in this project.`] });
    return type.id;
  }

  private checkExternalId(projectId: number, externalId: string | null | undefined, exceptId?: number): void {
    if (externalId && this.table.exists(projectId, 'external_id', externalId, exceptId)) {
      throw validationError({ external_id: ['The external id has already been taken.'] });
    }
  }

  /** Inside a caller's transaction (the importer runs many of these in one). */
  insert(projectId: number, input: z.output<typeof createAttendeeBody>, work: Work): AttendeeRow {
    const attendeeTypeId = this.typeId(projectId, input.attendee_type) ?? null;
    this.checkExternalId(projectId, input.external_id);
    const row = this.table.insert(projectId, {
      first_name: input.first_name,
      last_name: input.last_name,
      email: input.email?.toLowerCase() ?? null,
      attendee_type_id: attendeeTypeId,
      external_id: input.external_id ?? null,
      status: input.status ?? 'active',
      extra: JSON.stringify(input.extra ?? {}),
    });
    work.emit('attendee.created', { projectId, resource: this.resource(row), version: row.version });
    return row;
  }

  create(projectId: number, input: z.output<typeof createAttendeeBody>): AttendeeRow {
    return commit(this.db, this.bus, (work) => this.insert(projectId, input, work));
  }

  update(projectId: number, id: number, input: z.output<typeof updateAttendeeBody>): AttendeeRow {
    return commit(this.db, this.bus, (work) => {
      const before = this.resource(this.get(projectId, id));
      this.checkExternalId(projectId, input.external_id, id);
      const values: Record<string, string | number | null> = {};
      for (const key of ['first_name', 'last_name', 'external_id', 'status'] as const)
        if (input[key] !== undefined) values[key] = input[key];
      if (input.email !== undefined) values.email = input.email?.toLowerCase() ?? null;
      const typeId = this.typeId(projectId, input.attendee_type);
      if (typeId !== undefined) values.attendee_type_id = typeId;
      if (input.extra !== undefined) values.extra = JSON.stringify(input.extra);
      const row = this.table.update(projectId, id, values);
      const resource = this.resource(row);
      work.emit('attendee.updated', {
        projectId,
        resource,
        version: row.version,
        previous: changedFrom(before, resource),
      });
      return row;
    });
  }

  /** Deleting an attendee deletes their blocklist entries and credentials too, each leaving
   * a tombstone; their form submissions stay, no longer linked. */
  delete(projectId: number, id: number): void {
    commit(this.db, this.bus, (work) => {
      const previous = this.resource(this.get(projectId, id));
      const blocks = statement(
        this.db,
        'SELECT id FROM blocklist_entries WHERE attendee_id = ? OR credential_id IN (SELECT id FROM credentials WHERE attendee_id = ?)',
      )
        .pluck()
        .all(id, id) as number[];
      for (const entryId of blocks)
        work.emit('blocklist_entry.deleted', {
          projectId,
          id: entryId,
          version: this.blocks.delete(projectId, entryId),
        });
      for (const credential of this.credentials.ofAttendee(id)) {
        const version = this.credentials.table.delete(projectId, credential.id);
        work.emit('credential.deleted', { projectId, id: credential.id, version });
      }
      const version = this.table.delete(projectId, id);
      work.emit('attendee.deleted', { projectId, id, version, previous });
    });
  }
}

/** The fields of `before` whose values differ in `after` (compared as JSON: extra is an object). */
export function changedFrom<T extends object>(before: T, after: T): Partial<T> {
  const previous: Partial<T> = {};
  for (const key of Object.keys(before) as (keyof T)[]) {
    if (key === 'version' || key === 'updated_at') continue;
    if (JSON.stringify(before[key]) !== JSON.stringify(after[key])) previous[key] = before[key];
  }
  return previous;
}
