import type { Registry } from 'prom-client';
import { gaugesIn } from '../src/metrics.js';
import type { SyncServices } from './index.js';

/** /metrics: the edge's link and what crossed it (docs/sync.md: status). Read at scrape time. */
export function registerSyncMetrics(registry: Registry, sync: SyncServices): void {
  const gauge = gaugesIn(registry);
  const { uploads } = sync;
  gauge(
    'gatehouse_sync_received_items_total',
    'Cloud: uploaded items stored since start',
    () => uploads.stats.accepted,
  );
  gauge(
    'gatehouse_sync_received_duplicates_total',
    'Cloud: uploaded items already stored (batches sent again) since start',
    () => uploads.stats.duplicates,
  );
  gauge('gatehouse_sync_received_batches_total', 'Cloud: upload batches since start', () => uploads.stats.batches);
  const edge = sync.edge;
  if (!edge) return;
  // One status per scrape, not one per gauge (the backlog is a count over the unsent rows).
  let cached: { at: number; value: ReturnType<typeof edge.status> } | null = null;
  const status = () => {
    if (!cached || performance.now() - cached.at > 500) cached = { at: performance.now(), value: edge.status() };
    return cached.value;
  };
  gauge('gatehouse_sync_online', '1 while the link to the cloud is up', () => (status().online ? 1 : 0));
  gauge('gatehouse_sync_backlog', 'Items waiting to be uploaded to the cloud', () => status().backlog);
  gauge(
    'gatehouse_sync_oldest_unsynced_seconds',
    'Age of the oldest access event the cloud has not acknowledged (0: none)',
    () => {
      const oldest = status().oldest_unsynced_at;
      return oldest ? Math.max(0, (Date.now() - Date.parse(oldest)) / 1000) : 0;
    },
  );
  gauge(
    'gatehouse_sync_clock_offset_ms',
    "Cloud time minus this box's clock now (docs/sync.md: clocks)",
    () => status().clock_offset_ms ?? 0,
  );
  gauge('gatehouse_sync_last_upload_timestamp_seconds', 'When the last upload was acknowledged', () =>
    seconds(status().last_upload_at),
  );
  gauge(
    'gatehouse_sync_last_download_timestamp_seconds',
    'When the last download round reached the newest change',
    () => seconds(status().last_download_at),
  );
  gauge(
    'gatehouse_sync_uploaded_items_total',
    'Items the cloud acknowledged since start',
    () => edge.stats.uploadedItems,
  );
  gauge(
    'gatehouse_sync_downloaded_rows_total',
    'Reference rows and deletions applied since start',
    () => edge.stats.downloadedRows + edge.stats.downloadedDeletions,
  );
  gauge(
    'gatehouse_sync_stale_changes_total',
    'Downloaded changes not newer than the row this edge held (a page fetched before a revocation, say): left alone',
    () => edge.stats.staleChanges,
  );
  gauge('gatehouse_sync_failures_total', 'Failed requests to the cloud since start', () => edge.stats.failures);
  gauge(
    'gatehouse_sync_cloud_rollback_timestamp_seconds',
    'When this edge last found its cloud behind it (restored from a backup): 0 never',
    () => seconds(status().cloud_rollback?.detected_at ?? null),
  );
}

const seconds = (at: string | null) => (at ? Date.parse(at) / 1000 : 0);
