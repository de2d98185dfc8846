import { z } from 'zod';
import type { Clock } from '../clock.js';
import { found, validationError } from '../errors.js';
import type { EventBus } from '../events/bus.js';
import { commit } from '../events/unit-of-work.js';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import { slugField, slugify, uniqueSlug } from '../accounts/slug.js';
import { readerResource, type Readers } from './readers.js';
import { VersionedTable } from './versioned-table.js';
import { type AccessPointResource, DIRECTIONS } from '../resources/venue.js';

// Access points (spec: Resources, Access point; Endpoints, Access points). direction is `in`,
// `out` or `both` (a turnstile that counts whichever way it is passed: docs/venue.md).
// access_zone_id may be null while a door is being set up; the engine refuses scans there.

export interface AccessPointRow {
  id: number;
  project_id: number;
  access_zone_id: number | null;
  name: string;
  slug: string;
  location: string | null;
  direction: (typeof DIRECTIONS)[number];
  is_active: number;
  version: number;
  created_at: string;
  updated_at: string;
}

export const createAccessPointBody = z.strictObject({
  name: z.string().trim().min(1).max(255),
  location: z.string().max(255).nullable().optional(),
  slug: slugField.optional(),
  access_zone_id: z.number().int().positive().nullable().optional(),
  direction: z.enum(DIRECTIONS).optional(),
  is_active: z.boolean().optional(),
});
export const updateAccessPointBody = createAccessPointBody.partial();

export class AccessPoints {
  readonly table: VersionedTable<AccessPointRow>;

  constructor(
    private readonly db: Database,
    clock: Clock,
    private readonly bus: EventBus,
    private readonly readers: Readers,
  ) {
    this.table = new VersionedTable(db, clock, 'access_points', 'access_point');
  }

  resource(r: AccessPointRow): AccessPointResource {
    return {
      id: r.id,
      name: r.name,
      slug: r.slug,
      location: r.location,
      access_zone_id: r.access_zone_id,
      direction: r.direction,
      is_active: r.is_active === 1,
      readers: this.readers.ofAccessPoint(r.id).map(readerResource),
      version: r.version,
      created_at: r.created_at,
      updated_at: r.updated_at,
    };
  }

  get(projectId: number, id: number): AccessPointRow {
    return found(this.table.find(projectId, id), 'Access point');
  }

  private checkZone(projectId: number, id: number | null | undefined): void {
    if (id === null || id === undefined) return;
    if (!statement(this.db, 'SELECT 1 FROM access_zones WHERE project_id = ? AND id = ?').get(projectId, id)) {
      throw validationError({ access_zone_id: ['The selected access zone id is invalid.'] });
    }
  }

  create(projectId: number, input: z.output<typeof createAccessPointBody>): AccessPointRow {
    return commit(this.db, this.bus, (work) => {
      this.checkZone(projectId, input.access_zone_id);
      if (input.slug && this.table.exists(projectId, 'slug', input.slug))
        throw validationError({ slug: ['The slug has already been taken.'] });
      const slug = input.slug ?? uniqueSlug(slugify(input.name), (s) => this.table.exists(projectId, 'slug', s));
      const row = this.table.insert(projectId, {
        name: input.name,
        slug,
        location: input.location ?? null,
        access_zone_id: input.access_zone_id ?? null,
        direction: input.direction ?? 'in',
        is_active: input.is_active === false ? 0 : 1,
      });
      work.emit('access_point.created', { projectId, resource: this.resource(row), version: row.version });
      return row;
    });
  }

  update(projectId: number, id: number, input: z.output<typeof updateAccessPointBody>): AccessPointRow {
    return commit(this.db, this.bus, (work) => {
      this.get(projectId, id);
      this.checkZone(projectId, input.access_zone_id);
      if (input.slug && this.table.exists(projectId, 'slug', input.slug, id))
        throw validationError({ slug: ['The slug has already been taken.'] });
      const values: Record<string, string | number | null> = {};
      for (const key of ['name', 'slug', 'location', 'access_zone_id', 'direction'] as const) {
        if (input[key] !== undefined) values[key] = input[key];
      }
      if (input.is_active !== undefined) values.is_active = input.is_active ? 1 : 0;
      const row = this.table.update(projectId, id, values);
      work.emit('access_point.updated', { projectId, resource: this.resource(row), version: row.version });
      return row;
    });
  }

  /** Deleting an access point detaches its readers (each a versioned change of its own). */
  delete(projectId: number, id: number): void {
    commit(this.db, this.bus, (work) => {
      this.get(projectId, id);
      for (const reader of this.readers.ofAccessPoint(id)) {
        const row = this.readers.table.update(projectId, reader.id, { access_point_id: null });
        work.emit('reader.updated', { projectId, resource: readerResource(row), version: row.version });
      }
      const version = this.table.delete(projectId, id);
      work.emit('access_point.deleted', { projectId, id, version });
    });
  }
}
