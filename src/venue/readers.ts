import { z } from 'zod';
import type { Clock } from '../clock.js';
import { found, validationError } from '../errors.js';
import type { EventBus } from '../events/bus.js';
import { commit } from '../events/unit-of-work.js';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import { nextVersion, VersionedTable } from './versioned-table.js';
import { deviceIdentifier as identifierField } from '../resources/identifier.js';
import { READER_TYPES, type ReaderResource } from '../resources/venue.js';
import { deleteDeviceTokens } from '../devices/device-tokens.js';

// Readers (spec: Reader, embedded in an access point). identifier is unique per project and
// is what a reader logs in with; type is barcode, qr, rfid or nfc (docs/venue.md).

export interface ReaderRow {
  id: number;
  project_id: number;
  access_point_id: number | null;
  identifier: string;
  type: (typeof READER_TYPES)[number];
  version: number;
  created_at: string;
  updated_at: string;
}

export const createReaderBody = z.strictObject({
  identifier: identifierField,
  type: z.enum(READER_TYPES).optional(),
  access_point_id: z.number().int().positive().nullable().optional(),
});
export const updateReaderBody = createReaderBody.partial();

export const readerResource = (r: ReaderRow): ReaderResource => ({
  id: r.id,
  identifier: r.identifier,
  type: r.type,
  access_point_id: r.access_point_id,
  version: r.version,
  created_at: r.created_at,
  updated_at: r.updated_at,
});

export class Readers {
  readonly table: VersionedTable<ReaderRow>;

  constructor(
    private readonly db: Database,
    clock: Clock,
    private readonly bus: EventBus,
  ) {
    this.table = new VersionedTable(db, clock, 'readers', 'reader');
  }

  get(projectId: number, id: number): ReaderRow {
    return found(this.table.find(projectId, id), 'Reader');
  }

  /** The gateway fronting the reader (set from the gateway's side: devices/gateways.ts), or null. */
  gatewayOf(id: number): number | null {
    return (
      (
        statement(this.db, 'SELECT gateway_id FROM readers WHERE id = ?').get(id) as
          | { gateway_id: number | null }
          | undefined
      )?.gateway_id ?? null
    );
  }

  ofAccessPoint(accessPointId: number): ReaderRow[] {
    return statement(this.db, 'SELECT * FROM readers WHERE access_point_id = ? ORDER BY id').all(
      accessPointId,
    ) as ReaderRow[];
  }

  private checkAccessPoint(projectId: number, id: number | null | undefined): void {
    if (id === null || id === undefined) return;
    // Another project's access point is as unknown as a missing one.
    if (!statement(this.db, 'SELECT 1 FROM access_points WHERE project_id = ? AND id = ?').get(projectId, id)) {
      throw validationError({ access_point_id: ['The selected access point id is invalid.'] });
    }
  }

  create(projectId: number, input: z.output<typeof createReaderBody>): ReaderRow {
    return commit(this.db, this.bus, (work) => {
      this.checkAccessPoint(projectId, input.access_point_id);
      if (this.table.exists(projectId, 'identifier', input.identifier))
        throw validationError({ identifier: ['The identifier has already been taken.'] });
      const row = this.table.insert(projectId, {
        identifier: input.identifier,
        type: input.type ?? 'barcode',
        access_point_id: input.access_point_id ?? null,
      });
      work.emit('reader.created', { projectId, resource: readerResource(row), version: row.version });
      return row;
    });
  }

  update(projectId: number, id: number, input: z.output<typeof updateReaderBody>): ReaderRow {
    return commit(this.db, this.bus, (work) => {
      this.get(projectId, id);
      this.checkAccessPoint(projectId, input.access_point_id);
      if (input.identifier && this.table.exists(projectId, 'identifier', input.identifier, id)) {
        throw validationError({ identifier: ['The identifier has already been taken.'] });
      }
      const values: Record<string, string | number | null> = {};
      if (input.identifier !== undefined) values.identifier = input.identifier;
      if (input.type !== undefined) values.type = input.type;
      if (input.access_point_id !== undefined) values.access_point_id = input.access_point_id;
      const row = this.table.update(projectId, id, values);
      work.emit('reader.updated', { projectId, resource: readerResource(row), version: row.version });
      return row;
    });
  }

  delete(projectId: number, id: number): void {
    commit(this.db, this.bus, (work) => {
      this.get(projectId, id);
      // Its MQTT token goes with it: SQLite may give the id to the next reader made, which must
      // not inherit the token (devices/device-tokens.ts keys tokens by device id).
      deleteDeviceTokens(this.db, 'reader', id);
      const version = this.table.delete(projectId, id);
      work.emit('reader.deleted', { projectId, id, version });
    });
  }
}

/** Puts a reader behind a gateway (or none: null) when it is not there yet, with a new change version (a sync
 * download sees it; the version is taken either way); answers 1, or 0 when it was there already. */
export function assignGateway(db: Database, readerId: number, gatewayId: number | null, now: string): number {
  return statement(
    db,
    'UPDATE readers SET gateway_id = ?, version = ?, updated_at = ? WHERE id = ? AND gateway_id IS NOT ?',
  ).run(gatewayId, nextVersion(db), now, readerId, gatewayId).changes;
}
