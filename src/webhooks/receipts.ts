import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { FUTURE_TOLERANCE_MS, PAST_LIMIT_MS } from '../access/scan-time.js';
import type { Clock } from '../clock.js';
import { gaugesIn } from '../metrics.js';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import { everyUnlessBusy, isStoreBusy } from '../store/transactions.js';
import type { WebhookKind } from './gate.js';
import type { KeptResponse } from './replay-window.js';
import type { Module } from '../lifecycle.js';

// Accepted webhook deliveries, remembered durably (docs/webhooks-incoming.md:
// Replays; docs/security.md). The spec signs the body only, so X-Svc-Timestamp is not
// covered and a captured body sent again with a fresh timestamp verifies; the in-memory retry
// window (replay-window.ts) forgets it after 300 s and at a restart. So every accepted delivery
// is kept here, keyed by (source, SHA-256 of the body — or of the Standard Webhooks webhook-id),
// for the window in which sending it again could still change something, with its first answer:
// a delivery found here is answered that answer again (X-Svc-Replayed: true) and applied no more,
// also after a restart, which makes senders' late retries idempotent too.
//
// The receipt is written after the handler applied the request and before the answer goes out
// (the gate's settle()), not in the handler's transaction: an access event is made durable by the
// event journal's group commit, not by a SQLite transaction, and the other endpoints each commit
// their own. One indexed insert per accepted request; the row-count bound deletes the oldest
// receipt as each new one comes in past it, the windows are pruned every few minutes.

/** How long sending an accepted delivery again could still change something, per endpoint. */
export function receiptWindowMs(kind: WebhookKind, receiptDays: number): number {
  switch (kind) {
    // Past the scan-age limit the engine refuses a scan's timestamp itself (400); a timestamp up
    // to 5 minutes ahead is taken as now, so it lasts that much longer (access/scan-time.ts).
    case 'access-event':
      return PAST_LIMIT_MS + FUTURE_TOLERANCE_MS;
    // event_id is kept for ever (partner_events): a replay is answered `replayed` at any time;
    // the receipt gives the first answer itself for as long as access events are covered.
    case 'registration-partner':
      return PAST_LIMIT_MS;
    // A report sets the gateway's state only until its next report (seconds to a minute); two
    // days cover restarts and senders' retry schedules (Svix retries for about 28 hours).
    case 'gateway-status':
      return 2 * 86_400_000;
    // Nothing in these bodies dates them: a replay would apply an old sync or import an upload
    // again. Few and small, so remembered long (incomingWebhooks.receiptDays).
    case 'attendee-sync':
    case 'upload-finalized':
      return receiptDays * 86_400_000;
  }
}

export interface ReceiptLimits {
  receiptDays: number;
  maxRows: number;
  /** An answer larger than this is not stored; a replay is answered ALREADY_APPLIED instead. */
  maxAnswerBytes: number;
}

/** The answer to a replay whose first answer was too large to store. */
export const ALREADY_APPLIED = JSON.stringify({
  success: true,
  message: 'This request was received and applied before; it is not applied again.',
});

const PRUNE_EVERY_MS = 10 * 60_000;
/** What Koa sends for an object body: stored as NULL. */
const JSON_TYPE = 'application/json; charset=utf-8';

export class WebhookReceipts implements Module {
  readonly name = 'webhook receipts';
  #pruner: NodeJS.Timeout | null = null;
  /** Receipts with ids up to this are gone for the row-count bound already. */
  #boundedThrough = 0;
  readonly stats = { replays: 0, evicted: 0, writeFailures: 0 };

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly limits: ReceiptLimits,
    private readonly log: Logger,
  ) {}

  /** The first answer to this delivery when it was accepted within its window; null otherwise. */
  find(sourceId: number, digest: Buffer): KeptResponse | null {
    const row = statement(
      this.db,
      'SELECT status, answer, content_type FROM webhook_receipts WHERE source_id = ? AND digest = ? AND keep_until > ?',
    ).get(sourceId, digest, this.clock.now()) as
      | { status: number; answer: string | null; content_type: string | null }
      | undefined;
    if (!row) return null;
    this.stats.replays++;
    if (row.answer === null) return { status: 200, body: ALREADY_APPLIED, contentType: JSON_TYPE };
    return { status: row.status, body: row.answer, contentType: row.content_type ?? JSON_TYPE };
  }

  /** Remembers an accepted delivery; the oldest receipt past the row bound goes. */
  record(kind: WebhookKind, sourceId: number, digest: Buffer, answer: KeptResponse): void {
    const now = this.clock.now();
    const stored = Buffer.byteLength(answer.body) <= this.limits.maxAnswerBytes;
    try {
      const id = Number(
        statement(
          this.db,
          'INSERT OR REPLACE INTO webhook_receipts (source_id, digest, accepted_at, keep_until, status, answer, content_type) VALUES (?, ?, ?, ?, ?, ?, ?)',
        ).run(
          sourceId,
          digest,
          now,
          now + receiptWindowMs(kind, this.limits.receiptDays),
          answer.status,
          stored ? answer.body : null,
          stored && answer.contentType !== JSON_TYPE ? answer.contentType : null, // null: JSON, as nearly all are (30 bytes a row)
        ).lastInsertRowid,
      );
      this.#bound(id - this.limits.maxRows, now);
    } catch (err) {
      // Applied and answered all the same (the in-memory window still has it): a replay after
      // it would be applied again, so this is counted and logged for the operator.
      if (!isStoreBusy(err)) throw err;
      this.stats.writeFailures++;
      this.log.warn({ code: err.code, kind, sourceId }, 'webhook receipt not written: the store was busy');
    }
  }

  /** Deletes receipts past their window, then the oldest past the row bound. */
  prune(): number {
    const now = this.clock.now();
    const expired = statement(this.db, 'DELETE FROM webhook_receipts WHERE keep_until <= ?').run(now).changes;
    const newest = statement(this.db, 'SELECT max(id) AS id FROM webhook_receipts').get() as { id: number | null };
    if (newest.id !== null) this.#bound(newest.id - this.limits.maxRows, now);
    return expired;
  }

  #bound(through: number, now: number): void {
    if (through <= this.#boundedThrough) return;
    const gone = statement(this.db, 'DELETE FROM webhook_receipts WHERE id <= ? RETURNING keep_until').all(through) as {
      keep_until: number;
    }[];
    this.#boundedThrough = through;
    // Given up inside their window: raise receiptMaxRows if this grows (docs/webhooks-incoming.md).
    this.stats.evicted += gone.filter((r) => r.keep_until > now).length;
  }

  get count(): number {
    return (statement(this.db, 'SELECT count(*) AS n FROM webhook_receipts').get() as { n: number }).n;
  }

  start(): void {
    this.prune();
    this.#pruner = everyUnlessBusy(() => this.prune(), PRUNE_EVERY_MS);
  }

  stop(): void {
    if (this.#pruner) clearInterval(this.#pruner);
  }
}

/** /metrics: how often a replay was caught by the durable store, and how full it is. */
export function registerReceiptMetrics(registry: Registry, receipts: WebhookReceipts): void {
  const gauge = gaugesIn(registry);
  gauge(
    'gatehouse_webhook_receipt_replays_total',
    'Webhook deliveries sent again after the in-memory window (or a restart), answered from the durable receipts and not applied',
    () => receipts.stats.replays,
  );
  gauge(
    'gatehouse_webhook_receipt_evictions_total',
    'Receipts given up inside their window for incomingWebhooks.receiptMaxRows (raise it if this grows)',
    () => receipts.stats.evicted,
  );
  gauge(
    'gatehouse_webhook_receipt_write_failures_total',
    'Accepted deliveries whose receipt could not be written (store busy): a later replay of them would be applied',
    () => receipts.stats.writeFailures,
  );
  gauge('gatehouse_webhook_receipts', 'Accepted webhook deliveries remembered durably', () => receipts.count);
}
