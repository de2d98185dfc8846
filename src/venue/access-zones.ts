import { z } from 'zod';
import type { Clock } from '../clock.js';
import { AppError, found, validationError } from '../errors.js';
import type { EventBus } from '../events/bus.js';
import { commit } from '../events/unit-of-work.js';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import { slugField, slugify, uniqueSlug } from '../accounts/slug.js';
import type { AttendeeTypes } from './attendee-types.js';
import { VersionedTable } from './versioned-table.js';
import type { ZoneResource } from '../resources/venue.js';

// Access zones (spec: Resources, Access zone). capacity null = unlimited; current_count is
// kept by the decision engine from access events. anti_passback (ours, off by default: the
// contract's checks have no re-entry rule; docs/decisions.md, "Re-entry
// and every scan's event") makes the zone deny a holder already inside.

export interface AccessZoneRow {
  id: number;
  project_id: number;
  name: string;
  slug: string;
  capacity: number | null;
  requires_ticket: number;
  anti_passback: number;
  current_count: number;
  version: number;
  created_at: string;
  updated_at: string;
}

const nameField = z.string().trim().min(1).max(255);

export const createZoneBody = z.strictObject({
  name: nameField,
  slug: slugField.optional(),
  capacity: z.number().int().min(0).max(10_000_000).nullable().optional(),
  requires_ticket: z.boolean().optional(),
  anti_passback: z
    .boolean()
    .optional()
    .describe('deny re-entry to a holder already inside (not_authorized, reason_detail already_inside); default false'),
});
export const updateZoneBody = createZoneBody.partial();

/** `currentCount`: the live count from the engine's occupancy when the caller has it. */
export const zoneResource = (r: AccessZoneRow, currentCount = r.current_count): ZoneResource => ({
  id: r.id,
  name: r.name,
  slug: r.slug,
  capacity: r.capacity,
  current_count: currentCount,
  available: r.capacity === null ? null : Math.max(0, r.capacity - currentCount),
  requires_ticket: r.requires_ticket === 1,
  anti_passback: r.anti_passback === 1,
  version: r.version,
  created_at: r.created_at,
  updated_at: r.updated_at,
});

export class AccessZones {
  readonly table: VersionedTable<AccessZoneRow>;

  constructor(
    private readonly db: Database,
    clock: Clock,
    private readonly bus: EventBus,
    private readonly attendeeTypes: AttendeeTypes,
  ) {
    this.table = new VersionedTable(db, clock, 'access_zones', 'access_zone');
  }

  get(projectId: number, id: number): AccessZoneRow {
    return found(this.table.find(projectId, id), 'Access zone');
  }

  create(projectId: number, input: z.output<typeof createZoneBody>): AccessZoneRow {
    return commit(this.db, this.bus, (work) => {
      if (input.slug && this.table.exists(projectId, 'slug', input.slug))
        throw validationError({ slug: ['The slug has already been taken.'] });
      const slug = input.slug ?? uniqueSlug(slugify(input.name), (s) => this.table.exists(projectId, 'slug', s));
      const row = this.table.insert(projectId, {
        name: input.name,
        slug,
        capacity: input.capacity ?? null,
        requires_ticket: input.requires_ticket ? 1 : 0,
        anti_passback: input.anti_passback ? 1 : 0,
      });
      work.emit('access_zone.created', { projectId, resource: zoneResource(row), version: row.version });
      return row;
    });
  }

  update(projectId: number, id: number, input: z.output<typeof updateZoneBody>): AccessZoneRow {
    return commit(this.db, this.bus, (work) => {
      this.get(projectId, id);
      if (input.slug && this.table.exists(projectId, 'slug', input.slug, id))
        throw validationError({ slug: ['The slug has already been taken.'] });
      const values: Record<string, string | number | null> = {};
      if (input.name !== undefined) values.name = input.name;
      if (input.slug !== undefined) values.slug = input.slug;
      if (input.capacity !== undefined) values.capacity = input.capacity;
      if (input.requires_ticket !== undefined) values.requires_ticket = input.requires_ticket ? 1 : 0;
      if (input.anti_passback !== undefined) values.anti_passback = input.anti_passback ? 1 : 0;
      const row = this.table.update(projectId, id, values);
      work.emit('access_zone.updated', { projectId, resource: zoneResource(row), version: row.version });
      return row;
    });
  }

  /** 409 while access points lead into the zone or time restrictions name it, 422 while attendee
   * types grant it (docs/venue.md: access zones): nothing changes. */
  delete(projectId: number, id: number): void {
    commit(this.db, this.bus, (work) => {
      this.get(projectId, id);
      const { n } = statement(this.db, 'SELECT COUNT(*) AS n FROM access_points WHERE access_zone_id = ?').get(id) as {
        n: number;
      };
      if (n > 0)
        throw new AppError('conflict', {
          detail: `The access zone is used by ${n} access point${n === 1 ? '' : 's'}; move or delete them first.`,
        });
      const { r } = statement(this.db, 'SELECT COUNT(*) AS r FROM time_restrictions WHERE access_zone_id = ?').get(
        id,
      ) as { r: number };
      if (r > 0)
        throw new AppError('conflict', {
          detail: `The access zone has ${r} time restriction${r === 1 ? '' : 's'}; delete them first.`,
        });
      const granting = this.attendeeTypes.grantingZone(id);
      if (granting.length > 0) {
        throw new AppError(
          'zone_granted',
          { types: granting.map((t) => `${t.name} (${t.slug})`).join(', ') },
          {
            body: {
              errors: {
                attendee_types: granting.map(
                  (t) => `The attendee type ${t.name} (${t.slug}, id ${t.id}) grants this zone.`,
                ),
              },
            },
          },
        );
      }
      const version = this.table.delete(projectId, id);
      work.emit('access_zone.deleted', { projectId, id, version });
    });
  }
}
