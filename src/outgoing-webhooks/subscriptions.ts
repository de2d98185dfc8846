import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { type Clock, iso } from '../clock.js';
import { found, validationError } from '../errors.js';
import type { EventBus } from '../events/bus.js';
import { commit } from '../events/unit-of-work.js';
import { CATALOGUE } from '../feed/catalogue.js';
import type { Feed } from '../feed/feed.js';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import { consumerOf, releaseHeldDeliveries } from './deliveries.js';
import type { ReceiverPolicy } from './receiver-policy.js';
import type { SignatureScheme, SigningSecrets } from './signing.js';

// Outgoing webhook subscriptions (spec: Endpoints, Outgoing webhook subscriptions;
// docs/webhooks-outgoing.md). Each subscription is a consumer of the durable feed with its own cursor
// (feed_cursors 'webhook:<id>'), placed at the feed's end when it is made: it receives what
// happens from then on. Its secret is shown once, when made or rotated. It stands on its
// owner's access to the project (accounts/issuer-access.ts): disabled (owner_lost_access) when
// they lose it, and whoever re-enables it becomes its owner.

export type DisabledReason = 'manual' | 'gone' | 'failing' | 'owner_lost_access';

export const eventsField = z
  .array(
    z.enum([...CATALOGUE, '*'] as [string, ...string[]], { message: `must be "*" or one of: ${CATALOGUE.join(', ')}` }),
  )
  .min(1)
  .max(CATALOGUE.length + 1);

export const subscriptionSchema = z.object({
  id: z.number().int(),
  url: z.string(),
  events: z.array(z.string()).describe('catalogue event names, or ["*"]'),
  project_id: z.number().int(),
  active: z
    .boolean()
    .describe(
      'false once disabled (by an administrator, a 410 Gone, failing for webhook.disableAfterHours, or its owner losing access to the project)',
    ),
  disabled_reason: z.enum(['manual', 'gone', 'failing', 'owner_lost_access']).nullable(),
  owner_id: z
    .number()
    .int()
    .nullable()
    .describe(
      'the user whose access it stands on: who made it, or last re-enabled it; null once that user is deleted (docs/webhooks-outgoing.md: disabling)',
    ),
  signature_scheme: z.enum(['sha256', 'standard']),
  failing_since: z.string().nullable().describe('the first failed attempt of the current run of failures'),
  secret_rotated_until: z.string().nullable().describe('until then the previous secret signs too'),
  created_at: z.string(),
  updated_at: z.string(),
});
export type SubscriptionResource = z.infer<typeof subscriptionSchema>;

export interface SubscriptionRow {
  id: number;
  project_id: number;
  user_id: number | null;
  url: string;
  events: string;
  signature_scheme: SignatureScheme;
  secret: string;
  previous_secret: string | null;
  previous_secret_until: string | null;
  active: number;
  disabled_reason: DisabledReason | null;
  failing_since: string | null;
  created_at: string;
  updated_at: string;
}

export function newSecret(scheme: SignatureScheme): string {
  return scheme === 'standard' ? `whsec_${randomBytes(24).toString('base64')}` : randomBytes(32).toString('hex');
}

export class Subscriptions {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly bus: EventBus,
    private readonly feed: Feed,
    private readonly policy: ReceiverPolicy,
    private readonly secretGraceMs: number,
  ) {}

  resource(r: SubscriptionRow): SubscriptionResource {
    const rotating = r.previous_secret_until !== null && Date.parse(r.previous_secret_until) > this.clock.now();
    return {
      id: r.id,
      url: r.url,
      events: JSON.parse(r.events) as string[],
      project_id: r.project_id,
      active: r.active === 1,
      disabled_reason: r.disabled_reason,
      owner_id: r.user_id,
      signature_scheme: r.signature_scheme,
      failing_since: r.failing_since,
      secret_rotated_until: rotating ? r.previous_secret_until : null,
      created_at: r.created_at,
      updated_at: r.updated_at,
    };
  }

  get(id: number): SubscriptionRow | null {
    return (
      (statement(this.db, 'SELECT * FROM webhook_subscriptions WHERE id = ?').get(id) as SubscriptionRow | undefined) ??
      null
    );
  }

  all(): SubscriptionRow[] {
    return statement(this.db, 'SELECT * FROM webhook_subscriptions ORDER BY id').all() as SubscriptionRow[];
  }

  /** Every subscription that may deliver (the dispatcher's list). */
  active(): SubscriptionRow[] {
    return statement(
      this.db,
      'SELECT * FROM webhook_subscriptions WHERE active = 1 ORDER BY id',
    ).all() as SubscriptionRow[];
  }

  /** The active subscriptions owned by this user, or by nobody (their owner was deleted). */
  activeOwnedBy(userId: number | null): SubscriptionRow[] {
    return statement(
      this.db,
      'SELECT * FROM webhook_subscriptions WHERE (user_id = ? OR user_id IS NULL) AND active = 1 ORDER BY id',
    ).all(userId) as SubscriptionRow[];
  }

  /** The subscriptions of these projects, oldest first. */
  list(projectIds: readonly number[], offset: number, limit: number): { items: SubscriptionRow[]; total: number } {
    if (projectIds.length === 0) return { items: [], total: 0 };
    const marks = projectIds.map(() => '?').join(', ');
    const total = statement(this.db, `SELECT COUNT(*) FROM webhook_subscriptions WHERE project_id IN (${marks})`)
      .pluck()
      .get(...projectIds) as number;
    const items = statement(
      this.db,
      `SELECT * FROM webhook_subscriptions WHERE project_id IN (${marks}) ORDER BY id LIMIT ? OFFSET ?`,
    ).all(...projectIds, limit, offset) as SubscriptionRow[];
    return { items, total };
  }

  create(input: { projectId: number; userId: number | null; url: string; events: string[]; scheme: SignatureScheme }): {
    row: SubscriptionRow;
    secret: string;
  } {
    this.#checkUrl(input.url);
    const secret = newSecret(input.scheme);
    const now = iso(this.clock.now());
    const row = commit(this.db, this.bus, (work) => {
      const id = Number(
        statement(
          this.db,
          'INSERT INTO webhook_subscriptions (project_id, user_id, url, events, signature_scheme, secret, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
        ).run(
          input.projectId,
          input.userId,
          input.url,
          JSON.stringify(normalised(input.events)),
          input.scheme,
          secret,
          now,
          now,
        ).lastInsertRowid,
      );
      // From the feed's end: what happens from now on.
      this.feed.saveCursor(consumerOf(id), this.feed.head());
      work.emit('webhook_subscription.changed', { projectId: input.projectId, id, deleted: false });
      return this.get(id)!;
    });
    return { row, secret };
  }

  /**
   * Changes url, events, active; re-enabling clears the failure run, resumes from where it stopped
   * and makes `by` (a user with access to the project) its owner.
   */
  update(
    id: number,
    changes: { url?: string | undefined; events?: string[] | undefined; active?: boolean | undefined },
    by: number | null = null,
  ): SubscriptionRow {
    if (changes.url !== undefined) this.#checkUrl(changes.url);
    return commit(this.db, this.bus, (work) => {
      const row = found(this.get(id), 'Webhook subscription');
      const active = changes.active ?? row.active === 1;
      const reenabled = active && row.active === 0;
      statement(
        this.db,
        'UPDATE webhook_subscriptions SET url = ?, events = ?, active = ?, disabled_reason = ?, failing_since = ?, user_id = ?, updated_at = ? WHERE id = ?',
      ).run(
        changes.url ?? row.url,
        changes.events ? JSON.stringify(normalised(changes.events)) : row.events,
        active ? 1 : 0,
        active ? null : (row.disabled_reason ?? 'manual'),
        reenabled ? null : row.failing_since,
        reenabled && by !== null ? by : row.user_id,
        iso(this.clock.now()),
        id,
      );
      // Re-enabled: its held head is tried now, not at the retry time it had.
      if (reenabled) releaseHeldDeliveries(this.db, id);
      work.emit('webhook_subscription.changed', { projectId: row.project_id, id, deleted: false });
      return this.get(id)!;
    });
  }

  /** Disables an active subscription and announces why (webhook.endpoint_disabled,
   * in the outbox with the change); false when it was not active. */
  /** When its receiver started failing without a break (null: it answered again), noted by the
   * dispatcher in its delivery transaction. */
  setFailingSince(id: number, at: string | null): void {
    statement(this.db, 'UPDATE webhook_subscriptions SET failing_since = ? WHERE id = ?').run(at, id);
  }

  disable(row: Pick<SubscriptionRow, 'id' | 'project_id' | 'url'>, reason: Exclude<DisabledReason, 'manual'>): boolean {
    return commit(this.db, this.bus, (work) => {
      const changed =
        statement(
          this.db,
          'UPDATE webhook_subscriptions SET active = 0, disabled_reason = ?, updated_at = ? WHERE id = ? AND active = 1',
        ).run(reason, iso(this.clock.now()), row.id).changes > 0;
      if (!changed) return false;
      work.emit('webhook.endpoint_disabled', {
        projectId: row.project_id,
        subscriptionId: row.id,
        url: row.url,
        reason,
      });
      work.emit('webhook_subscription.changed', { projectId: row.project_id, id: row.id, deleted: false });
      return true;
    });
  }

  delete(id: number): void {
    commit(this.db, this.bus, (work) => {
      const row = found(this.get(id), 'Webhook subscription');
      statement(this.db, 'DELETE FROM webhook_subscriptions WHERE id = ?').run(id);
      this.feed.dropCursor(consumerOf(id));
      work.emit('webhook_subscription.changed', { projectId: row.project_id, id, deleted: true });
    });
  }

  /** A new secret; the old one keeps signing (a second signature) for the grace period. */
  rotateSecret(id: number): { row: SubscriptionRow; secret: string } {
    return commit(this.db, this.bus, (work) => {
      const row = found(this.get(id), 'Webhook subscription');
      const secret = newSecret(row.signature_scheme);
      const now = this.clock.now();
      statement(
        this.db,
        'UPDATE webhook_subscriptions SET secret = ?, previous_secret = ?, previous_secret_until = ?, updated_at = ? WHERE id = ?',
      ).run(
        secret,
        this.secretGraceMs > 0 ? row.secret : null,
        this.secretGraceMs > 0 ? iso(now + this.secretGraceMs) : null,
        iso(now),
        id,
      );
      work.emit('webhook_subscription.changed', { projectId: row.project_id, id, deleted: false });
      return { row: this.get(id)!, secret };
    });
  }

  /** The secrets that sign now. */
  secrets(row: SubscriptionRow): SigningSecrets {
    const graced =
      row.previous_secret !== null &&
      row.previous_secret_until !== null &&
      Date.parse(row.previous_secret_until) > this.clock.now();
    return { current: row.secret, previous: graced ? row.previous_secret : null };
  }

  #checkUrl(url: string): void {
    const problem = url.length > 2048 ? 'The url may not be longer than 2048 characters.' : this.policy.urlProblem(url);
    if (problem) throw validationError({ url: [problem] });
  }
}

/** `*` alone when given; otherwise each name once, in catalogue order. */
function normalised(events: readonly string[]): string[] {
  if (events.includes('*')) return ['*'];
  return CATALOGUE.filter((e) => events.includes(e));
}
