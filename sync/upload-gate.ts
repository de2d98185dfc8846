import { AppError } from '../src/errors.js';

// Which upload batches the cloud takes now (docs/sync.md: limits). One batch per edge at a time:
// an edge sends its batches in order, one after the other, so a second one while its first is
// still under way is a resend after a timeout, or not an edge at all. And at most
// sync.uploadsAtOnce batches of all edges at once: each is applied in slices that let the event
// loop serve everything else between them, so more at once only holds more parsed bodies in
// memory and makes each take longer. A batch refused here is refused before its body is read,
// so it costs the cloud nothing to parse; the edge sends it again after Retry-After.

/** Seconds an edge waits before sending a refused batch again: a batch takes about that. */
const RETRY_AFTER_SECONDS = 1;

export class UploadGate {
  readonly #edges = new Set<number>();

  constructor(private readonly atOnce: number) {}

  /** Batches under way now. */
  get busy(): number {
    return this.#edges.size;
  }

  /** Takes the edge's slot; answers its release (once only), or throws 503 sync_upload_busy. */
  admit(edgeId: number): () => void {
    if (this.#edges.has(edgeId)) throw busy('another batch of this edge is still being received or applied');
    if (this.#edges.size >= this.atOnce)
      throw busy(`it is applying ${this.#edges.size} batches of other edges already (sync.uploadsAtOnce)`);
    this.#edges.add(edgeId);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#edges.delete(edgeId);
    };
  }
}

function busy(detail: string): AppError {
  return new AppError(
    'sync_upload_busy',
    { detail },
    { headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) }, body: { retry_after: RETRY_AFTER_SECONDS } },
  );
}
