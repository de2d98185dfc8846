import { z } from 'zod';
import type { Clock } from '../clock.js';
import { iso } from '../clock.js';
import { JsonDepthError, parseJson } from '../json-depth.js';
import type { Logger } from '../logger.js';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import { ImportFormatError, parseCsv, type AttendeeImporter, type ImportReport } from '../venue/attendee-import.js';
import { ImportFileError, readImportFile } from './import-file.js';

// POST /webhook/v1/large-upload-finalized (docs/webhooks-incoming.md): an
// object store says an upload is complete. Every notice is recorded. When its bucket is the
// configured import bucket and its content type is an attendee CSV or JSON, an import is queued:
// the box has no cloud credentials, so it reads the object from incomingWebhooks.importDir, the
// directory where that bucket is mounted or synced (gcsfuse, rclone, s3fs), at the object's
// name; then runs the attendee importer in `partial` mode (valid rows in, each bad row reported).
// The outcome (imported, failed with the reason, or the importer's report) is kept on the
// upload's row, listed by GET .../uploads, and logged. The file is read by import-file.ts:
// regular files inside the directory only, size-checked first (docs/security.md, attack 8); a reason never
// quotes the file (JSON.parse and csv-parse messages do, so they are not passed on).

export const finalizedSchema = z.object({
  kind: z.string().max(100).optional(),
  name: z.string().min(1).max(1024).describe('object path in the bucket'),
  bucket: z.string().min(1).max(255),
  contentType: z.string().max(255).optional(),
  size: z
    .union([z.string().regex(/^\d{1,15}$/), z.number().int().nonnegative()])
    .optional()
    .describe('bytes (a string in the spec)'),
  timeCreated: z.iso.datetime({ offset: true }).optional(),
});

export type UploadStatus = 'recorded' | 'queued' | 'imported' | 'failed';

export interface UploadRow {
  id: number;
  project_id: number;
  bucket: string;
  name: string;
  content_type: string | null;
  size: number | null;
  time_created: string | null;
  status: UploadStatus;
  report: string | null;
  received_at: string;
  finished_at: string | null;
}

export const uploadSchema = z.object({
  id: z.number().int(),
  bucket: z.string(),
  name: z.string(),
  content_type: z.string().nullable(),
  size: z.number().int().nullable(),
  time_created: z.string().nullable(),
  status: z
    .enum(['recorded', 'queued', 'imported', 'failed'])
    .describe('recorded: not an import; queued, then imported or failed'),
  report: z.unknown().nullable().describe('the import report, or {error} when it failed'),
  received_at: z.string(),
  finished_at: z.string().nullable(),
});

const IMPORTABLE = new Set(['text/csv', 'application/json']);

export interface UploadImportSettings {
  importBucket: string | null;
  importDir: string | null;
  /** The largest object read for an import (incomingWebhooks.importMaxBytes). */
  importMaxBytes: number;
}

/** A failure's reason as stored and listed: what went wrong, never the file's contents. */
function reasonOf(err: unknown, name: string): string | null {
  if (err instanceof ImportFileError) return err.message;
  if (err instanceof JsonDepthError) return `The object "${name}" is not valid JSON: ${err.message}.`;
  if (err instanceof SyntaxError) {
    const at = /at position (\d+)/.exec(err.message);
    return `The object "${name}" is not valid JSON${at ? ` (at byte ${at[1]})` : ''}.`;
  }
  if (err instanceof ImportFormatError) {
    const cause = err.cause as { code?: unknown; lines?: unknown } | undefined;
    const code = typeof cause?.code === 'string' ? cause.code : 'unreadable';
    return `The object "${name}" could not be read as CSV (${code}${typeof cause?.lines === 'number' ? `, line ${cause.lines}` : ''}).`;
  }
  return null;
}

export class UploadImports {
  readonly #running = new Set<Promise<void>>();

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly importer: AttendeeImporter,
    private readonly settings: UploadImportSettings,
    private readonly log: Logger,
  ) {}

  resource(row: UploadRow): z.infer<typeof uploadSchema> {
    const { project_id: _p, report, ...rest } = row;
    return { ...rest, report: report === null ? null : (JSON.parse(report) as unknown) };
  }

  list(projectId: number, offset: number, limit: number): { items: UploadRow[]; total: number } {
    const items = statement(
      this.db,
      'SELECT * FROM finalized_uploads WHERE project_id = ? ORDER BY id DESC LIMIT ? OFFSET ?',
    ).all(projectId, limit, offset) as UploadRow[];
    const { n } = statement(this.db, 'SELECT count(*) AS n FROM finalized_uploads WHERE project_id = ?').get(
      projectId,
    ) as { n: number };
    return { items, total: n };
  }

  get(id: number): UploadRow | null {
    return (
      (statement(this.db, 'SELECT * FROM finalized_uploads WHERE id = ?').get(id) as UploadRow | undefined) ?? null
    );
  }

  /** Records the notice; queues the import when it is one. Answers the row as recorded. */
  receive(projectId: number, notice: z.output<typeof finalizedSchema>): UploadRow {
    const contentType = notice.contentType?.split(';')[0]?.trim().toLowerCase() ?? null;
    const importable =
      this.settings.importBucket !== null &&
      notice.bucket === this.settings.importBucket &&
      contentType !== null &&
      IMPORTABLE.has(contentType);
    const id = Number(
      statement(
        this.db,
        'INSERT INTO finalized_uploads (project_id, bucket, name, content_type, size, time_created, status, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      ).run(
        projectId,
        notice.bucket,
        notice.name,
        notice.contentType ?? null,
        notice.size === undefined ? null : Number(notice.size),
        notice.timeCreated ?? null,
        importable ? 'queued' : 'recorded',
        iso(this.clock.now()),
      ).lastInsertRowid,
    );
    if (importable) {
      const job = this.#import(id, projectId, notice.name, contentType!).finally(() => this.#running.delete(job));
      this.#running.add(job);
    }
    return this.get(id)!;
  }

  /** Waits for queued imports (shutdown, tests). */
  async drain(): Promise<void> {
    while (this.#running.size) await Promise.all([...this.#running]);
  }

  async #import(id: number, projectId: number, name: string, contentType: string): Promise<void> {
    await new Promise((resolve) => setImmediate(resolve)); // answer the webhook first
    let status: UploadStatus = 'failed';
    let report: ImportReport | { error: string };
    try {
      const dir = this.settings.importDir;
      if (!dir) throw new ImportFileError('incomingWebhooks.importDir is not configured.');
      const bytes = await readImportFile(dir, name, this.settings.importMaxBytes);
      const text = bytes.toString('utf8').replace(/^\uFEFF/, '');
      const rows = contentType === 'text/csv' ? parseCsv(text) : parseJson(text);
      if (!Array.isArray(rows))
        throw new ImportFileError(`The object "${name}" is not a JSON array of attendee records.`);
      report = this.importer.run(projectId, rows, 'partial');
      status = 'imported';
      this.log.info({ upload: id, name, imported: report.imported, failed: report.failed }, 'upload imported');
    } catch (err) {
      const reason = reasonOf(err, name);
      report = { error: reason ?? `The import of "${name}" failed; the appliance log has the details.` };
      if (reason) this.log.warn({ upload: id, name, error: reason }, 'upload import failed');
      else this.log.error({ upload: id, name, err }, 'upload import failed');
    }
    statement(this.db, 'UPDATE finalized_uploads SET status = ?, report = ?, finished_at = ? WHERE id = ?').run(
      status,
      JSON.stringify(report),
      iso(this.clock.now()),
      id,
    );
  }
}
