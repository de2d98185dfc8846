import { parse as parseCsvText } from 'csv-parse/sync';
import { z } from 'zod';
import type { Clock } from '../clock.js';
import { iso } from '../clock.js';
import { fieldErrorsFromZod, type FieldErrors } from '../errors.js';
import type { EventBus } from '../events/bus.js';
import { commit } from '../events/unit-of-work.js';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import { writeAttendees } from './attendee-writer.js';
import { ATTENDEE_STATUSES, CREDENTIAL_KINDS } from '../resources/venue.js';

// Bulk import of attendees with their credentials, from CSV or JSON (docs/venue.md).
// Every row is validated in memory first (against the project's types, external ids and
// credential values, and against the other rows of the file); then all valid rows are written
// in one transaction with prepared statements and one reserved block of change versions.
// `all` (the default) writes nothing when any row is bad; `partial` writes the good rows.
// One `attendee.imported` event announces the batch (not 100k attendee.created events).

export type ImportMode = 'all' | 'partial';

const KNOWN = [
  'first_name',
  'last_name',
  'email',
  'attendee_type',
  'external_id',
  'status',
  'credential_value',
  'credential_kind',
  'credential_valid_from',
  'credential_valid_until',
] as const;

const blankToUndefined = (v: unknown) => (v === '' || v === null ? undefined : v);
const opt = <T extends z.ZodType>(s: T) => z.preprocess(blankToUndefined, s.optional());
const instant = z.iso.datetime({ offset: true }).transform((s) => new Date(s).toISOString());

export const importRowSchema = z
  .object({
    first_name: z.string().trim().min(1).max(255),
    last_name: opt(z.string().trim().max(255)),
    email: opt(z.email().max(255)),
    attendee_type: opt(z.string().max(60)),
    external_id: opt(z.string().trim().min(1).max(255)),
    status: opt(z.enum(ATTENDEE_STATUSES)),
    credential_value: opt(z.string().min(1).max(512)),
    credential_kind: opt(z.enum(CREDENTIAL_KINDS)),
    credential_valid_from: opt(instant),
    credential_valid_until: opt(instant),
  })
  .catchall(z.unknown());

export interface RowError {
  row: number;
  external_id: string | null;
  errors: FieldErrors;
}

export interface ImportReport {
  mode: ImportMode;
  total: number;
  imported: number;
  failed: number;
  credentials: number;
  errors: RowError[];
}

/** A file that cannot be an import; `cause.code` names why (upload-imports.ts stores the code, never the bytes). */
export class ImportFormatError extends Error {}

export const EMPTY_IMPORT = 'The file is empty: send CSV with a header row, or JSON rows.';
const formatError = (message: string, code: string) => new ImportFormatError(message, { cause: { code } });

/** CSV with a header row naming first_name; unknown columns land in `extra`. What is not such a
 * file (empty, binary, another header) is refused whole, never as every row's first_name. */
export function parseCsv(text: string): Record<string, string>[] {
  if (text.replace(/^\uFEFF/, '').trim() === '') throw formatError(EMPTY_IMPORT, 'EMPTY');
  // CSV text holds no NUL byte; a spreadsheet, zip or image sent as it is nearly always does.
  if (text.includes('\u0000'))
    throw formatError(
      'The file is not CSV text: it holds NUL bytes (a spreadsheet or another binary file? Save it as CSV, UTF-8).',
      'NOT_TEXT',
    );
  const columns = (header: string[]) => {
    // The message names no column: an upload's error never repeats what the file holds.
    if (!header.includes('first_name'))
      throw formatError(
        'The header row has no first_name column: the first line must name the columns, separated by commas (docs/venue.md).',
        'NO_FIRST_NAME_COLUMN',
      );
    return header;
  };
  try {
    return parseCsvText(text, { columns, bom: true, skip_empty_lines: true, trim: true, relax_column_count: false });
  } catch (err) {
    if (err instanceof ImportFormatError) throw err;
    throw new ImportFormatError(`The CSV could not be read: ${(err as Error).message}`, { cause: err });
  }
}

type Written = { credentials: number; fromVersion: number; toVersion: number };
type Valid = {
  row: number;
  values: z.output<typeof importRowSchema>;
  typeId: number | null;
  extra: Record<string, unknown>;
};

export class AttendeeImporter {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly bus: EventBus,
  ) {}

  run(projectId: number, rows: unknown[], mode: ImportMode): ImportReport {
    // One immediate transaction from the first read: the rows are judged against the external
    // ids and credential values read here, and no other connection may add one before they are
    // written (store/transactions.ts).
    return commit(this.db, this.bus, (work) => {
      const { report, written } = this.judgeAndWrite(projectId, rows, mode);
      if (written)
        work.emit('attendee.imported', {
          projectId,
          count: report.imported,
          credentials: written.credentials,
          fromVersion: written.fromVersion,
          toVersion: written.toVersion,
        });
      return report;
    });
  }

  private judgeAndWrite(
    projectId: number,
    rows: unknown[],
    mode: ImportMode,
  ): { report: ImportReport; written: Written | null } {
    const types = new Map(
      (
        statement(this.db, 'SELECT slug, id FROM attendee_types WHERE project_id = ?').all(projectId) as {
          slug: string;
          id: number;
        }[]
      ).map((t) => [t.slug, t.id]),
    );
    const externalIds = new Set(
      statement(this.db, 'SELECT external_id FROM attendees WHERE project_id = ? AND external_id IS NOT NULL')
        .pluck()
        .all(projectId) as string[],
    );
    const values = new Set(
      statement(this.db, 'SELECT value FROM credentials WHERE project_id = ?').pluck().all(projectId) as string[],
    );

    const valid: Valid[] = [];
    const errors: RowError[] = [];
    rows.forEach((raw, index) => {
      const row = index + 1;
      const parsed = importRowSchema.safeParse(raw);
      const externalId =
        typeof (raw as { external_id?: unknown })?.external_id === 'string'
          ? (raw as { external_id: string }).external_id || null
          : null;
      const fail = (e: FieldErrors) => errors.push({ row, external_id: externalId, errors: e });
      if (!parsed.success) {
        fail(fieldErrorsFromZod(parsed.error));
        return;
      }
      const v = parsed.data;
      const e: FieldErrors = {};
      const typeId = v.attendee_type === undefined ? null : (types.get(v.attendee_type) ?? null);
      if (v.attendee_type !== undefined && typeId === null)
        e.attendee_type = [`The attendee type "${v.attendee_type}" does not exist in this project.`];
      if (v.external_id !== undefined && externalIds.has(v.external_id))
        e.external_id = ['The external id has already been taken (by an attendee or an earlier row).'];
      if (v.credential_value !== undefined && values.has(v.credential_value))
        e.credential_value = ['The credential value is already in use (by an attendee or an earlier row).'];
      if (
        v.credential_value === undefined &&
        (v.credential_kind || v.credential_valid_from || v.credential_valid_until)
      )
        e.credential_value = ['The credential value is required with the other credential fields.'];
      if (v.credential_valid_from && v.credential_valid_until && v.credential_valid_from >= v.credential_valid_until)
        e.credential_valid_until = ['The credential_valid_until field must be after credential_valid_from.'];
      if (Object.keys(e).length) {
        fail(e);
        return;
      }
      if (v.external_id !== undefined) externalIds.add(v.external_id);
      if (v.credential_value !== undefined) values.add(v.credential_value);
      const extra = Object.fromEntries(
        Object.entries(v).filter(
          ([k, val]) => !(KNOWN as readonly string[]).includes(k) && val !== '' && val !== undefined,
        ),
      );
      valid.push({ row, values: v, typeId, extra });
    });

    const report: ImportReport = {
      mode,
      total: rows.length,
      imported: 0,
      failed: errors.length,
      credentials: 0,
      errors,
    };
    if (valid.length === 0 || (mode === 'all' && errors.length > 0)) return { report, written: null };
    const written = this.write(projectId, valid);
    report.imported = valid.length;
    report.credentials = written.credentials;
    return { report, written };
  }

  private write(projectId: number, rows: Valid[]): Written {
    // One block of change versions and of ids (row-ids.ts) for the whole import: attendee-writer.ts.
    const { fromVersion, toVersion, credentials } = writeAttendees(
      this.db,
      projectId,
      rows.map(({ values: v, typeId, extra }) => ({
        op: 'create',
        values: {
          attendee_type_id: typeId,
          first_name: v.first_name,
          last_name: v.last_name ?? '',
          email: v.email?.toLowerCase() ?? null,
          external_id: v.external_id ?? null,
          status: v.status ?? 'active',
          extra: JSON.stringify(extra),
        },
        credential:
          v.credential_value === undefined
            ? undefined
            : {
                value: v.credential_value,
                kind: v.credential_kind ?? 'barcode',
                status: 'active',
                valid_from: v.credential_valid_from ?? null,
                valid_until: v.credential_valid_until ?? null,
              },
      })),
      iso(this.clock.now()),
    );
    return { credentials, fromVersion, toVersion };
  }
}
