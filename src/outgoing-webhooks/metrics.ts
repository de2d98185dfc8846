import { Counter, Gauge, type Registry } from 'prom-client';
import type { Deliveries } from './deliveries.js';
import type { Dispatcher } from './dispatcher.js';
import type { Subscriptions } from './subscriptions.js';

// Outgoing webhooks in /metrics (docs/webhooks-outgoing.md): what was sent, each subscription's state and
// backlog, and how old the oldest waiting delivery is. Read when scraped.

export function registerOutgoingMetrics(
  registry: Registry,
  subscriptions: Subscriptions,
  deliveries: Deliveries,
  dispatcher: Dispatcher,
): void {
  new Counter({
    name: 'gatehouse_webhook_deliveries_total',
    help: 'Outgoing webhook attempts by result: delivered, failed_attempt (retried), failed (gave up)',
    labelNames: ['result'],
    registers: [registry],
    collect() {
      this.reset();
      this.inc({ result: 'delivered' }, dispatcher.stats.delivered);
      this.inc({ result: 'failed_attempt' }, dispatcher.stats.failedAttempts);
      this.inc({ result: 'failed' }, dispatcher.stats.failed);
    },
  });
  new Gauge({
    name: 'gatehouse_webhook_subscription_backlog',
    help: 'Pending deliveries per subscription (taken from the feed, not yet delivered)',
    labelNames: ['subscription'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [id, { pending }] of deliveries.pendingCounts()) this.set({ subscription: String(id) }, pending);
    },
  });
  new Gauge({
    name: 'gatehouse_webhook_subscription_active',
    help: '1 while a subscription delivers, 0 once disabled',
    labelNames: ['subscription'],
    registers: [registry],
    collect() {
      this.reset();
      for (const row of subscriptions.all()) this.set({ subscription: String(row.id) }, row.active);
    },
  });
  new Gauge({
    name: 'gatehouse_webhook_paced',
    help: '1 while deliveries are paced because scans come faster than webhook.busyScansPerSecond',
    registers: [registry],
    collect() {
      this.set(dispatcher.busy ? 1 : 0);
    },
  });
  new Gauge({
    name: 'gatehouse_webhook_queue_age_seconds',
    help: 'Age of the oldest pending delivery, over all subscriptions',
    registers: [registry],
    collect() {
      let oldest: string | null = null;
      for (const { oldest: o } of deliveries.pendingCounts().values())
        if (o !== null && (oldest === null || o < oldest)) oldest = o;
      this.set(oldest === null ? 0 : Math.max(0, (Date.now() - Date.parse(oldest)) / 1000));
    },
  });
}
