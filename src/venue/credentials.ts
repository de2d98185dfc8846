import { z } from 'zod';
import type { Clock } from '../clock.js';
import { iso } from '../clock.js';
import { found, validationError } from '../errors.js';
import type { EventBus } from '../events/bus.js';
import { commit, type Work } from '../events/unit-of-work.js';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import { signValue } from '../credentials/signed-value.js';
import type { CredentialKeys } from './credential-keys.js';
import { nextRowId } from './row-ids.js';
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
    value: z.string().min(1).max(512).optional(),
    // docs/credentials.md: issuing a signed credential. Absent: the project's default when no value is given.
    signed: z.boolean().optional(),
    kind: z.enum(CREDENTIAL_KINDS).optional(),
    valid_from: instant.nullable().optional(),
    valid_until: instant.nullable().optional(),
  })
  .refine((c) => !c.valid_from || !c.valid_until || c.valid_from < c.valid_until, {
    path: ['valid_until'],
    message: 'must be after valid_from',
  })
  .refine((c) => !(c.signed && c.value !== undefined), {
    path: ['value'],
    message: 'a signed credential\'s value is made by the box: give no value with "signed": true',
  });

export const credentialResource = ({ project_id: _p, ...rest }: CredentialRow): z.infer<typeof credentialSchema> =>
  rest;

export class Credentials {
  readonly table: VersionedTable<CredentialRow>;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly bus: EventBus,
    private readonly keys: CredentialKeys,
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

  /** Inside a caller's transaction. Signed when asked, or when no value is given in a project that signs by default. */
  insert(
    projectId: number,
    attendeeId: number,
    input: z.output<typeof issueCredentialBody>,
    work: Work,
  ): CredentialRow {
    const signed = input.signed ?? (input.value === undefined && this.#signsByDefault(projectId));
    if (signed) return this.#insertSigned(projectId, attendeeId, input, work);
    // "signed": false, or a project that does not sign by default: the value is the caller's to give.
    if (input.value === undefined) throw validationError({ value: ['The value field is required.'] });
    if (this.table.exists(projectId, 'value', input.value))
      throw validationError({ value: ['The credential value is already in use in this project.'] });
    return this.#insert(projectId, attendeeId, input, input.value, work);
  }

  /** The credential takes its id first: its value signs it (docs/credentials.md). Unique by that id. */
  #insertSigned(
    projectId: number,
    attendeeId: number,
    input: z.output<typeof issueCredentialBody>,
    work: Work,
  ): CredentialRow {
    const validity = wholeSeconds(input);
    const key = this.keys.signingKey(projectId, work);
    const id = nextRowId(this.db, 'credentials');
    const attendeeTypeId = statement(this.db, 'SELECT attendee_type_id FROM attendees WHERE id = ?')
      .pluck()
      .get(attendeeId) as number | null;
    const value = signValue(
      {
        kind: input.kind ?? 'barcode',
        keyId: key.id,
        projectId,
        credentialId: id,
        attendeeId,
        attendeeTypeId: attendeeTypeId ?? null,
        validFrom: validity.valid_from === null ? null : Date.parse(validity.valid_from),
        validUntil: validity.valid_until === null ? null : Date.parse(validity.valid_until),
      },
      key.privateKey,
    );
    return this.#insert(projectId, attendeeId, { ...input, ...validity }, value, work, id);
  }

  #insert(
    projectId: number,
    attendeeId: number,
    input: z.output<typeof issueCredentialBody>,
    value: string,
    work: Work,
    id?: number,
  ): CredentialRow {
    const row = this.table.insert(projectId, {
      ...(id === undefined ? {} : { id }),
      attendee_id: attendeeId,
      value,
      kind: input.kind ?? 'barcode',
      status: 'active',
      valid_from: input.valid_from ?? null,
      valid_until: input.valid_until ?? null,
    });
    work.emit('credential.created', { projectId, resource: credentialResource(row), version: row.version });
    return row;
  }

  #signsByDefault(projectId: number): boolean {
    return (
      statement(this.db, 'SELECT signed_credentials_by_default FROM projects WHERE id = ?').pluck().get(projectId) === 1
    );
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

/** A signed value carries whole seconds (src/credentials/signed-value.ts): the row keeps what the value says. */
function wholeSeconds(input: z.output<typeof issueCredentialBody>): {
  valid_from: string | null;
  valid_until: string | null;
} {
  const floor = (t: string | null | undefined) =>
    t ? new Date(Math.floor(Date.parse(t) / 1000) * 1000).toISOString() : null;
  const validity = { valid_from: floor(input.valid_from), valid_until: floor(input.valid_until) };
  if (validity.valid_from && validity.valid_until && validity.valid_from >= validity.valid_until)
    throw validationError({ valid_until: ['A signed credential ends at least a whole second after valid_from.'] });
  return validity;
}
