import { z } from 'zod';
import type { Clock } from '../clock.js';
import { iso } from '../clock.js';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import { everyUnlessBusy, writeTransaction } from '../store/transactions.js';
import type { Module } from '../lifecycle.js';

// The log of every incoming webhook request (spec: incoming webhook log entry
// {id, endpoint, method, status, source_ip, received_at, response_time_ms}, with the contract's types:
// id a string, response_time_ms an integer), plus the source and
// project it was matched to and, for failures, the reason (the error code answered) and the first
// KB of the body; a retry answered with its first answer has the reason `replayed` (docs/webhooks-incoming.md).
// Retention is bounded by age and by row count
// (incomingWebhooks.logRetentionDays, .logMaxRows), pruned at start and hourly.
//
// Two row budgets (docs/security.md, attack 10): requests that applied something (reason NULL) keep
// logMaxRows, those that did not (refused, or answered again: reason set) logMaxNotAppliedRows,
// each pruned newest-kept, so a flood of junk cannot push the accepted requests out of the log.
// Each budget is also pruned as rows come in (every tenth of it), so it holds between the hourly
// prunes too.

export interface LogEntry {
  endpoint: string;
  method: string;
  status: number;
  sourceIp: string;
  receivedAt: number;
  responseTimeMs: number;
  sourceId: number | null;
  projectId: number | null;
  reason: string | null;
  bodyHead: string | null;
}

interface Row {
  id: number;
  endpoint: string;
  method: string;
  status: number;
  source_ip: string;
  received_at: string;
  response_time_ms: number;
  source_id: number | null;
  project_id: number | null;
  reason: string | null;
  body_head: string | null;
}

export const logQuery = z.object({
  endpoint: z.string().max(200).optional().describe('e.g. /webhook/v1/access-event'),
  source_id: z.coerce.number().int().positive().optional().describe('the webhook source that verified the request'),
  status: z.coerce.number().int().min(100).max(599).optional(),
  result: z.enum(['success', 'failure']).optional().describe('2xx, or anything else'),
  from: z.iso.datetime({ offset: true }).optional().describe('received at or after'),
  to: z.iso.datetime({ offset: true }).optional().describe('received before'),
});

export const logEntrySchema = z.object({
  id: z.string().describe('the entry id (digits; a string, as the spec types it)'),
  endpoint: z.string(),
  method: z.string(),
  status: z.number().int(),
  source_ip: z.string(),
  received_at: z.string(),
  response_time_ms: z.number().int().describe('whole milliseconds, rounded'),
  source_id: z.number().int().nullable(),
  project_id: z.number().int().nullable(),
  reason: z
    .string()
    .nullable()
    .describe('the error code answered, for failures; `replayed` for a retry answered with its first answer'),
  body_head: z.string().nullable().describe('the first 1024 bytes of the body, for failures'),
});

export class IncomingWebhookLog implements Module {
  readonly name = 'incoming webhook log';
  #pruner: NodeJS.Timeout | null = null;
  /** Rows written per budget since it was last pruned. */
  readonly #sincePrune = { applied: 0, notApplied: 0 };

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly retention: { days: number; maxRows: number; maxNotAppliedRows: number },
  ) {}

  record(e: LogEntry): void {
    statement(
      this.db,
      `INSERT INTO incoming_webhook_log (endpoint, method, status, source_ip, received_at, response_time_ms, source_id, project_id, reason, body_head)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      e.endpoint,
      e.method,
      e.status,
      e.sourceIp,
      iso(e.receivedAt),
      Math.round(e.responseTimeMs * 10) / 10,
      e.sourceId,
      e.projectId,
      e.reason,
      e.bodyHead,
    );
    const budget = e.reason === null ? 'applied' : 'notApplied';
    if (++this.#sincePrune[budget] >= Math.ceil(this.#budget(budget) / 10)) this.#pruneBudget(budget);
  }

  /** Newest first; `projectId` null lists every entry (administrators), including unmatched ones. */
  list(
    projectId: number | null,
    q: z.output<typeof logQuery>,
    offset: number,
    limit: number,
  ): { items: z.infer<typeof logEntrySchema>[]; total: number } {
    const where: string[] = [];
    const params: Record<string, string | number> = { offset, limit };
    if (projectId !== null) where.push('project_id = @projectId'), (params.projectId = projectId);
    if (q.endpoint) where.push('endpoint = @endpoint'), (params.endpoint = q.endpoint);
    if (q.source_id) where.push('source_id = @sourceId'), (params.sourceId = q.source_id);
    if (q.status) where.push('status = @status'), (params.status = q.status);
    if (q.result) where.push(q.result === 'success' ? 'status BETWEEN 200 AND 299' : 'status NOT BETWEEN 200 AND 299');
    if (q.from) where.push('received_at >= @from'), (params.from = iso(Date.parse(q.from)));
    if (q.to) where.push('received_at < @to'), (params.to = iso(Date.parse(q.to)));
    const clause = where.length ? `WHERE ${where.join(' AND ')}` : '';
    const items = statement(
      this.db,
      `SELECT * FROM incoming_webhook_log ${clause} ORDER BY id DESC LIMIT @limit OFFSET @offset`,
    ).all(params) as Row[];
    const { n } = statement(this.db, `SELECT count(*) AS n FROM incoming_webhook_log ${clause}`).get(params) as {
      n: number;
    };
    // Stored as the row id and tenths of a millisecond; answered in the contract's types.
    return {
      items: items.map((r) => ({ ...r, id: String(r.id), response_time_ms: Math.round(r.response_time_ms) })),
      total: n,
    };
  }

  /** Deletes entries past the retention age, then the oldest past each row budget. */
  prune(): number {
    const cutoff = iso(this.clock.now() - this.retention.days * 86_400_000);
    return writeTransaction(this.db, () => {
      const removed = statement(this.db, 'DELETE FROM incoming_webhook_log WHERE received_at < ?').run(cutoff).changes;
      return removed + this.#pruneBudget('applied') + this.#pruneBudget('notApplied');
    });
  }

  #budget(budget: 'applied' | 'notApplied'): number {
    return budget === 'applied' ? this.retention.maxRows : this.retention.maxNotAppliedRows;
  }

  /** Keeps the newest rows of one budget; the WHERE terms match the partial indexes (migration 14). */
  #pruneBudget(budget: 'applied' | 'notApplied'): number {
    this.#sincePrune[budget] = 0;
    const rows = budget === 'applied' ? 'reason IS NULL' : 'reason IS NOT NULL';
    return statement(
      this.db,
      `DELETE FROM incoming_webhook_log WHERE ${rows} AND id <= (SELECT id FROM incoming_webhook_log WHERE ${rows} ORDER BY id DESC LIMIT 1 OFFSET ?)`,
    ).run(this.#budget(budget)).changes;
  }

  start(): void {
    this.prune();
    this.#pruner = everyUnlessBusy(() => this.prune(), 3600_000);
  }

  stop(): void {
    if (this.#pruner) clearInterval(this.#pruner);
  }
}
