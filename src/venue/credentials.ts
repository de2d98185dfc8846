import { z } from 'zod';
import type { Clock } from '../clock.js';
import { iso } from '../clock.js';
import { found, validationError } from '../errors.js';
import type { EventBus } from '../events/bus.js';
import { commit, type Work } from '../events/unit-of-work.js';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import { VersionedTable } from './versioned-table.js';
import { CREDENTIAL_KINDS, type credentialSchema } from '../resources/venue.js';

// Credentials (spec: What the service does, item 5): barcodes, QR codes, RFID cards, NFC tags
// assigned to attendees. A value is unique within a project, whoever holds it and whether or
// not it is revoked (a reused value would make old scans ambiguous). Revoking keeps the row.

export interface CredentialRow {
  id: number;
  project_id: number;
  attendee_id: number;
  value: string;
  kind: (typeof CREDENTIAL_KINDS)[number];
  status: 'active' | 'revoked';
  valid_from: string | null;
  valid_until: string | null;
  revoked_at: string | null;
  version: number;
  created_at: string;
  updated_at: string;
}

const instant = z.iso.datetime({ offset: true }).transform((s) => new Date(s).toISOString());

export const issueCredentialBody = z
  .strictObject({
    value: z.string().min(1).max(512),
    kind: z.enum(CREDENTIAL_KINDS).optional(),
    valid_from: instant.nullable().optional(),
    valid_until: instant.nullable().optional(),
  })
  .refine((c) => !c.valid_from || !c.valid_until || c.valid_from < c.valid_until, {
    path: ['valid_until'],
    message: 'must be after valid_from',
  });

export const credentialResource = ({ project_id: _p, ...rest }: CredentialRow): z.infer<typeof credentialSchema> =>
  rest;

export class Credentials {
  readonly table: VersionedTable<CredentialRow>;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly bus: EventBus,
  ) {
    this.table = new VersionedTable(db, clock, 'credentials', 'credential');
  }

  get(projectId: number, id: number): CredentialRow {
    return found(this.table.find(projectId, id), 'Credential');
  }

  ofAttendee(attendeeId: number): CredentialRow[] {
    return statement(this.db, 'SELECT * FROM credentials WHERE attendee_id = ? ORDER BY id').all(
      attendeeId,
    ) as CredentialRow[];
  }

  /** Each attendee's first active credential, in one query (for exports). */
  firstActiveByAttendee(projectId: number): Map<number, CredentialRow> {
    const rows = statement(
      this.db,
      "SELECT * FROM credentials WHERE project_id = ? AND status = 'active' ORDER BY id",
    ).all(projectId) as CredentialRow[];
    const first = new Map<number, CredentialRow>();
    for (const row of rows) if (!first.has(row.attendee_id)) first.set(row.attendee_id, row);
    return first;
  }

  /** Inside a caller's transaction. */
  insert(
    projectId: number,
    attendeeId: number,
    input: z.output<typeof issueCredentialBody>,
    work: Work,
  ): CredentialRow {
    if (this.table.exists(projectId, 'value', input.value))
      throw validationError({ value: ['The credential value is already in use in this project.'] });
    const row = this.table.insert(projectId, {
      attendee_id: attendeeId,
      value: input.value,
      kind: input.kind ?? 'barcode',
      status: 'active',
      valid_from: input.valid_from ?? null,
      valid_until: input.valid_until ?? null,
    });
    work.emit('credential.created', { projectId, resource: credentialResource(row), version: row.version });
    return row;
  }

  issue(projectId: number, attendeeId: number, input: z.output<typeof issueCredentialBody>): CredentialRow {
    return commit(this.db, this.bus, (work) => this.insert(projectId, attendeeId, input, work));
  }

  /** Revoking an already revoked credential changes nothing and answers it as it is. */
  revoke(projectId: number, id: number): CredentialRow {
    return commit(this.db, this.bus, (work) => {
      const current = this.get(projectId, id);
      if (current.status === 'revoked') return current;
      const row = this.table.update(projectId, id, { status: 'revoked', revoked_at: iso(this.clock.now()) });
      work.emit('credential.revoked', { projectId, resource: credentialResource(row), version: row.version });
      return row;
    });
  }
}
