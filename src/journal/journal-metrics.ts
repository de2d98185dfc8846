import type { Registry } from 'prom-client';
import { gaugesIn } from '../metrics.js';
import type { Journal } from './event-journal.js';

/** /metrics: the access-event journal and its ingest into SQLite (docs/storage.md). */
export function registerJournalMetrics(registry: Registry, journal: Journal): void {
  const gauge = gaugesIn(registry);
  gauge(
    'gatehouse_access_event_journal_writes_total',
    'Group-commit writes to the access-event journal',
    () => journal.stats.writes,
  );
  gauge(
    'gatehouse_access_event_journal_bytes_total',
    'Bytes written to the access-event journal',
    () => journal.stats.bytes,
  );
  gauge(
    'gatehouse_access_events_ingested_total',
    'Access events ingested from the journal into SQLite',
    () => journal.stats.ingested,
  );
  gauge(
    'gatehouse_access_event_journal_slow_writes_total',
    'Journal writes that held the event loop over 1 ms (the file system made them wait)',
    () => journal.stats.slowWrites,
  );
  gauge('gatehouse_access_event_ingest_transactions_total', 'Ingest transactions', () => journal.stats.transactions);
  gauge(
    'gatehouse_access_event_ingest_failures_total',
    'Ingest transactions that failed and are retried',
    () => journal.stats.ingestFailures,
  );
  gauge('gatehouse_access_event_journal_lagging', '1 while some journaled access events are not yet in SQLite', () =>
    journal.lagging ? 1 : 0,
  );
}
