import { iso } from '../src/clock.js';
import { commit } from '../src/events/unit-of-work.js';
import { blockOfEdge, setIdBlock } from '../src/venue/row-ids.js';
import { EdgeDownload } from './edge-download.js';
import { EdgeHello } from './edge-hello.js';
import type { EdgeRun, EdgeStats, EdgeSyncDeps } from './edge-run.js';
import { CONSUMER, EdgeUpload } from './edge-upload.js';
import { CloudLink, LinkError } from './link.js';
import { LinkHealth, type LinkState as LinkHealthState } from './link-health.js';
import { LinkState } from './link-state.js';
import type { CloudState } from './protocol.js';
import { unsynced } from './unsynced.js';

export type { EdgeSyncDeps } from './edge-run.js';

// The edge's side of sync (docs/sync.md). Three loops over one link, each a round in its own
// module: the upload (edge-upload.ts), the download and the revocations (edge-download.ts).
// Each run starts with a hello (edge-hello.ts), and the loops start again, after another hello,
// whenever an answer names a new incarnation of the cloud (it restarted, maybe from a backup).
// Decisions never wait on any of this: scans read the local index and journal only. While
// requests fail the link is down: each loop backs off (doubling, full jitter) and
// sync.link_down / sync.link_up are told once per outage.

/** The longest a Retry-After is waited for: a cloud asking for days is asked again after this. */
const MAX_RETRY_AFTER_MS = 5 * 60_000;

export interface SyncStatus {
  role: 'edge';
  edge_id: number | null;
  online: boolean;
  state: LinkHealthState;
  last_error: string | null;
  last_upload_at: string | null;
  last_download_at: string | null;
  backlog: number;
  oldest_unsynced_at: string | null;
  cursor: string | null;
  clock_offset_ms: number | null;
  clock_synchronised: boolean;
  latency_ms: number | null;
  /** The cloud URL the link uses now, of cloud.url's list (docs/sync.md: several cloud URLs). */
  cloud_url: string | null;
  /** The last time this edge found its cloud behind it (restored from a backup), and what it did. */
  cloud_rollback: { detected_at: string; resent_items: number; pulled_from_start: boolean } | null;
  /** The sync protocol version agreed at the last hello (docs/sync.md: protocol versions). */
  protocol: number | null;
}

export class EdgeSync {
  readonly stats: EdgeStats = {
    uploadedItems: 0,
    uploadBatches: 0,
    downloadedRows: 0,
    downloadedDeletions: 0,
    staleChanges: 0,
    revocations: 0,
    failures: 0,
  };
  readonly #link: CloudLink;
  readonly #state: LinkState;
  readonly #health: LinkHealth;
  readonly #upload: EdgeUpload;
  readonly #download: EdgeDownload;
  readonly #hello: EdgeHello;
  /** This generation of the loops': aborted on stop, or to meet a cloud that started again (a new incarnation). */
  #abort = new AbortController();
  #stopped = false;
  #generations: Promise<void> | null = null;
  /** The cloud run this edge last checked its position against in hello (null: not yet in this generation). */
  #incarnation: string | null = null;
  #reconciled = false;
  #helloing: Promise<void> | null = null;

  constructor(private readonly d: EdgeSyncDeps) {
    this.#health = new LinkHealth(
      d.log,
      () => iso(d.clock.now()),
      (event, fields) => this.#tell(event, fields),
    );
    this.#link = new CloudLink({
      urls: d.config.cloud.url!,
      token: d.config.sync.token!,
      caFile: d.config.cloud.caFile,
      timeoutMs: d.config.sync.requestTimeoutMs,
      maxAnswerBytes: d.config.sync.maxAnswerBytes,
      appVersion: d.appVersion,
      now: () => d.clock.now(),
      offset: d.clockOffset,
      onCloud: (cloud) => this.#met(cloud),
      onSwitch: ({ from, to, reason }) =>
        d.log.warn({ from, to, reason }, 'cloud URL switched: the one in use stopped answering, another instance does'),
    });
    this.#state = new LinkState(d.db, d.projects);
    const run: EdgeRun = {
      d,
      link: this.#link,
      state: this.#state,
      stats: this.stats,
      signal: () => this.#abort.signal,
      sleep: (ms) => this.#sleep(ms),
    };
    this.#upload = new EdgeUpload(run);
    this.#download = new EdgeDownload(run, () => this.#upload.drained(() => this.#stopped || this.#linkDown));
    this.#hello = new EdgeHello(run, () => this.#download.reset());
  }

  /** Nothing gets through to the cloud now: the link is down, or the cloud suspended this edge. */
  get #linkDown(): boolean {
    return this.#health.state === 'offline' || this.#health.state === 'suspended';
  }

  /** The synced project's local id, once linked. */
  get projectId(): number | null {
    return this.#state.row()?.project_id ?? null;
  }

  start(): void {
    const row = this.#state.row();
    setIdBlock(this.d.db, row ? blockOfEdge(row.edge_id) : null);
    if (row?.clock_offset_ms !== null && row?.clock_offset_ms !== undefined)
      this.d.clockOffset.carryOver(row.clock_offset_ms);
    // Whatever is appended to the feed (a committed change's outbox entries, an observed state, access
    // events ingested by the journal) may be for the cloud: the upload reads it now, not at its poll.
    this.d.bus.on(this, 'feed.appended', () => this.#upload.poke());
    this.#upload.pacer.start();
    this.#download.pacer.start();
    this.#generations = this.#runGenerations();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#abort.abort();
    this.#upload.pacer.stop();
    this.#download.pacer.stop();
    this.#upload.poke();
    this.d.bus.removeListeners(this);
    await this.#generations;
    await this.#link.close();
  }

  status(): SyncStatus {
    const row = this.#state.row();
    const cursor = this.d.feed.cursor(CONSUMER) ?? { accessEventId: 0, domainEventSeq: 0 };
    const { backlog, oldest } = unsynced(this.d.db, cursor, row?.project_id ?? -1);
    const clock = this.d.clockOffset.now();
    return {
      role: 'edge',
      edge_id: row?.edge_id ?? null,
      online: this.#health.state === 'online',
      state: this.#health.state,
      last_error: this.#health.lastError,
      last_upload_at: row?.last_upload_at ?? null,
      last_download_at: row?.last_download_at ?? null,
      backlog,
      oldest_unsynced_at: oldest ?? null,
      cursor: row?.download_cursor ?? null,
      clock_offset_ms: clock.offsetMs,
      clock_synchronised: clock.synchronised,
      latency_ms: this.#link.lastLatencyMs,
      cloud_url: this.#link.urls.inUse,
      cloud_rollback: row?.cloud_rollback_at
        ? {
            detected_at: row.cloud_rollback_at,
            resent_items: row.cloud_rollback_resent ?? 0,
            pulled_from_start: row.cloud_rollback_pulled === 1,
          }
        : null,
      protocol: row?.agreed_protocol ?? null,
    };
  }

  /** Resolves once everything written before the call has been uploaded, or the link is down, or after a minute. */
  drained(): Promise<void> {
    return this.#upload.drained(() => this.#stopped || this.#linkDown);
  }

  // ---- the loops

  /** The three loops, started again (after a hello) whenever a cloud that started anew answers. */
  async #runGenerations(): Promise<void> {
    while (!this.#stopped) {
      const abort = (this.#abort = new AbortController());
      this.#upload.reset();
      this.#download.reset();
      await Promise.allSettled([
        this.#run('upload', abort.signal, () => this.#upload.round()),
        this.#run('download', abort.signal, () => this.#download.round()),
        this.#run('revocations', abort.signal, () => this.#download.revocationRound()),
      ]);
      if (!abort.signal.aborted) return; // the loops ended by themselves (refused, incompatible)
    }
  }

  /** Every answer names the cloud's run: a new one (it restarted, maybe
   * from a backup) means checking where this edge stands before going on. */
  #met(cloud: CloudState): void {
    if (this.#incarnation === null || cloud.incarnation === this.#incarnation) return;
    this.d.log.info({ incarnation: cloud.incarnation }, 'the cloud started again: checking what it holds of this edge');
    this.#incarnation = null;
    this.#reconciled = false;
    this.#abort.abort();
    this.#upload.poke(); // an idle upload loop notices at once
  }

  async #run(name: string, signal: AbortSignal, round: () => Promise<'again' | 'idle'>): Promise<void> {
    let failures = 0;
    while (!this.#stopped && !signal.aborted) {
      const began = performance.now();
      try {
        if (!this.#reconciled || !this.#state.row()) await this.#helloOnce();
        if (signal.aborted) return;
        const next = await round();
        failures = 0;
        // A round that sent nothing says nothing about the link, only that the loop no longer fails.
        if (this.#link.lastAnswerAt >= began) this.#health.up(name, began);
        else this.#health.recovered(name);
        if (next === 'idle' && name === 'upload') await this.#upload.idle();
      } catch (err) {
        if (this.#stopped || signal.aborted) return;
        if (err instanceof LinkError && err.retryAfterMs !== null) {
          // The cloud answered and said when to come back (429, 503): that long, not the back-off.
          const wait = Math.min(err.retryAfterMs, MAX_RETRY_AFTER_MS) + Math.random() * this.d.config.sync.backoffMinMs;
          this.#health.deferred(name, err, wait);
          await this.#sleep(wait);
          continue;
        }
        failures++;
        this.stats.failures++;
        const done = this.#health.failed(name, err, began);
        if (done) return;
        const { backoffMinMs, backoffMaxMs } = this.d.config.sync;
        const cap = Math.min(backoffMaxMs, backoffMinMs * 2 ** Math.min(failures - 1, 20));
        await this.#sleep(Math.random() * cap);
      }
    }
  }

  /** One hello at a time, shared by the loops that wait for it. */
  #helloOnce(): Promise<void> {
    this.#helloing ??= this.#hello
      .hello()
      .then((incarnation) => {
        this.#incarnation = incarnation;
        this.#reconciled = true;
      })
      .finally(() => (this.#helloing = null));
    return this.#helloing;
  }

  // ---- link health

  #tell(event: 'sync.link_down' | 'sync.link_up', fields: Record<string, unknown>): void {
    const row = this.#state.row();
    if (!row) return;
    try {
      commit(this.d.db, this.d.bus, (w) =>
        w.emit(event, { projectId: row.project_id, edgeId: row.edge_id, ...fields } as never),
      );
    } catch (err) {
      this.d.log.warn({ err }, `${event} not recorded`);
    }
  }

  #sleep(ms: number): Promise<void> {
    const signal = this.#abort.signal;
    return new Promise((resolve) => {
      const onAbort = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}
