import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Prometheus metrics for one appliance (its own registry, so tests may run several). */
export class HttpMetrics {
  readonly registry = new Registry();
  readonly requests: Counter<'method' | 'route' | 'status'>;
  readonly duration: Histogram<'method' | 'route'>;
  readonly storeBusy: Counter<'route'>;

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'gatehouse_' });
    this.requests = new Counter({
      name: 'gatehouse_http_requests_total',
      help: 'HTTP requests by route template and status',
      labelNames: ['method', 'route', 'status'],
      registers: [this.registry],
    });
    this.duration = new Histogram({
      name: 'gatehouse_http_request_duration_seconds',
      help: 'HTTP request latency by route template',
      labelNames: ['method', 'route'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [this.registry],
    });
    this.storeBusy = new Counter({
      name: 'gatehouse_store_busy_total',
      help: "Requests answered 503 store_busy: SQLite's write lock not had within store.busyTimeoutMs, by route template",
      labelNames: ['route'],
      registers: [this.registry],
    });
  }

  observe(method: string, route: string, status: number, seconds: number): void {
    this.requests.inc({ method, route, status: String(status) });
    this.duration.observe({ method, route }, seconds);
  }
}

/**
 * Gauges read from a module's own figures at scrape time, in one registry. Also how the modules
 * publish their running totals (prom-client counters cannot be set, so those are gauges named
 * *_total).
 */
export const gaugesIn =
  (registry: Registry) =>
  (name: string, help: string, read: () => number): Gauge =>
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(read());
      },
    });
