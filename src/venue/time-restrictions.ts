import { z } from 'zod';
import type { Clock } from '../clock.js';
import { found, validationError } from '../errors.js';
import type { EventBus } from '../events/bus.js';
import { commit } from '../events/unit-of-work.js';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import { VersionedTable } from './versioned-table.js';
import type { timeRestrictionSchema } from '../resources/venue.js';

// Time restrictions (spec: What the service does, item 4: "time restrictions are satisfied").
// Each is an allowed window for one zone, optionally for one attendee type only: on the given
// ISO days of week (1 = Monday ... 7 = Sunday), from start_time to end_time, in the project's
// time zone. A window whose end is before its start runs past midnight into the next day.
// A zone with no restriction that applies to a type is open to it at any time.

export interface TimeRestrictionRow {
  id: number;
  project_id: number;
  access_zone_id: number;
  attendee_type_id: number | null;
  days_of_week: string;
  start_time: string;
  end_time: string;
  version: number;
  created_at: string;
  updated_at: string;
}

const clockTime = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'a time of day as HH:MM (00:00 to 23:59)');
const days = z
  .array(z.number().int().min(1).max(7))
  .min(1)
  .max(7)
  .refine((d) => new Set(d).size === d.length, 'days must not repeat');

const fields = {
  access_zone_id: z.number().int().positive(),
  attendee_type_id: z.number().int().positive().nullable().optional(),
  days_of_week: days.describe('ISO days of week: 1 = Monday ... 7 = Sunday'),
  start_time: clockTime,
  end_time: clockTime,
};
const notEmpty = (w: { start_time?: string | undefined; end_time?: string | undefined }) =>
  !w.start_time || !w.end_time || w.start_time !== w.end_time;
export const createTimeRestrictionBody = z
  .strictObject(fields)
  .refine(notEmpty, { path: ['end_time'], message: 'must differ from start_time' });
export const updateTimeRestrictionBody = z
  .strictObject(fields)
  .partial()
  .refine(notEmpty, { path: ['end_time'], message: 'must differ from start_time' });

export const timeRestrictionResource = ({
  project_id: _p,
  days_of_week,
  ...rest
}: TimeRestrictionRow): z.infer<typeof timeRestrictionSchema> => ({
  ...rest,
  days_of_week: JSON.parse(days_of_week) as number[],
});

export class TimeRestrictions {
  readonly table: VersionedTable<TimeRestrictionRow>;

  constructor(
    private readonly db: Database,
    clock: Clock,
    private readonly bus: EventBus,
  ) {
    this.table = new VersionedTable(db, clock, 'time_restrictions', 'time_restriction');
  }

  get(projectId: number, id: number): TimeRestrictionRow {
    return found(this.table.find(projectId, id), 'Time restriction');
  }

  private checkRefs(projectId: number, zoneId: number | undefined, typeId: number | null | undefined): void {
    if (
      zoneId !== undefined &&
      !statement(this.db, 'SELECT 1 FROM access_zones WHERE project_id = ? AND id = ?').get(projectId, zoneId)
    ) {
      throw validationError({ access_zone_id: ['The selected access zone id is invalid.'] });
    }
    if (
      typeId &&
      !statement(this.db, 'SELECT 1 FROM attendee_types WHERE project_id = ? AND id = ?').get(projectId, typeId)
    ) {
      throw validationError({ attendee_type_id: ['The selected attendee type id is invalid.'] });
    }
  }

  create(projectId: number, input: z.output<typeof createTimeRestrictionBody>): TimeRestrictionRow {
    return commit(this.db, this.bus, (work) => {
      this.checkRefs(projectId, input.access_zone_id, input.attendee_type_id);
      const row = this.table.insert(projectId, {
        access_zone_id: input.access_zone_id,
        attendee_type_id: input.attendee_type_id ?? null,
        days_of_week: JSON.stringify([...input.days_of_week].sort()),
        start_time: input.start_time,
        end_time: input.end_time,
      });
      work.emit('time_restriction.created', {
        projectId,
        resource: timeRestrictionResource(row),
        version: row.version,
      });
      return row;
    });
  }

  update(projectId: number, id: number, input: z.output<typeof updateTimeRestrictionBody>): TimeRestrictionRow {
    return commit(this.db, this.bus, (work) => {
      const current = this.get(projectId, id);
      this.checkRefs(projectId, input.access_zone_id, input.attendee_type_id);
      if ((input.start_time ?? current.start_time) === (input.end_time ?? current.end_time))
        throw validationError({ end_time: ['The end_time field must differ from start_time.'] });
      const values: Record<string, string | number | null> = {};
      for (const key of ['access_zone_id', 'attendee_type_id', 'start_time', 'end_time'] as const)
        if (input[key] !== undefined) values[key] = input[key];
      if (input.days_of_week) values.days_of_week = JSON.stringify([...input.days_of_week].sort());
      const row = this.table.update(projectId, id, values);
      work.emit('time_restriction.updated', {
        projectId,
        resource: timeRestrictionResource(row),
        version: row.version,
      });
      return row;
    });
  }

  delete(projectId: number, id: number): void {
    commit(this.db, this.bus, (work) => {
      this.get(projectId, id);
      work.emit('time_restriction.deleted', { projectId, id, version: this.table.delete(projectId, id) });
    });
  }
}
