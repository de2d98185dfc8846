import { ScanPacer } from '../access/scan-pacer.js';
import { SYNC_UPLOAD_CONSUMER } from '../access/event-retention.js';
import { iso } from '../clock.js';
import { commit } from '../events/unit-of-work.js';
import type { FeedCursor, FeedItem } from '../feed/feed.js';
import { statement } from '../store/statements.js';
import { writeTransaction, writeWhenFree } from '../store/transactions.js';
import { blockOfEdge, ID_BLOCK, raiseMark, setIdBlock } from '../venue/row-ids.js';
import { cloudBehind } from './cloud-rollback.js';
import { CloudLink, LinkError } from './link.js';
import { LinkHealth, type LinkState } from './link-health.js';
import { type Change, type CloudState, decodeCursor, encodeCursor, type Hello, PROTOCOL_VERSION } from './protocol.js';
import type { Replica } from './replica.js';
import type { SyncDepsIn } from './index.js';
import { FEED_EVENTS, unsynced } from './unsynced.js';
import { uploadItems } from './upload-items.js';

// The edge's side of sync (issue 26; docs/sync.md). Three loops over one link:
// - upload: the durable feed (src/feed) read with the consumer cursor 'sync:upload', sent in
//   batches, the cursor moved only once the cloud acknowledged the batch (a crash between the
//   two sends it again; the cloud stores each item once by uuid);
// - download: reference data pulled by a cursor over the cloud's change versions, a page per
//   transaction (replica.ts), the index told at once from the rows written; caught up, it
//   long-polls. Each round waits for the upload to drain first (upload before download);
// - revocations: their own cursor and long poll, so a revocation never waits behind a long pull.
// Decisions never wait on any of this: scans read the local index and journal only.
// While requests fail the link is down: each loop backs off (doubling, full jitter) and
// sync.link_down / sync.link_up are told once per outage.

export interface SyncStatus {
  role: 'edge';
  edge_id: number | null;
  online: boolean;
  state: LinkState;
  last_error: string | null;
  last_upload_at: string | null;
  last_download_at: string | null;
  backlog: number;
  oldest_unsynced_at: string | null;
  cursor: string | null;
  clock_offset_ms: number | null;
  clock_synchronised: boolean;
  latency_ms: number | null;
  /** The last time this edge found its cloud behind it (restored from a backup), and what it did. */
  cloud_rollback: { detected_at: string; resent_items: number; pulled_from_start: boolean } | null;
}

interface LinkRow {
  edge_id: number;
  project_id: number;
  cloud_project_id: number;
  download_cursor: string | null;
  revocation_cursor: string | null;
  last_upload_at: string | null;
  last_download_at: string | null;
  clock_offset_ms: number | null;
  acked_access_event_id: number | null;
  acked_domain_event_seq: number | null;
  resync_pending: number;
  cloud_rollback_at: string | null;
  cloud_rollback_resent: number | null;
  cloud_rollback_pulled: number | null;
}

/** While the doors are busy, no batch or page is larger than this: each is a few milliseconds of
 * the event loop at most, so a closed loop of scans is not held up behind one (the pacers set the rate). */
const BUSY_BATCH = 200;

/** The upload's feed cursor (retention prunes only what it has passed). */
const CONSUMER = SYNC_UPLOAD_CONSUMER;

type ChangePage = { changes: Change[]; cursor: string; has_more: boolean };

interface PreparedBatch {
  from: FeedCursor;
  cursor: FeedCursor;
  items: number;
  body: { clock: { offset_ms: number | null; synchronised: boolean }; backlog: number; items: ReturnType<typeof uploadItems> } | null;
}

const sameCursor = (a: FeedCursor, b: FeedCursor) => a.accessEventId === b.accessEventId && a.domainEventSeq === b.domainEventSeq;

/** What the edge takes of the sync services' dependencies (sync/index.ts), and its replica. */
export type EdgeSyncDeps = Omit<SyncDepsIn, 'occupancy' | 'index'> & { replica: Replica };

export class EdgeSync {
  readonly #link: CloudLink;
  /** This generation of the loops': aborted on stop, or to meet a cloud that started again (a new incarnation). */
  #abort = new AbortController();
  #stopped = false;
  #generations: Promise<void> | null = null;
  /** The cloud run this edge last checked its position against in hello (docs/sync.md: a cloud restored from a backup). */
  #incarnation: string | null = null;
  #reconciled = false;
  #helloing: Promise<void> | null = null;
  readonly #health: LinkHealth;
  #wakeUpload: (() => void) | null = null;
  #uploadPending = true;
  #uploading: Promise<void> | null = null;
  readonly stats = { uploadedItems: 0, uploadBatches: 0, downloadedRows: 0, downloadedDeletions: 0, staleChanges: 0, revocations: 0, failures: 0, cloudRollbacks: 0, sweptRows: 0 };

  /** The doors first: sync's items and rows per second while scans are busy (access/scan-pacer.ts). */
  readonly #items: ScanPacer;
  readonly #rows: ScanPacer;

  constructor(private readonly d: EdgeSyncDeps) {
    this.#health = new LinkHealth(
      d.log,
      () => iso(d.clock.now()),
      (event, fields) => this.#tell(event, fields),
    );
    const { busyScansPerSecond, busyItemsPerSecond, busyRowsPerSecond } = d.config.sync;
    this.#items = new ScanPacer({ busyScansPerSecond, busyDeliveriesPerSecond: busyItemsPerSecond }, d.scansSoFar);
    this.#rows = new ScanPacer({ busyScansPerSecond, busyDeliveriesPerSecond: busyRowsPerSecond }, d.scansSoFar);
    this.#link = new CloudLink({
      url: d.config.cloud.url!,
      token: d.config.sync.token!,
      caFile: d.config.cloud.caFile,
      timeoutMs: d.config.sync.requestTimeoutMs,
      appVersion: d.appVersion,
      now: () => d.clock.now(),
      offset: d.clockOffset,
      onCloud: (cloud) => this.#met(cloud),
    });
  }

  /** The synced project's local id, once linked. */
  get projectId(): number | null {
    return this.#row()?.project_id ?? null;
  }

  start(): void {
    const row = this.#row();
    setIdBlock(this.d.db, row ? blockOfEdge(row.edge_id) : null);
    if (row?.clock_offset_ms !== null && row?.clock_offset_ms !== undefined) this.d.clockOffset.carryOver(row.clock_offset_ms);
    this.d.journal.onIngest(() => this.#poke());
    this.d.bus.on(this, 'attendee.created', () => this.#poke());
    this.d.bus.on(this, 'attendee.updated', () => this.#poke());
    this.d.bus.on(this, 'attendee.deleted', () => this.#poke());
    this.d.bus.on(this, 'credential.created', () => this.#poke());
    this.d.bus.on(this, 'credential.revoked', () => this.#poke());
    this.d.bus.on(this, 'attendee.imported', () => this.#poke());
    this.d.bus.on(this, 'gateway.online', () => this.#poke());
    this.d.bus.on(this, 'gateway.offline', () => this.#poke());
    this.#items.start();
    this.#rows.start();
    this.#generations = this.#runGenerations();
  }

  /** The three loops, started again (after a hello) whenever a cloud that started anew answers. */
  async #runGenerations(): Promise<void> {
    while (!this.#stopped) {
      const abort = (this.#abort = new AbortController());
      this.#nextBatch = null;
      this.#nextPage = null;
      await Promise.allSettled([
        this.#run('upload', abort.signal, () => this.#uploadRound()),
        this.#run('download', abort.signal, () => this.#downloadRound()),
        this.#run('revocations', abort.signal, () => this.#revocationRound()),
      ]);
      if (!abort.signal.aborted) return; // the loops ended by themselves (refused, incompatible)
    }
  }

  /** Every answer names the cloud's run: a new one (it restarted, maybe from a backup) means checking where this edge stands before going on. */
  #met(cloud: CloudState): void {
    if (this.#incarnation === null || cloud.incarnation === this.#incarnation) return;
    this.d.log.info({ incarnation: cloud.incarnation }, 'the cloud started again: checking what it holds of this edge');
    this.#incarnation = null;
    this.#reconciled = false;
    this.#abort.abort();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#abort.abort();
    this.#items.stop();
    this.#rows.stop();
    this.#wakeUpload?.();
    this.d.bus.removeListeners(this);
    await this.#generations;
    await this.#link.close();
  }

  status(): SyncStatus {
    const row = this.#row();
    const cursor = this.d.feed.cursor(CONSUMER) ?? { accessEventId: 0, domainEventSeq: 0 };
    const projectId = row?.project_id ?? -1;
    const { backlog, oldest } = unsynced(this.d.db, cursor, projectId);
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
      cloud_rollback: row?.cloud_rollback_at ? { detected_at: row.cloud_rollback_at, resent_items: row.cloud_rollback_resent ?? 0, pulled_from_start: row.cloud_rollback_pulled === 1 } : null,
    };
  }

  /** Resolves once everything written before the call has been uploaded (upload before download),
   * or the link is down, or after a minute (a batch the cloud keeps refusing must not stop downloads). */
  async drained(): Promise<void> {
    const target = this.d.feed.head();
    const until = performance.now() + 60_000;
    const behind = () => {
      const at = this.d.feed.cursor(CONSUMER) ?? { accessEventId: 0, domainEventSeq: 0 };
      return at.accessEventId < target.accessEventId || at.domainEventSeq < target.domainEventSeq;
    };
    while (!this.#stopped && this.#health.state !== 'offline' && performance.now() < until && behind()) {
      this.#poke();
      if (this.#uploading) await this.#uploading;
      else await this.#sleep(20);
    }
  }

  // ---- the loops

  async #run(name: string, signal: AbortSignal, round: () => Promise<'again' | 'idle'>): Promise<void> {
    let failures = 0;
    while (!this.#stopped && !signal.aborted) {
      const began = performance.now();
      try {
        if (!this.#reconciled || !this.#row()) await this.#helloOnce();
        if (signal.aborted) return;
        const next = await round();
        failures = 0;
        if (this.#link.lastAnswerAt >= began) this.#health.up(began); // a round that sent nothing says nothing about the link
        if (next === 'idle' && name === 'upload') await this.#idle();
      } catch (err) {
        if (this.#stopped || signal.aborted) return;
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
    this.#helloing ??= this.#hello().finally(() => (this.#helloing = null));
    return this.#helloing;
  }

  /** Links the edge at its first contact; at the first of each run, and whenever the cloud started again, checks that the cloud holds what this edge sent and read. */
  async #hello(): Promise<void> {
    const hello = await this.#link.call<Hello>('GET', '/api/v1/sync/hello', { signal: this.#abort.signal });
    if (hello.protocol !== PROTOCOL_VERSION) {
      throw new LinkError(`the cloud speaks sync protocol ${hello.protocol}, this edge ${PROTOCOL_VERSION}`, 'http', 409, { code: 'sync_protocol_unsupported' });
    }
    if (!this.#row()) this.#enrol(hello);
    await this.#checkCloud(hello);
    this.#incarnation = hello.cloud?.incarnation ?? null;
    this.#reconciled = true;
  }

  /** A cloud behind this edge (restored from a backup): send again what it lacks, pull everything again. */
  async #checkCloud(hello: Hello): Promise<void> {
    const link = this.#row()!;
    const from = this.d.feed.cursor(CONSUMER) ?? { accessEventId: 0, domainEventSeq: 0 };
    const behind = cloudBehind(link, from, hello);
    if (!behind) return;
    const before = unsynced(this.d.db, from, link.project_id).backlog;
    await writeWhenFree(this.d.db, () => {
      this.d.feed.saveCursor(CONSUMER, behind.uploadFrom);
      this.d.replica.forgetVersions();
      statement(
        this.d.db,
        `UPDATE sync_link SET download_cursor = NULL, revocation_cursor = NULL, last_download_at = NULL, acked_access_event_id = ?, acked_domain_event_seq = ?, resync_pending = 1,
           cloud_rollback_at = ?, cloud_rollback_resent = ?, cloud_rollback_pulled = 1 WHERE id = 1`,
      ).run(behind.uploadFrom.accessEventId, behind.uploadFrom.domainEventSeq, iso(this.d.clock.now()), unsynced(this.d.db, behind.uploadFrom, link.project_id).backlog - before);
    });
    this.#caughtUp = false;
    this.stats.cloudRollbacks++;
    this.d.log.warn({ reasons: behind.reasons, uploadFrom: behind.uploadFrom }, 'the cloud is behind this edge (restored from a backup?): sending again what it lacks, pulling everything again');
  }

  #enrol(hello: Hello): void {
    const team = this.d.teams.findBySlug(hello.project.team_slug) ?? this.d.teams.create(hello.project.team_slug, hello.project.team_slug);
    const project =
      this.d.projects.findBySlugs(team.slug, hello.project.slug) ?? this.d.projects.create({ teamId: team.id, name: hello.project.name, slug: hello.project.slug, timezone: hello.project.timezone });
    writeTransaction(this.d.db, () => {
      statement(this.d.db, 'INSERT OR IGNORE INTO sync_link (id, edge_id, project_id, cloud_project_id) VALUES (1, ?, ?, ?)').run(hello.edge.id, project.id, hello.project.id);
      // Above every id the cloud holds or held in this block: a box wiped and enrolled again with its token reuses none (docs/sync.md: ids).
      if (hello.highest_ids.attendee !== null) raiseMark(this.d.db, 'attendees', hello.highest_ids.attendee);
      if (hello.highest_ids.credential !== null) raiseMark(this.d.db, 'credentials', hello.highest_ids.credential);
    });
    setIdBlock(this.d.db, blockOfEdge(hello.edge.id));
    this.d.log.info({ edgeId: hello.edge.id, project: `${team.slug}/${project.slug}` }, 'linked to the cloud: this edge hosts its project');
  }

  #path(suffix: string): string {
    const row = this.#row()!;
    const project = this.d.projects.find(row.project_id)!;
    const team = statement(this.d.db, 'SELECT slug FROM teams WHERE id = ?').pluck().get(project.team_id) as string;
    return `/api/v1/projects/${encodeURIComponent(team)}/${encodeURIComponent(project.slug)}/sync/${suffix}`;
  }

  async #uploadRound(): Promise<'again' | 'idle'> {
    this.#uploadPending = false;
    let release!: () => void;
    this.#uploading = new Promise((r) => (release = r));
    try {
      const from: FeedCursor = this.d.feed.cursor(CONSUMER) ?? { accessEventId: 0, domainEventSeq: 0 };
      const prepared = this.#nextBatch && sameCursor(this.#nextBatch.from, from) ? this.#nextBatch : this.#readBatch(from);
      this.#nextBatch = null;
      if (prepared.items === 0) {
        if (!sameCursor(prepared.cursor, from)) await writeWhenFree(this.d.db, () => this.d.feed.saveCursor(CONSUMER, prepared.cursor));
        return this.#uploadPending ? 'again' : 'idle';
      }
      // What the cloud should hold before this batch: past the last one it acknowledged (docs/sync.md: a cloud restored from a backup).
      const link = this.#row()!;
      const acked = { access_event_id: link.acked_access_event_id ?? 0, domain_event_seq: link.acked_domain_event_seq ?? 0 };
      const feed = { from: acked, to: { access_event_id: prepared.cursor.accessEventId, domain_event_seq: prepared.cursor.domainEventSeq } };
      const sent = this.#link.call('POST', this.#path('upload'), { body: { ...prepared.body, feed }, signal: this.#abort.signal });
      sent.catch(() => {}); // a failure is met at the await below, not as an unhandled rejection meanwhile
      // While the cloud stores this batch, read the next one (sent only after this one's answer: in order).
      await new Promise((r) => setImmediate(r));
      let next: PreparedBatch | null = null;
      try {
        next = this.#readBatch(prepared.cursor);
      } catch {
        next = null; // read again next round
      }
      await sent;
      await writeWhenFree(this.d.db, () => {
        this.d.feed.saveCursor(CONSUMER, prepared.cursor);
        statement(this.d.db, 'UPDATE sync_link SET last_upload_at = ?, clock_offset_ms = ?, acked_access_event_id = ?, acked_domain_event_seq = ? WHERE id = 1').run(
          iso(this.d.clock.now()),
          this.d.clockOffset.now().offsetMs,
          feed.to.access_event_id,
          feed.to.domain_event_seq,
        );
      });
      this.#nextBatch = next;
      this.stats.uploadedItems += prepared.items;
      this.stats.uploadBatches++;
      await this.#items.take(prepared.items);
      return 'again';
    } finally {
      this.#uploading = null;
      release();
    }
  }

  /** The next batch read ahead while the previous one was on its way (only used if the cursor is where it began). */
  #nextBatch: PreparedBatch | null = null;

  #readBatch(from: FeedCursor): PreparedBatch {
    const row = this.#row()!;
    const limit = this.#items.busy ? Math.max(1, Math.min(this.d.config.sync.uploadBatch, BUSY_BATCH, Math.floor(this.#items.perSample))) : this.d.config.sync.uploadBatch;
    const { items, cursor } = this.d.feed.read(from, { projectId: row.project_id, events: FEED_EVENTS, names: false }, limit);
    const body = items.length === 0 ? null : { clock: this.#clock(), backlog: this.#approximateBacklog(cursor), items: uploadItems(this.d.db, items as FeedItem[]) };
    return { from, cursor, items: items.length, body };
  }

  async #downloadRound(): Promise<'again' | 'idle'> {
    let row = this.#row()!;
    const cursor = row.download_cursor ?? encodeCursor(0);
    const ahead = this.#nextPage?.cursor === cursor ? this.#nextPage : null;
    this.#nextPage = null;
    let page: ChangePage;
    if (ahead)
      page = await ahead.page; // the rest of a pull already under way
    else {
      await this.drained(); // upload before download
      row = this.#row()!;
      const caughtUp = row.last_download_at !== null && this.#caughtUp;
      page = await this.#fetchPage(row.download_cursor ?? encodeCursor(0), caughtUp ? this.d.config.sync.longPollSeconds : 0);
    }
    if (decodeCursor(page.cursor) === null) throw new LinkError(`the cloud answered a cursor this edge cannot read: ${page.cursor}`, 'http', 409, { code: 'sync_protocol_unsupported' });
    // More to come: ask for the next page now, so the cloud reads it while this one is written here.
    if (page.has_more) {
      const next = this.#fetchPage(page.cursor, 0);
      next.catch(() => {}); // its failure is met when it is awaited
      this.#nextPage = { cursor: page.cursor, page: next };
      // A turn of the event loop first, so the request leaves now: the page's write holds the loop
      // for tens of milliseconds, and the cloud would otherwise hear of the request only after it.
      await new Promise((r) => setImmediate(r));
    }
    const applied = await this.d.replica.apply(row.project_id, page.changes, () => {
      const done = page.has_more ? null : iso(this.d.clock.now()); // an empty round counts: "had everything as of then"
      statement(this.d.db, 'UPDATE sync_link SET download_cursor = ?, last_download_at = COALESCE(?, last_download_at) WHERE id = 1').run(page.cursor, done);
    });
    this.#caughtUp = !page.has_more;
    if (!page.has_more && this.#row()!.resync_pending) await this.#sweepAfterResync();
    this.stats.downloadedRows += applied.rows;
    this.stats.downloadedDeletions += applied.deletions;
    this.stats.staleChanges += applied.skipped;
    await this.#rows.take(page.changes.length);
    return 'again';
  }
  #caughtUp = false;
  #nextPage: { cursor: string; page: Promise<ChangePage> } | null = null;

  #fetchPage(cursor: string, wait: number): Promise<ChangePage> {
    const limit = this.#rows.busy ? Math.max(1, Math.min(this.d.config.sync.pageSize, BUSY_BATCH, Math.floor(this.#rows.perSample))) : this.d.config.sync.pageSize;
    return this.#link.call<ChangePage>('GET', `${this.#path('changes')}?cursor=${encodeURIComponent(cursor)}&limit=${limit}&wait=${wait}`, { waitMs: wait * 1000, signal: this.#abort.signal });
  }

  async #revocationRound(): Promise<'again' | 'idle'> {
    const row = this.#row()!;
    const cursor = row.revocation_cursor ?? encodeCursor(0);
    const wait = this.d.config.sync.longPollSeconds;
    const page = await this.#link.call<ChangePage>('GET', `${this.#path('revocations')}?cursor=${encodeURIComponent(cursor)}&wait=${wait}`, {
      waitMs: wait * 1000,
      signal: this.#abort.signal,
    });
    const applied = await this.d.replica.apply(row.project_id, page.changes, () => statement(this.d.db, 'UPDATE sync_link SET revocation_cursor = ? WHERE id = 1').run(page.cursor));
    this.stats.revocations += page.changes.length;
    this.stats.staleChanges += applied.skipped;
    return 'again';
  }

  /** A pull from the start is through: what the cloud did not send again, it no longer has. */
  async #sweepAfterResync(): Promise<void> {
    const row = this.#row()!;
    const base = blockOfEdge(row.edge_id);
    const swept = await this.d.replica.sweepUnsent(row.project_id, { from: base, to: base + ID_BLOCK });
    await writeWhenFree(this.d.db, () => statement(this.d.db, 'UPDATE sync_link SET resync_pending = 0 WHERE id = 1').run());
    this.stats.sweptRows += swept;
    this.d.log.info({ swept }, 'pulled everything again from the cloud: rows it no longer has removed');
  }

  // ---- link health

  #tell(event: 'sync.link_down' | 'sync.link_up', fields: Record<string, unknown>): void {
    const row = this.#row();
    if (!row) return;
    try {
      commit(this.d.db, this.d.bus, (w) => w.emit(event, { projectId: row.project_id, edgeId: row.edge_id, ...fields } as never));
    } catch (err) {
      this.d.log.warn({ err }, `${event} not recorded`);
    }
  }

  // ---- helpers

  #clock(): { offset_ms: number | null; synchronised: boolean } {
    const { offsetMs, synchronised } = this.d.clockOffset.now();
    return { offset_ms: offsetMs, synchronised };
  }

  #approximateBacklog(after: FeedCursor): number {
    const maxId = statement(this.d.db, 'SELECT COALESCE(MAX(id), 0) FROM access_events').pluck().get() as number;
    return Math.max(0, maxId - after.accessEventId);
  }

  #row(): LinkRow | null {
    return (statement(this.d.db, 'SELECT * FROM sync_link WHERE id = 1').get() as LinkRow | undefined) ?? null;
  }

  #poke(): void {
    this.#uploadPending = true;
    this.#wakeUpload?.();
  }

  #idle(): Promise<void> {
    if (this.#uploadPending) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, 1000); // also catches writes by another process (the CLI)
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.#wakeUpload = () => {
        this.#wakeUpload = null;
        done();
      };
    });
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
