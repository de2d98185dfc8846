import type { Clock } from '../src/clock.js';
import { iso } from '../src/clock.js';
import type { EventBus } from '../src/events/bus.js';
import type { Work } from '../src/events/unit-of-work.js';
import { outboxEntryOf } from '../src/feed/catalogue.js';
import type { Database } from '../src/store/database.js';
import { statement } from '../src/store/statements.js';
import { insertCredential, revokeCredential } from '../src/venue/attendee-writer.js';
import type { SyncConflicts } from './conflicts.js';
import type { DeletedRows } from './deleted-rows.js';
import type { EdgeRow } from './edges.js';
import type { UploadedChange } from './protocol.js';

// Credentials an edge issued or revoked, on the cloud (docs/sync.md: up): a credential is
// stored under the edge's id unless its value is another's here or its holder is not in the
// project (a credential_value conflict, not applied); a revocation of an active credential
// applies, one of a credential the cloud deleted meanwhile is a deleted_row conflict
// (deleted-rows.ts). Each applied change goes to the cloud's outbox. Runs inside the upload's
// transaction, in the change's savepoint (upload-changes.ts).

type Emit = () => void;

export class UploadCredentials {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly bus: EventBus,
    private readonly conflicts: SyncConflicts,
    private readonly deletedRows: DeletedRows,
  ) {}

  created(edge: EdgeRow, projectId: number, data: Record<string, unknown>, announce: Emit[], work: Work): void {
    const id = Number(data.id);
    if (statement(this.db, 'SELECT 1 FROM credentials WHERE id = ? AND project_id = ?').get(id, projectId)) return;
    const taken = statement(this.db, 'SELECT id FROM credentials WHERE project_id = ? AND value = ?')
      .pluck()
      .get(projectId, data.value) as number | undefined;
    if (
      taken !== undefined ||
      !statement(this.db, 'SELECT 1 FROM attendees WHERE id = ? AND project_id = ?').get(data.attendee_id, projectId)
    ) {
      const conflict = this.conflicts.record(projectId, {
        kind: 'credential_value',
        edgeId: edge.id,
        entity: 'credential',
        entityId: id,
        field: 'value',
        edgeValue: data.value,
        cloudValue: taken ?? null,
      });
      work.record(outboxEntryOf('sync.conflict', { projectId, conflict })!);
      announce.push(() => this.bus.emit('sync.conflict', { projectId, conflict }));
      return;
    }
    const now = iso(this.clock.now());
    insertCredential(
      this.db,
      projectId,
      {
        id,
        attendee_id: data.attendee_id,
        value: data.value,
        kind: (data.kind as string) ?? 'barcode',
        status: (data.status as string) ?? 'active',
        valid_from: (data.valid_from as string | null) ?? null,
        valid_until: (data.valid_until as string | null) ?? null,
        revoked_at: (data.revoked_at as string | null) ?? null,
      },
      (data.created_at as string) ?? now,
      now,
    );
    work.record({ event: 'credential.created', projectId, data: this.#resource(id) });
  }

  /** Answers false when this project never held the credential (the caller refuses the change). */
  revoked(edge: EdgeRow, projectId: number, c: UploadedChange, now: string, announce: Emit[], work: Work): boolean {
    const id = Number(c.data.id);
    if (this.deletedRows.revocationOfDeleted(edge, projectId, c, id, announce, work)) return true;
    if (!statement(this.db, 'SELECT 1 FROM credentials WHERE id = ? AND project_id = ?').get(id, projectId))
      return false;
    const changed = revokeCredential(this.db, projectId, id, (c.data.revoked_at as string | null) ?? now, now);
    if (changed) work.record({ event: 'credential.revoked', projectId, data: this.#resource(id) });
    return true;
  }

  #resource(id: number): Record<string, unknown> {
    const { project_id: _p, ...rest } = statement(this.db, 'SELECT * FROM credentials WHERE id = ?').get(id) as Record<
      string,
      unknown
    >;
    return rest;
  }
}
