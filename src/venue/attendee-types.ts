import { z } from 'zod';
import type { Clock } from '../clock.js';
import { AppError, found, validationError } from '../errors.js';
import type { EventBus } from '../events/bus.js';
import { commit } from '../events/unit-of-work.js';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import { slugField, slugify, uniqueSlug } from '../accounts/slug.js';
import { VersionedTable } from './versioned-table.js';
import type { attendeeTypeSchema } from '../resources/venue.js';

// Attendee types and the zones each may enter (spec: What the service does, item 4: "the
// attendee type has access to the zone"), as {name, zone_ids} (docs/venue.md).

export interface AttendeeTypeRow {
  id: number;
  project_id: number;
  name: string;
  slug: string;
  version: number;
  created_at: string;
  updated_at: string;
}

const zoneIds = z.array(z.number().int().positive()).max(1000);

export const createAttendeeTypeBody = z.strictObject({
  name: z.string().trim().min(1).max(255),
  slug: slugField.optional(),
  zone_ids: zoneIds.optional(),
});
export const updateAttendeeTypeBody = createAttendeeTypeBody.partial();

export class AttendeeTypes {
  readonly table: VersionedTable<AttendeeTypeRow>;

  constructor(
    private readonly db: Database,
    clock: Clock,
    private readonly bus: EventBus,
  ) {
    this.table = new VersionedTable(db, clock, 'attendee_types', 'attendee_type');
  }

  zoneIdsOf(typeId: number): number[] {
    return statement(
      this.db,
      'SELECT access_zone_id FROM attendee_type_zones WHERE attendee_type_id = ? ORDER BY access_zone_id',
    )
      .pluck()
      .all(typeId) as number[];
  }

  resource(r: AttendeeTypeRow): z.infer<typeof attendeeTypeSchema> {
    return {
      id: r.id,
      name: r.name,
      slug: r.slug,
      zone_ids: this.zoneIdsOf(r.id),
      version: r.version,
      created_at: r.created_at,
      updated_at: r.updated_at,
    };
  }

  get(projectId: number, id: number): AttendeeTypeRow {
    return found(this.table.find(projectId, id), 'Attendee type');
  }

  bySlug(projectId: number, slug: string): AttendeeTypeRow | null {
    return (
      (statement(this.db, 'SELECT * FROM attendee_types WHERE project_id = ? AND slug = ?').get(projectId, slug) as
        | AttendeeTypeRow
        | undefined) ?? null
    );
  }

  /** The types that grant a zone, in id order: a zone they grant is not deleted (access-zones.ts). */
  grantingZone(zoneId: number): AttendeeTypeRow[] {
    return statement(
      this.db,
      'SELECT t.* FROM attendee_types t JOIN attendee_type_zones z ON z.attendee_type_id = t.id WHERE z.access_zone_id = ? ORDER BY t.id',
    ).all(zoneId) as AttendeeTypeRow[];
  }

  private setZones(projectId: number, typeId: number, ids: number[]): void {
    const unique = [...new Set(ids)];
    const known = new Set(
      statement(this.db, 'SELECT id FROM access_zones WHERE project_id = ?').pluck().all(projectId) as number[],
    );
    const errors = unique.flatMap((id) =>
      known.has(id) ? [] : [`The access zone ${id} does not exist in this project.`],
    );
    if (errors.length) throw validationError({ zone_ids: errors });
    statement(this.db, 'DELETE FROM attendee_type_zones WHERE attendee_type_id = ?').run(typeId);
    const insert = statement(
      this.db,
      'INSERT INTO attendee_type_zones (attendee_type_id, access_zone_id) VALUES (?, ?)',
    );
    for (const id of unique) insert.run(typeId, id);
  }

  create(projectId: number, input: z.output<typeof createAttendeeTypeBody>): AttendeeTypeRow {
    return commit(this.db, this.bus, (work) => {
      if (input.slug && this.table.exists(projectId, 'slug', input.slug))
        throw validationError({ slug: ['The slug has already been taken.'] });
      const slug = input.slug ?? uniqueSlug(slugify(input.name), (s) => this.table.exists(projectId, 'slug', s));
      const row = this.table.insert(projectId, { name: input.name, slug });
      this.setZones(projectId, row.id, input.zone_ids ?? []);
      work.emit('attendee_type.created', { projectId, resource: this.resource(row), version: row.version });
      return row;
    });
  }

  update(projectId: number, id: number, input: z.output<typeof updateAttendeeTypeBody>): AttendeeTypeRow {
    return commit(this.db, this.bus, (work) => {
      this.get(projectId, id);
      if (input.slug && this.table.exists(projectId, 'slug', input.slug, id))
        throw validationError({ slug: ['The slug has already been taken.'] });
      const values: Record<string, string> = {};
      if (input.name !== undefined) values.name = input.name;
      if (input.slug !== undefined) values.slug = input.slug;
      if (input.zone_ids !== undefined) this.setZones(projectId, id, input.zone_ids);
      const row = this.table.update(projectId, id, values);
      work.emit('attendee_type.updated', { projectId, resource: this.resource(row), version: row.version });
      return row;
    });
  }

  delete(projectId: number, id: number): void {
    commit(this.db, this.bus, (work) => {
      this.get(projectId, id);
      const { n } = statement(this.db, 'SELECT COUNT(*) AS n FROM attendees WHERE attendee_type_id = ?').get(id) as {
        n: number;
      };
      if (n > 0)
        throw new AppError('conflict', {
          detail: `The attendee type is held by ${n} attendee${n === 1 ? '' : 's'}; change their type first.`,
        });
      const { r } = statement(this.db, 'SELECT COUNT(*) AS r FROM time_restrictions WHERE attendee_type_id = ?').get(
        id,
      ) as { r: number };
      if (r > 0)
        throw new AppError('conflict', {
          detail: `The attendee type has ${r} time restriction${r === 1 ? '' : 's'}; delete them first.`,
        });
      const version = this.table.delete(projectId, id);
      work.emit('attendee_type.deleted', { projectId, id, version });
    });
  }
}
