import { z } from 'zod';
import { AppError, validationError } from '../../errors.js';
import {
  type AttendeeImporter,
  EMPTY_IMPORT,
  ImportFormatError,
  parseCsv,
  type ImportReport,
} from '../../venue/attendee-import.js';
import type { Venue } from '../../venue/index.js';
import { attendeeQuery } from '../../venue/attendees.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { single, validationErrorSchema } from '../resources.js';
import { csvDocument } from '../csv.js';
import { PROJECT_PATH, projectParams } from './crud.js';

// GET .../attendees/export writes the same format back out.
// POST .../attendees/import: CSV (text/csv, a header row) or JSON (an array of rows, or
// {mode, attendees}). Bulk rate class. docs/venue.md describes the columns and the report.

export const IMPORT_BODY_LIMIT = 64 * 1024 * 1024;

const row = z.record(z.string(), z.unknown());
// Optional here so that an empty upload reaches the handler and is answered on `file`, as an
// unreadable one is (docs/venue.md); the document still says a body is required (bodyRequired).
const importBody = z
  .union(
    [
      z.string().describe('CSV with a header row (Content-Type: text/csv)'),
      z.array(row),
      z.strictObject({ mode: z.enum(['all', 'partial']).optional(), attendees: z.array(row) }),
    ],
    {
      error: 'send CSV with a header row (text/csv), or JSON: an array of rows or {"mode", "attendees"}',
    },
  )
  .optional();

const reportSchema = z.object({
  mode: z.enum(['all', 'partial']),
  total: z.number().int(),
  imported: z.number().int(),
  failed: z.number().int(),
  credentials: z.number().int(),
  errors: z.array(
    z.object({
      row: z.number().int(),
      external_id: z.string().nullable(),
      errors: z.record(z.string(), z.array(z.string())),
    }),
  ),
});

/** 422 when nothing was written because of bad rows; field keys are rows.<n>.<field>. */
export function importOutcome(report: ImportReport) {
  if (report.imported > 0 || report.failed === 0) return { status: 200, body: { data: report } };
  const errors = Object.fromEntries(
    report.errors.flatMap((e) =>
      Object.entries(e.errors).map(([field, messages]) => [`rows.${e.row}.${field}`, messages]),
    ),
  );
  const err = validationError(errors);
  return { status: 422, body: { ...err.body, message: `${err.body.message} Nothing was imported.`, data: report } };
}

export function attendeeImportRoutes({ importer }: { importer: AttendeeImporter }): AnyRoute[] {
  return [
    defineRoute({
      method: 'POST',
      path: `${PROJECT_PATH}/attendees/import`,
      operationId: 'attendees.import',
      tags: ['Attendees'],
      summary: 'Import attendees with their credentials from CSV or JSON',
      description:
        'mode=all (default) writes nothing if any row is bad; mode=partial writes the good rows. The report lists each bad row with its field errors.',
      ability: 'attendees:write',
      rateClass: 'bulk',
      project: true,
      bodyKind: 'json-or-csv',
      bodyLimitBytes: IMPORT_BODY_LIMIT,
      bodyRequired: true,
      params: projectParams,
      query: z.object({ mode: z.enum(['all', 'partial']).optional() }),
      body: importBody,
      responses: {
        200: { description: 'The import report', schema: single(reportSchema) },
        422: {
          description:
            'Bad rows and nothing imported (errors keyed rows.<n>.<field>), or an empty or unreadable file (on file)',
          schema: validationErrorSchema.extend({ data: reportSchema.optional() }),
        },
      },
      handler: ({ project, query, body }) => {
        if (body === undefined) throw validationError({ file: [EMPTY_IMPORT] });
        let rows: unknown[];
        try {
          rows = typeof body === 'string' ? parseCsv(body) : Array.isArray(body) ? body : body.attendees;
        } catch (err) {
          if (err instanceof ImportFormatError) throw validationError({ file: [err.message] });
          throw err;
        }
        if (rows.length === 0)
          throw new AppError(
            'validation_failed',
            {},
            { body: { message: 'The import holds no rows.', errors: { file: ['The import holds no rows.'] } } },
          );
        const mode = query.mode ?? (typeof body === 'object' && !Array.isArray(body) ? body.mode : undefined) ?? 'all';
        return importOutcome(importer.run(project!.id, rows, mode));
      },
    }),
  ];
}

const CSV_COLUMNS = [
  'first_name',
  'last_name',
  'email',
  'attendee_type',
  'external_id',
  'status',
  'credential_value',
  'credential_kind',
] as const;

export function attendeeExportRoutes({ venue }: { venue: Venue }): AnyRoute[] {
  return [
    defineRoute({
      method: 'GET',
      path: `${PROJECT_PATH}/attendees/export`,
      operationId: 'attendees.export',
      tags: ['Attendees'],
      summary: 'Export attendees as CSV in the import format (their first active credential), with the list filters',
      ability: 'attendees:read',
      rateClass: 'search',
      project: true,
      params: projectParams,
      query: attendeeQuery,
      responses: { 200: { description: 'CSV with a header row', text: 'text/csv' } },
      handler: ({ project, query }) => {
        const { items } = venue.attendees.search(project!.id, query, 0, Number.MAX_SAFE_INTEGER);
        const credentials = venue.credentials.firstActiveByAttendee(project!.id);
        const rows = items.map((row) => {
          const a = venue.attendees.resource(row);
          const credential = credentials.get(row.id);
          return [
            a.first_name,
            a.last_name,
            a.email,
            a.attendee_type,
            a.external_id,
            a.status,
            credential?.value,
            credential?.kind,
          ];
        });
        return {
          body: csvDocument(CSV_COLUMNS, rows),
          headers: {
            'Content-Type': 'text/csv; charset=utf-8',
            'Content-Disposition': `attachment; filename="attendees-${project!.slug}.csv"`,
          },
        };
      },
    }),
  ];
}
