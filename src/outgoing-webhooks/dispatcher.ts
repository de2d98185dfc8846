import { type Clock, iso } from '../clock.js';
import type { EventBus } from '../events/bus.js';
import type { Feed, FeedFilter } from '../feed/feed.js';
import type { Module } from '../lifecycle.js';
import type { Logger } from '../logger.js';
import { type Attempt, consumerOf, type Deliveries, type DeliveryRow } from './deliveries.js';
import { nextAttemptAt } from './retry-schedule.js';
import { ScanPacer } from '../feed/pacer.js';
import type { Sender } from './sender.js';
import { signatureHeaders } from './signing.js';
import type { SubscriptionRow, Subscriptions } from './subscriptions.js';

// Sends what the feed holds to each subscription (docs/webhooks-outgoing.md,
// "Dispatch"). Per subscription, strictly in order: one delivery in flight, the oldest pending
// first; a failing one holds those behind it until it is delivered or has failed its last
// retry; other subscriptions are not held by it. At most `concurrency` deliveries are in flight
// over all subscriptions. Everything it does is in SQLite (the delivery rows, the cursors),
// so after a restart, a kill -9 too, it carries on where it was: a delivery that was in flight
// is sent again with the same delivery id. The bus only wakes it; a poll catches the rest
// (changes by other processes, retries coming due).

export interface DispatcherOptions {
  /** Whether this process delivers now: several instances of a cloud on one database deliver from
   * one of them at a time (store/postgres/pg-database.ts tryLease), so each delivery goes once and
   * in order; absent: always. */
  delivers?: () => boolean;
  headerPrefix: string;
  concurrency: number;
  retrySchedule: readonly number[];
  disableAfterMs: number;
  /** Feed items taken per transaction. */
  batch: number;
  pollMs: number;
  /** Above this many scans a second the box is busy deciding: deliveries are paced (below). */
  busyScansPerSecond: number;
  /** Deliveries a second while busy; they catch up when the rush is over. */
  busyDeliveriesPerSecond: number;
}

export interface DispatchStats {
  delivered: number;
  failedAttempts: number;
  failed: number;
}

export class Dispatcher implements Module {
  readonly name = 'webhook dispatcher';
  readonly stats: DispatchStats = { delivered: 0, failedAttempts: 0, failed: 0 };
  readonly #running = new Map<number, Promise<void>>();
  #subscriptions: SubscriptionRow[] = [];
  #poll: NodeJS.Timeout | null = null;
  #due: NodeJS.Timeout | null = null;
  #dueTime = Number.POSITIVE_INFINITY;
  #scheduled = false;
  #stopped = true;
  /** Bumped by every wake(): a run that ends after one may have missed new work. */
  #generation = 0;
  /** Attempts made so far (idle() watches it). */
  #attempts = 0;
  readonly #pacer: ScanPacer;

  constructor(
    private readonly clock: Clock,
    private readonly bus: EventBus,
    private readonly feed: Feed,
    private readonly subscriptions: Subscriptions,
    private readonly deliveries: Deliveries,
    private readonly sender: Sender,
    private readonly options: DispatcherOptions,
    private readonly log: Logger,
    /** Scans decided so far (the event log's count): the scan path comes first. */
    scansSoFar: () => number = () => 0,
    /** Before each attempt: whether the subscription's owner still
     * has access (accounts/issuer-access.ts disables it when not). */
    private readonly ownerHolds: (subscription: SubscriptionRow) => boolean = () => true,
  ) {
    this.#pacer = new ScanPacer(options, scansSoFar);
  }

  /** Whether deliveries are being paced because the box is busy deciding scans (feed/pacer.ts). */
  get busy(): boolean {
    return this.#pacer.busy;
  }

  start(): void {
    this.#stopped = false;
    this.#reload();
    // One signal for everything appended to the feed (events/types.ts 'feed.appended': commit(), the
    // observed-state writer, the journal's ingest, an edge's upload), so no list of events is kept
    // here by hand: credential.created and the sync events once were missing from one, and waited for the poll.
    this.bus.on(this, 'feed.appended', () => this.wake());
    this.bus.on(this, 'webhook_subscription.changed', () => {
      this.#reload();
      this.wake();
    });
    this.#pacer.start();
    this.#poll = setInterval(() => {
      this.#reload(); // subscriptions changed by another process
      this.wake();
    }, this.options.pollMs).unref();
    this.wake();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.bus.removeListeners(this);
    if (this.#poll) clearInterval(this.#poll);
    if (this.#due) clearTimeout(this.#due);
    this.#pacer.stop();
    await Promise.allSettled([...this.#running.values()]);
    await this.sender.close();
  }

  /** Looks for work soon (coalesced): new feed items, deliveries coming due. */
  wake(): void {
    this.#generation++;
    if (this.#scheduled || this.#stopped) return;
    this.#scheduled = true;
    const pump = () => {
      this.#scheduled = false;
      this.#pump();
    };
    // Busy: look at most once a sample, so 50 subscriptions do not read the feed after every scan.
    if (this.busy) setTimeout(pump, this.#pacer.sampleMs).unref();
    else setImmediate(pump);
  }

  /** Resolves once no subscription has work it can do now (tests, benches). */
  async idle(): Promise<void> {
    for (;;) {
      await Promise.allSettled([...this.#running.values()]);
      const before = this.#attempts;
      this.#pump();
      await Promise.allSettled([...this.#running.values()]);
      if (this.#attempts === before && this.#running.size === 0) return;
    }
  }

  /** One attempt of this delivery now, outside the queue's order (a resend, a test event). */
  async attemptNow(id: number): Promise<DeliveryRow> {
    const row = this.deliveries.get(id);
    if (!row) throw new Error(`delivery ${id} is gone`);
    const subscription = this.subscriptions.get(row.subscription_id);
    if (!subscription) throw new Error(`subscription ${row.subscription_id} is gone`);
    const queued = row.status === 'pending' && row.event !== 'webhook.test';
    const updated = await this.#attempt(subscription, row, queued);
    this.wake();
    return updated;
  }

  #reload(): void {
    this.#subscriptions = this.subscriptions.active();
  }

  #pump(): void {
    if (this.#stopped || (this.options.delivers && !this.options.delivers())) return;
    for (const subscription of this.#subscriptions) {
      if (this.#running.size >= this.options.concurrency) return;
      if (this.#running.has(subscription.id)) continue;
      const generation = this.#generation;
      const run = this.#run(subscription.id)
        .catch((err: unknown) =>
          this.log.error({ err, subscription: subscription.id }, 'webhook dispatch failed; retried at the next poll'),
        )
        .finally(() => {
          this.#running.delete(subscription.id);
          // Woken while it ran (new feed items it may have missed), or a slot for one left out.
          if (this.#generation !== generation || this.#subscriptions.length > this.options.concurrency) this.wake();
        });
      this.#running.set(subscription.id, run);
    }
  }

  /** Delivers the subscription's queue in order until it is empty, or its head is not due. */
  async #run(id: number): Promise<void> {
    while (!this.#stopped) {
      const subscription = this.subscriptions.get(id);
      if (subscription?.active !== 1 || !this.ownerHolds(subscription)) return;
      const head = this.deliveries.head(id) ?? this.#take(subscription);
      if (!head) return;
      if (head.next_attempt_at !== null && Date.parse(head.next_attempt_at) > this.clock.now()) {
        this.#dueAt(Date.parse(head.next_attempt_at));
        return;
      }
      await this.#pacer.take();
      if (this.#stopped) return;
      const after = await this.#attempt(subscription, head, true);
      if (after.status === 'pending') return; // held: retried when due
    }
  }

  /** The next feed items for the subscription, made into pending deliveries; the first of them. */
  #take(subscription: SubscriptionRow): DeliveryRow | null {
    const consumer = consumerOf(subscription.id);
    const from = this.feed.cursor(consumer) ?? this.feed.head();
    const events = JSON.parse(subscription.events) as string[];
    const filter: FeedFilter = {
      projectId: subscription.project_id,
      events: events.includes('*') ? '*' : new Set(events),
    };
    const { items, cursor } = this.feed.read(from, filter, this.options.batch);
    if (items.length === 0) {
      if (cursor.accessEventId !== from.accessEventId || cursor.domainEventSeq !== from.domainEventSeq)
        this.feed.saveCursor(consumer, cursor);
      return null;
    }
    this.deliveries.take(subscription.id, items, items.at(-1)!.after);
    return this.deliveries.head(subscription.id);
  }

  async #attempt(subscription: SubscriptionRow, row: DeliveryRow, queued: boolean): Promise<DeliveryRow> {
    const now = this.clock.now();
    const headers = signatureHeaders(
      subscription.signature_scheme,
      this.options.headerPrefix,
      this.subscriptions.secrets(subscription),
      {
        deliveryId: row.uuid,
        event: row.event,
        timestamp: Math.floor(now / 1000),
        body: row.payload,
      },
    );
    this.#attempts++;
    const result = await this.sender.send(subscription.url, headers, row.payload);
    const attempt: Attempt = {
      at: iso(this.clock.now()),
      status_code: result.statusCode,
      duration_ms: result.durationMs,
      error: result.error,
    };
    if (result.error === null) {
      this.stats.delivered++;
      const done = this.deliveries.record(row.id, attempt, 'delivered', null);
      if (subscription.failing_since !== null) this.#setFailingSince(subscription.id, null);
      this.bus.emit('webhook_delivery.attempted', {
        projectId: row.project_id,
        id: row.id,
        subscriptionId: subscription.id,
        status: 'delivered',
      });
      return done;
    }
    this.stats.failedAttempts++;
    this.log.info(
      { subscription: subscription.id, delivery: row.id, status: result.statusCode, error: result.error },
      'webhook delivery attempt failed',
    );
    const next = queued ? nextAttemptAt(this.options.retrySchedule, row.attempts + 1, this.clock.now()) : null;
    const status = next === null ? 'failed' : 'pending';
    if (status === 'failed') this.stats.failed++;
    const updated = this.deliveries.record(row.id, attempt, status, next === null ? null : iso(next));
    this.bus.emit('webhook_delivery.attempted', {
      projectId: row.project_id,
      id: row.id,
      subscriptionId: subscription.id,
      status,
    });
    const failingSince = subscription.failing_since ?? attempt.at;
    if (subscription.failing_since === null) this.#setFailingSince(subscription.id, failingSince);
    // Svix: 410 Gone disables at once; failing without a break for disableAfter, too.
    if (result.statusCode === 410) this.#disable(subscription, 'gone');
    else if (this.clock.now() - Date.parse(failingSince) >= this.options.disableAfterMs)
      this.#disable(subscription, 'failing');
    if (status === 'pending' && next !== null) this.#dueAt(next);
    return updated;
  }

  #setFailingSince(id: number, at: string | null): void {
    this.subscriptions.setFailingSince(id, at);
  }

  #disable(subscription: SubscriptionRow, reason: 'gone' | 'failing'): void {
    this.subscriptions.disable(subscription, reason);
    this.log.warn({ subscription: subscription.id, reason }, 'webhook subscription disabled');
  }

  /** A wake-up when the earliest held delivery comes due (the poll is the backstop). */
  #dueAt(at: number): void {
    if (this.#stopped || (this.#due && at >= this.#dueTime)) return;
    if (this.#due) clearTimeout(this.#due);
    this.#dueTime = at;
    this.#due = setTimeout(
      () => {
        this.#due = null;
        this.#dueTime = Number.POSITIVE_INFINITY;
        this.wake();
      },
      Math.max(0, Math.min(at - this.clock.now(), 2 ** 31 - 1)),
    ).unref();
  }
}
