import { ScanPacer } from '../src/feed/pacer.js';
import { iso } from '../src/clock.js';
import { writeWhenFree } from '../src/store/transactions.js';
import { blockOfEdge, ID_BLOCK } from '../src/venue/row-ids.js';
import { type EdgeRun, paced } from './edge-run.js';
import type { z } from 'zod';
import { LinkError } from './link.js';
import { changePageSchema, decodeCursor, encodeCursor } from './protocol.js';

// The edge's downloads (docs/sync.md: down): reference data pulled by a cursor over the cloud's
// change versions, a page per transaction (replica.ts), the next page asked for while this one
// is written; caught up, it long-polls. Revocations on their own cursor and long poll, so a
// revocation never waits behind a long pull. After the cloud was found behind, the pull starts
// again from nothing, and once it is through, rows the cloud did not send again are removed. A
// page larger than the edge reads (sync.maxAnswerBytes) is asked for again with fewer rows.

type ChangePage = z.output<typeof changePageSchema>;

export class EdgeDownload {
  /** The doors first: rows per second while scans are busy (feed/pacer.ts). */
  readonly pacer: ScanPacer;
  #caughtUp = false;
  /** Rows asked for at most, after a page too large to read (until the pull is caught up). */
  #pageCap = Number.POSITIVE_INFINITY;
  #nextPage: { cursor: string; page: Promise<ChangePage> } | null = null;

  constructor(
    private readonly run: EdgeRun,
    /** Upload before download: resolves once what was written before has gone up. */
    private readonly drained: () => Promise<void>,
  ) {
    const { busyScansPerSecond, busyRowsPerSecond } = run.d.config.sync;
    this.pacer = new ScanPacer({ busyScansPerSecond, busyDeliveriesPerSecond: busyRowsPerSecond }, run.d.scansSoFar);
  }

  /** A new generation of the loops, or a pull starting again: nothing fetched ahead is kept. */
  reset(): void {
    this.#nextPage = null;
    this.#caughtUp = false;
  }

  async round(): Promise<'again' | 'idle'> {
    const { d, state, stats } = this.run;
    let row = state.row()!;
    const cursor = row.download_cursor ?? encodeCursor(0);
    const ahead = this.#nextPage?.cursor === cursor ? this.#nextPage : null;
    this.#nextPage = null;
    let page: ChangePage;
    if (ahead)
      page = await ahead.page; // the rest of a pull already under way
    else {
      await this.drained();
      row = state.row()!;
      const caughtUp = row.last_download_at !== null && this.#caughtUp;
      page = await this.#fetch(row.download_cursor ?? encodeCursor(0), caughtUp ? d.config.sync.longPollSeconds : 0);
    }
    if (decodeCursor(page.cursor) === null)
      throw new LinkError(
        `the cloud answered a cursor this edge cannot read: ${page.cursor.slice(0, 100)}`,
        'http',
        409,
        { code: 'sync_protocol_unsupported' },
      );
    // More to come: ask for the next page now, so the cloud reads it while this one is written here.
    if (page.has_more) {
      const next = this.#fetch(page.cursor, 0);
      next.catch(() => {}); // its failure is met when it is awaited
      this.#nextPage = { cursor: page.cursor, page: next };
      // A turn of the event loop first, so the request leaves now: the page's write holds the loop
      // for tens of milliseconds, and the cloud would otherwise hear of the request only after it.
      await new Promise((r) => setImmediate(r));
    }
    const applied = await d.replica.apply(row.project_id, page.changes, () =>
      state.downloaded(page.cursor, page.has_more ? null : iso(d.clock.now())),
    ); // an empty round counts: "had everything as of then"
    this.#caughtUp = !page.has_more;
    if (!page.has_more) this.#pageCap = Number.POSITIVE_INFINITY;
    if (!page.has_more && state.row()!.resync_pending) await this.#sweep();
    stats.downloadedRows += applied.rows;
    stats.downloadedDeletions += applied.deletions;
    stats.staleChanges += applied.skipped;
    await this.pacer.take(page.changes.length);
    return 'again';
  }

  async revocationRound(): Promise<'again' | 'idle'> {
    const { d, link, state, stats } = this.run;
    const row = state.row()!;
    const cursor = row.revocation_cursor ?? encodeCursor(0);
    const wait = d.config.sync.longPollSeconds;
    const page = await link.call(
      'GET',
      `${state.path('revocations')}?cursor=${encodeURIComponent(cursor)}&wait=${wait}`,
      changePageSchema,
      { waitMs: wait * 1000, signal: this.run.signal() },
    );
    const applied = await d.replica.apply(row.project_id, page.changes, () => state.revocationsRead(page.cursor));
    stats.revocations += page.changes.length;
    stats.staleChanges += applied.skipped;
    return 'again';
  }

  #fetch(cursor: string, wait: number): Promise<ChangePage> {
    const { d, link, state } = this.run;
    const limit = Math.min(paced(this.pacer, d.config.sync.pageSize), this.#pageCap);
    return link
      .call(
        'GET',
        `${state.path('changes')}?cursor=${encodeURIComponent(cursor)}&limit=${limit}&wait=${wait}`,
        changePageSchema,
        { waitMs: wait * 1000, signal: this.run.signal() },
      )
      .catch((err: unknown) => {
        // Rows too large for a page this size: the next asks for a quarter (a cloud
        // that answers too much whatever is asked keeps failing, and it shows).
        if (err instanceof LinkError && err.kind === 'too_large') this.#pageCap = Math.max(1, Math.floor(limit / 4));
        throw err;
      });
  }

  /** A pull from the start is through: what the cloud did not send again, it no longer has. */
  async #sweep(): Promise<void> {
    const { d, state } = this.run;
    const row = state.row()!;
    const base = blockOfEdge(row.edge_id);
    const swept = await d.replica.sweepUnsent(row.project_id, { from: base, to: base + ID_BLOCK });
    await writeWhenFree(d.db, () => state.resynced());
    d.log.info({ swept }, 'pulled everything again from the cloud: rows it no longer has removed');
  }
}
