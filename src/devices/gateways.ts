import { z } from 'zod';
import type { Clock } from '../clock.js';
import { iso } from '../clock.js';
import { found, validationError } from '../errors.js';
import type { EventBus } from '../events/bus.js';
import { commit, type Work } from '../events/unit-of-work.js';
import { assignGateway, type ReaderRow, readerResource } from '../venue/readers.js';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import type { ReaderStates } from './reader-state.js';
import type { gatewaySchema } from '../resources/devices.js';
import { deviceIdentifier as identifierField } from '../resources/identifier.js';

// Gateways (docs/mqtt.md): hardware that fronts readers and reports its own state and theirs,
// over MQTT (a retained status with a last will) or POST /webhook/v1/mqtt-gateway-status. Both
// end in report() below, so the two paths keep one state. A gateway is created over REST with
// the readers it fronts; those decide which reader topics it may use on the broker.

export interface GatewayRow {
  id: number;
  project_id: number;
  identifier: string;
  name: string | null;
  status: string;
  last_seen: string | null;
  last_report: string | null;
  created_at: string;
  updated_at: string;
}

export const createGatewayBody = z.strictObject({
  identifier: identifierField.describe('what the gateway sends as gateway_id'),
  name: z.string().trim().min(1).max(200).nullable().optional(),
  reader_ids: z.array(z.number().int().positive()).max(1000).optional().describe('the readers this gateway fronts'),
});
export const updateGatewayBody = createGatewayBody.partial();

/** The status report, as the webhook and the MQTT status topic carry it (spec: mqtt-gateway-status). */
export const gatewayReportSchema = z.object({
  gateway_id: z.string().min(1).max(128),
  status: z.string().trim().min(1).max(32),
  readers: z
    .array(
      z.object({
        reader_id: z.string().min(1).max(128),
        status: z.string().trim().min(1).max(32),
        last_scan: z
          .union([z.iso.datetime({ offset: true }), z.number().int().nonnegative()])
          .nullable()
          .optional(),
      }),
    )
    .max(1000)
    .optional(),
  timestamp: z.union([z.iso.datetime({ offset: true }), z.number().int().nonnegative()]).optional(),
});
export type GatewayReport = z.output<typeof gatewayReportSchema>;

/** Unix seconds or an ISO string to epoch ms; null when absent. */
export const instantOf = (value: string | number | null | undefined): number | null =>
  value === null || value === undefined ? null : typeof value === 'number' ? value * 1000 : Date.parse(value);

export class Gateways {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly bus: EventBus,
    private readonly readerStates: ReaderStates,
  ) {}

  list(projectId: number, offset: number, limit: number): { items: GatewayRow[]; total: number } {
    const items = statement(this.db, 'SELECT * FROM gateways WHERE project_id = ? ORDER BY id LIMIT ? OFFSET ?').all(
      projectId,
      limit,
      offset,
    ) as GatewayRow[];
    const total = (
      statement(this.db, 'SELECT count(*) AS n FROM gateways WHERE project_id = ?').get(projectId) as { n: number }
    ).n;
    return { items, total };
  }

  get(projectId: number, id: number): GatewayRow {
    return found(
      statement(this.db, 'SELECT * FROM gateways WHERE project_id = ? AND id = ?').get(projectId, id) as
        | GatewayRow
        | undefined,
      'Gateway',
    );
  }

  byId(id: number): GatewayRow | null {
    return (statement(this.db, 'SELECT * FROM gateways WHERE id = ?').get(id) as GatewayRow | undefined) ?? null;
  }

  /** Gateways with this identifier: in one project when given, else in any (unsigned webhooks). */
  withIdentifier(identifier: string, projectId: number | null): GatewayRow[] {
    if (projectId !== null)
      return statement(this.db, 'SELECT * FROM gateways WHERE project_id = ? AND identifier = ?').all(
        projectId,
        identifier,
      ) as GatewayRow[];
    return statement(this.db, 'SELECT * FROM gateways WHERE identifier = ?').all(identifier) as GatewayRow[];
  }

  readerIds(gatewayId: number): number[] {
    return (
      statement(this.db, 'SELECT id FROM readers WHERE gateway_id = ? ORDER BY id').all(gatewayId) as { id: number }[]
    ).map((r) => r.id);
  }

  resource(row: GatewayRow): z.infer<typeof gatewaySchema> {
    return {
      id: row.id,
      identifier: row.identifier,
      name: row.name,
      status: row.status,
      last_seen: row.last_seen,
      reader_ids: this.readerIds(row.id),
      last_report: row.last_report === null ? null : (JSON.parse(row.last_report) as Record<string, unknown>),
      created_at: row.created_at,
      updated_at: row.updated_at,
    };
  }

  create(projectId: number, input: z.output<typeof createGatewayBody>): GatewayRow {
    return commit(this.db, this.bus, (work) => {
      if (this.withIdentifier(input.identifier, projectId).length)
        throw validationError({ identifier: ['The identifier has already been taken.'] });
      const now = iso(this.clock.now());
      const id = Number(
        statement(
          this.db,
          'INSERT INTO gateways (project_id, identifier, name, created_at, updated_at) VALUES (?, ?, ?, ?, ?)',
        ).run(projectId, input.identifier, input.name ?? null, now, now).lastInsertRowid,
      );
      if (input.reader_ids) this.#assignReaders(projectId, id, input.reader_ids, work);
      return this.get(projectId, id);
    });
  }

  /** Its connections are closed once this commits: they reconnect under the new identifier and readers. */
  update(projectId: number, id: number, input: z.output<typeof updateGatewayBody>): GatewayRow {
    return commit(this.db, this.bus, (work) => {
      const row = this.get(projectId, id);
      if (
        input.identifier !== undefined &&
        input.identifier !== row.identifier &&
        this.withIdentifier(input.identifier, projectId).length
      ) {
        throw validationError({ identifier: ['The identifier has already been taken.'] });
      }
      statement(this.db, 'UPDATE gateways SET identifier = ?, name = ?, updated_at = ? WHERE id = ?').run(
        input.identifier ?? row.identifier,
        input.name === undefined ? row.name : input.name,
        iso(this.clock.now()),
        id,
      );
      if (input.reader_ids) this.#assignReaders(projectId, id, input.reader_ids, work);
      work.emit('device.credentials_revoked', { kind: 'gateway', deviceId: id });
      return this.get(projectId, id);
    });
  }

  delete(projectId: number, id: number): void {
    commit(this.db, this.bus, (work) => {
      this.get(projectId, id);
      this.#setGateway(projectId, this.readerIds(id), null, work);
      statement(this.db, 'DELETE FROM gateways WHERE id = ?').run(id);
      work.emit('gateway.deleted', { projectId, id });
    });
  }

  #assignReaders(projectId: number, gatewayId: number, readerIds: readonly number[], work: Work): void {
    const unknown = readerIds.filter(
      (r) => !statement(this.db, 'SELECT 1 FROM readers WHERE project_id = ? AND id = ?').get(projectId, r),
    );
    if (unknown.length)
      throw validationError({ reader_ids: [`The selected reader ids are invalid: ${unknown.join(', ')}.`] });
    const wanted = new Set(readerIds);
    this.#setGateway(
      projectId,
      this.readerIds(gatewayId).filter((r) => !wanted.has(r)),
      null,
      work,
    );
    this.#setGateway(projectId, [...wanted], gatewayId, work);
  }

  /**
   * Puts the readers behind the gateway (or none): each whose assignment changes takes a new
   * change version (a sync download sees it) and is announced as reader.updated.
   */
  #setGateway(projectId: number, readerIds: readonly number[], gatewayId: number | null, work: Work): void {
    for (const id of readerIds) {
      const changed = assignGateway(this.db, id, gatewayId, iso(this.clock.now()));
      if (changed === 0) continue;
      const row = statement(this.db, 'SELECT * FROM readers WHERE id = ?').get(id) as ReaderRow;
      work.emit('reader.updated', { projectId, resource: readerResource(row), version: row.version });
    }
  }

  /**
   * Records a status report (MQTT status topic, last will, or webhook): the gateway's status,
   * last seen, the report itself, and the state of each reader it names (by identifier, in the
   * gateway's project; identifiers it does not know are answered back, not an error).
   * Announces gateway.online / gateway.offline when the status changed.
   */
  report(
    gateway: GatewayRow,
    report: Pick<GatewayReport, 'status' | 'readers' | 'timestamp'>,
  ): { gateway: GatewayRow; unknownReaders: string[] } {
    const now = this.clock.now();
    const status = report.status.toLowerCase();
    const stored = { gateway_id: gateway.identifier, ...report, status, received_at: iso(now) };
    const unknownReaders: string[] = [];
    const updated = commit(this.db, this.bus, (work) => {
      statement(
        this.db,
        'UPDATE gateways SET status = ?, last_seen = ?, last_report = ?, updated_at = ? WHERE id = ?',
      ).run(status, iso(now), JSON.stringify(stored), iso(now), gateway.id);
      const row = this.byId(gateway.id)!;
      const event = { projectId: row.project_id, gateway: this.resource(row), timestamp: iso(now) };
      if (status !== gateway.status && (status === 'online' || status === 'offline'))
        work.emit(status === 'online' ? 'gateway.online' : 'gateway.offline', event);
      work.emit('gateway.reported', event);
      return row;
    });
    for (const r of report.readers ?? []) {
      const reader = statement(this.db, 'SELECT id FROM readers WHERE project_id = ? AND identifier = ?').get(
        gateway.project_id,
        r.reader_id,
      ) as { id: number } | undefined;
      if (!reader) unknownReaders.push(r.reader_id);
      else this.readerStates.reported(gateway.project_id, reader.id, r.status.toLowerCase(), instantOf(r.last_scan));
    }
    if (status === 'offline') this.readerStates.gatewayLost(gateway.project_id, this.readerIds(gateway.id));
    return { gateway: updated, unknownReaders };
  }
}
