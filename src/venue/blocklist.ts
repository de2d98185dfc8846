import { z } from 'zod';
import type { Clock } from '../clock.js';
import { found, validationError } from '../errors.js';
import type { EventBus } from '../events/bus.js';
import { commit } from '../events/unit-of-work.js';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import { VersionedTable } from './versioned-table.js';
import type { blocklistSchema } from '../resources/venue.js';

// Blocklist (spec: What the service does, item 4: "there is no blocklist entry"). An entry
// names either an attendee (all their credentials) or a single credential, with a reason and
// an optional `until` after which it no longer applies.

export interface BlocklistRow {
  id: number;
  project_id: number;
  attendee_id: number | null;
  credential_id: number | null;
  reason: string;
  until: string | null;
  version: number;
  created_at: string;
  updated_at: string;
}

const instant = z.iso.datetime({ offset: true }).transform((s) => new Date(s).toISOString());
const fields = {
  attendee_id: z.number().int().positive().nullable().optional(),
  credential_id: z.number().int().positive().nullable().optional(),
  reason: z.string().trim().min(1).max(1000),
  until: instant.nullable().optional(),
};
const exactlyOne = (e: { attendee_id?: number | null | undefined; credential_id?: number | null | undefined }) =>
  !e.attendee_id !== !e.credential_id;

export const createBlocklistBody = z
  .strictObject(fields)
  .refine(exactlyOne, { path: ['attendee_id'], message: 'give exactly one of attendee_id and credential_id' });
export const updateBlocklistBody = z.strictObject({ reason: fields.reason.optional(), until: fields.until });

export const blocklistResource = ({ project_id: _p, ...rest }: BlocklistRow): z.infer<typeof blocklistSchema> => rest;

export class Blocklist {
  readonly table: VersionedTable<BlocklistRow>;

  constructor(
    private readonly db: Database,
    clock: Clock,
    private readonly bus: EventBus,
  ) {
    this.table = new VersionedTable(db, clock, 'blocklist_entries', 'blocklist_entry');
  }

  get(projectId: number, id: number): BlocklistRow {
    return found(this.table.find(projectId, id), 'Blocklist entry');
  }

  create(projectId: number, input: z.output<typeof createBlocklistBody>): BlocklistRow {
    return commit(this.db, this.bus, (work) => {
      if (
        input.attendee_id &&
        !statement(this.db, 'SELECT 1 FROM attendees WHERE project_id = ? AND id = ?').get(projectId, input.attendee_id)
      ) {
        throw validationError({ attendee_id: ['The selected attendee id is invalid.'] });
      }
      if (
        input.credential_id &&
        !statement(this.db, 'SELECT 1 FROM credentials WHERE project_id = ? AND id = ?').get(
          projectId,
          input.credential_id,
        )
      ) {
        throw validationError({ credential_id: ['The selected credential id is invalid.'] });
      }
      const row = this.table.insert(projectId, {
        attendee_id: input.attendee_id ?? null,
        credential_id: input.credential_id ?? null,
        reason: input.reason,
        until: input.until ?? null,
      });
      work.emit('blocklist_entry.created', { projectId, resource: blocklistResource(row), version: row.version });
      return row;
    });
  }

  update(projectId: number, id: number, input: z.output<typeof updateBlocklistBody>): BlocklistRow {
    return commit(this.db, this.bus, (work) => {
      this.get(projectId, id);
      const values: Record<string, string | null> = {};
      if (input.reason !== undefined) values.reason = input.reason;
      if (input.until !== undefined) values.until = input.until;
      const row = this.table.update(projectId, id, values);
      work.emit('blocklist_entry.updated', { projectId, resource: blocklistResource(row), version: row.version });
      return row;
    });
  }

  delete(projectId: number, id: number): void {
    commit(this.db, this.bus, (work) => {
      this.get(projectId, id);
      work.emit('blocklist_entry.deleted', { projectId, id, version: this.table.delete(projectId, id) });
    });
  }
}
