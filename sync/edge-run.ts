import type { ScanPacer } from '../src/feed/pacer.js';
import type { SyncDepsIn } from './deps.js';
import type { CloudLink } from './link.js';
import type { LinkState } from './link-state.js';
import type { Replica } from './replica.js';

// What the edge's loops share (edge-sync.ts runs them; edge-upload.ts, edge-download.ts and
// edge-hello.ts are their rounds): the services, the link to the cloud, the link's kept state,
// the counters, and the current generation of the loops (aborted on stop, or to meet a cloud
// that started again).

/** What the edge takes of the sync services' dependencies (deps.ts), and its replica. */
export type EdgeSyncDeps = Omit<SyncDepsIn, 'occupancy' | 'index'> & { replica: Replica };

export interface EdgeStats {
  uploadedItems: number;
  uploadBatches: number;
  downloadedRows: number;
  downloadedDeletions: number;
  /** Downloaded changes not newer than what the edge held (replica.ts). */
  staleChanges: number;
  revocations: number;
  failures: number;
}

export interface EdgeRun {
  d: EdgeSyncDeps;
  link: CloudLink;
  state: LinkState;
  stats: EdgeStats;
  /** The current generation's signal: every request is made with it. */
  signal(): AbortSignal;
  /** Resolves after `ms`, or at once when the generation ends. */
  sleep(ms: number): Promise<void>;
}

/** While the doors are busy, no batch or page is larger than this: each is a few milliseconds of
 * the event loop at most, so a closed loop of scans is not held up behind one (the pacers set the rate). */
export const BUSY_BATCH = 200;

/** How much to send or fetch at once: the configured size, or while scans are busy, what the pacer allows. */
export function paced(pacer: ScanPacer, configured: number): number {
  return pacer.busy ? Math.max(1, Math.min(configured, BUSY_BATCH, Math.floor(pacer.perSample))) : configured;
}
