import { randomUUID } from 'node:crypto';
import type { SyncDepsIn } from './deps.js';
import { ChangeStream } from './change-stream.js';
import type { CloudState } from './protocol.js';
import { SyncConflicts } from './conflicts.js';
import { EdgeSync, type SyncStatus } from './edge-sync.js';
import { SyncEdges } from './edges.js';
import { Replica } from './replica.js';
import { UploadApply } from './upload-apply.js';
import { UploadGate } from './upload-gate.js';
import { cloudOwnedResource } from '../src/http/cloud-owned.js';
import { inClear } from './link.js';

// Cloud sync's services (docs/sync.md), by role: a cloud serves edges (edges, the
// change stream, the upload's apply); an edge runs EdgeSync; both keep conflicts. A
// standalone box builds the parts and starts none.

export class SyncServices {
  readonly edges: SyncEdges;
  readonly conflicts: SyncConflicts;
  readonly changes: ChangeStream;
  readonly uploads: UploadApply;
  /** Which upload batches the cloud takes now: one per edge, sync.uploadsAtOnce in all. */
  readonly uploadGate: UploadGate;
  readonly edge: EdgeSync | null;

  constructor(private readonly d: SyncDepsIn) {
    this.edges = new SyncEdges(d.db, d.clock, d.bus);
    this.conflicts = new SyncConflicts(d.db, d.clock);
    this.changes = new ChangeStream(d.db, d.bus);
    this.uploads = new UploadApply(
      d.db,
      d.clock,
      d.bus,
      d.occupancy,
      d.index,
      this.conflicts,
      () => d.externalChanges.catchUp(),
      this.edges,
      { busyWaitMs: d.config.store.busyTimeoutMs },
    );
    this.uploadGate = new UploadGate(d.config.sync.uploadsAtOnce);
    this.edge =
      d.config.role === 'edge'
        ? new EdgeSync({
            ...d,
            replica: new Replica(d.db, d.clock, d.externalChanges),
            log: d.log.child({ module: 'sync' }),
          })
        : null;
  }

  /** Which run of this cloud answers: made anew at each start (docs/sync.md: a cloud restored from a backup). */
  readonly incarnation = randomUUID();

  /** In every answer of the protocol: this run and the newest change version. */
  cloudState(): CloudState {
    return { incarnation: this.incarnation, high_water: this.changes.highWater() };
  }

  /** The lifecycle module's start: what the role runs. */
  start(): void {
    const { role } = this.d.config;
    if (role === 'standalone')
      this.d.log.info(
        'role: standalone: nothing syncs (set GATEHOUSE_ROLE=edge with GATEHOUSE_CLOUD_URL and GATEHOUSE_SYNC_TOKEN to sync with a cloud)',
      );
    if (role === 'cloud') {
      this.uploads.prepare();
      this.changes.start();
      this.d.log.info('role: cloud: serving edges under /api/v1/projects/{team}/{project}/sync/');
    }
    if (role === 'edge') {
      const urls = this.d.config.cloud.url!;
      this.d.log.info({ cloud: urls.length === 1 ? urls[0] : urls }, 'role: edge: syncing with the cloud');
      for (const url of urls.filter(inClear)) {
        this.d.log.warn(
          { cloud: url },
          'the cloud URL is plain http outside this box: the sync token and everything synced travel in clear, readable and changeable on the way; use an https URL (docs/security.md)',
        );
      }
      this.edge!.start();
    }
  }

  async stop(): Promise<void> {
    this.changes.stop();
    await this.edge?.stop();
  }

  /** On an edge, the resource name when `path` writes reference data the cloud owns, for the synced project. */
  readOnlyOnEdge(projectId: number, path: string): string | null {
    if (!this.edge || this.edge.projectId !== projectId) return null;
    return cloudOwnedResource(path);
  }

  /** GET .../sync/status for a project. */
  status(projectId: number): (
    | SyncStatus
    | (Omit<SyncStatus, 'role' | 'state'> & { role: 'cloud' | 'standalone'; state: string })
  ) & {
    edges?: ReturnType<SyncEdges['resource']>[];
  } {
    // An edge not linked yet (or never: another protocol, a refused token) answers for every project.
    if (this.edge && (this.edge.projectId === projectId || this.edge.projectId === null)) return this.edge.status();
    const role = this.d.config.role === 'cloud' ? 'cloud' : 'standalone';
    const base = {
      role,
      state: role === 'cloud' ? 'serving' : this.edge ? 'not synced here' : 'standalone',
      edge_id: null,
      online: role === 'cloud',
      last_error: null,
      last_upload_at: null,
      last_download_at: null,
      backlog: 0,
      oldest_unsynced_at: null,
      cursor: null,
      clock_offset_ms: 0,
      clock_synchronised: true,
      latency_ms: null,
      cloud_url: null,
      cloud_rollback: null,
      protocol: null,
    } as const;
    return role === 'cloud' ? { ...base, edges: this.edges.list(projectId).map((e) => this.edges.resource(e)) } : base;
  }
}
