import { SYNC_UPLOAD_CONSUMER } from '../src/journal/event-retention.js';
import { ScanPacer } from '../src/feed/pacer.js';
import { iso } from '../src/clock.js';
import type { FeedCursor, FeedItem } from '../src/feed/feed.js';
import { statement } from '../src/store/statements.js';
import { writeWhenFree } from '../src/store/transactions.js';
import { type EdgeRun, paced } from './edge-run.js';
import { type FeedPosition, uploadResultSchema } from './protocol.js';
import { FEED_EVENTS } from './unsynced.js';
import { uploadItems, uploadParts } from './upload-items.js';
import { inUploadOf } from './protocol-versions.js';

// The edge's upload (docs/sync.md: up): the durable feed read with the consumer cursor
// 'sync:upload', sent in batches in order, the cursor moved only once the cloud acknowledged
// the batch (a crash between the two sends it again; the cloud stores each item once by uuid).
// Each batch names the feed positions past the last acknowledged batch and past itself, so a
// cloud restored from a backup never claims a batch it lost. A batch larger than one request may
// carry goes as several, its feed positions with the last (a batch cut short is sent again
// whole; the cloud stores each item once). The next batch is read while the cloud stores this one.

/** The upload's feed cursor (retention prunes only what it has passed). */
export const CONSUMER = SYNC_UPLOAD_CONSUMER;

interface PreparedBatch {
  from: FeedCursor;
  cursor: FeedCursor;
  items: number;
  body: { clock: { offset_ms: number | null; synchronised: boolean }; backlog: number } | null;
  /** The batch's items, a request's worth each. */
  parts: ReturnType<typeof uploadParts>;
}

const sameCursor = (a: FeedCursor, b: FeedCursor) =>
  a.accessEventId === b.accessEventId && a.domainEventSeq === b.domainEventSeq;
const position = (c: FeedCursor): FeedPosition => ({
  access_event_id: c.accessEventId,
  domain_event_seq: c.domainEventSeq,
});

export class EdgeUpload {
  /** The doors first: items per second while scans are busy (feed/pacer.ts). */
  readonly pacer: ScanPacer;
  #pending = true;
  #wake: (() => void) | null = null;
  #uploading: Promise<void> | null = null;
  /** The next batch read ahead while the previous one was on its way (only used if the cursor is where it began). */
  #next: PreparedBatch | null = null;

  constructor(private readonly run: EdgeRun) {
    const { busyScansPerSecond, busyItemsPerSecond } = run.d.config.sync;
    this.pacer = new ScanPacer({ busyScansPerSecond, busyDeliveriesPerSecond: busyItemsPerSecond }, run.d.scansSoFar);
  }

  /** Something new to send: the next round goes now. */
  poke(): void {
    this.#pending = true;
    this.#wake?.();
  }

  /** A new generation of the loops: nothing read ahead is kept. */
  reset(): void {
    this.#next = null;
  }

  async round(): Promise<'again' | 'idle'> {
    const { d, state, stats } = this.run;
    this.#pending = false;
    let release!: () => void;
    this.#uploading = new Promise((r) => (release = r));
    try {
      const from: FeedCursor = d.feed.cursor(CONSUMER) ?? { accessEventId: 0, domainEventSeq: 0 };
      const prepared = this.#next && sameCursor(this.#next.from, from) ? this.#next : this.#read(from);
      this.#next = null;
      if (prepared.items === 0) {
        if (!sameCursor(prepared.cursor, from))
          await writeWhenFree(d.db, () => d.feed.saveCursor(CONSUMER, prepared.cursor));
        return this.#pending ? 'again' : 'idle';
      }
      const feed = { from: state.acked(), to: position(prepared.cursor) };
      const sent = this.#send(prepared, feed);
      sent.catch(() => {}); // a failure is met at the await below, not as an unhandled rejection meanwhile
      // While the cloud stores this batch, read the next one (sent only after this one's answer: in order).
      await new Promise((r) => setImmediate(r));
      let next: PreparedBatch | null = null;
      try {
        next = this.#read(prepared.cursor);
      } catch {
        next = null; // read again next round
      }
      await sent;
      await writeWhenFree(d.db, () => {
        d.feed.saveCursor(CONSUMER, prepared.cursor);
        state.uploaded(iso(d.clock.now()), d.clockOffset.now().offsetMs, feed.to);
      });
      this.#next = next;
      stats.uploadedItems += prepared.items;
      stats.uploadBatches++;
      await this.pacer.take(prepared.items);
      return 'again';
    } finally {
      this.#uploading = null;
      release();
    }
  }

  /** Resolves once everything written before the call has been uploaded (upload before download),
   * or `stop()` says to stop waiting (the link is down, the loops end), or after a minute (a batch
   * the cloud keeps refusing must not stop downloads). */
  async drained(stop: () => boolean): Promise<void> {
    const { d } = this.run;
    const target = d.feed.head();
    const until = performance.now() + 60_000;
    const behind = () => {
      const at = d.feed.cursor(CONSUMER) ?? { accessEventId: 0, domainEventSeq: 0 };
      return at.accessEventId < target.accessEventId || at.domainEventSeq < target.domainEventSeq;
    };
    while (!stop() && performance.now() < until && behind()) {
      this.poke();
      if (this.#uploading) await this.#uploading;
      else await this.run.sleep(20);
    }
  }

  /** Nothing to send: until something is written, or a second
   * (which also catches writes by another process: the CLI). */
  idle(): Promise<void> {
    if (this.#pending) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, 1000);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.#wake = () => {
        this.#wake = null;
        done();
      };
    });
  }

  /** The batch's requests one after the other, its feed positions with the last. */
  async #send(prepared: PreparedBatch, feed: { from: FeedPosition; to: FeedPosition }): Promise<void> {
    const { link, state } = this.run;
    for (const [i, items] of prepared.parts.entries()) {
      const last = i === prepared.parts.length - 1;
      await link.call('POST', state.path('upload'), uploadResultSchema, {
        // In the version agreed at the hello: an older cloud gets none of what it does not have.
        body: { ...prepared.body, items: inUploadOf(items, link.protocol), ...(last ? { feed } : {}) },
        signal: this.run.signal(),
      });
    }
  }

  #read(from: FeedCursor): PreparedBatch {
    const { d, state } = this.run;
    const row = state.row()!;
    const { items, cursor } = d.feed.read(
      from,
      { projectId: row.project_id, events: FEED_EVENTS, names: false },
      paced(this.pacer, d.config.sync.uploadBatch),
    );
    if (items.length === 0) return { from, cursor, items: 0, body: null, parts: [] };
    const { offsetMs, synchronised } = d.clockOffset.now();
    const maxId = statement(d.db, 'SELECT COALESCE(MAX(id), 0) FROM access_events').pluck().get() as number;
    const body = { clock: { offset_ms: offsetMs, synchronised }, backlog: Math.max(0, maxId - cursor.accessEventId) };
    return { from, cursor, items: items.length, body, parts: uploadParts(uploadItems(d.db, items as FeedItem[])) };
  }
}
