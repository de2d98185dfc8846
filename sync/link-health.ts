import type { Logger } from '../src/logger.js';
import { LinkError, quote } from './link.js';

// Whether the edge's link to its cloud is up (docs/sync.md: link health), from
// what its requests met. Two failed requests in a row make it down (one stray reset of a pooled
// connection does not); a failure of a request begun before the last success is old news (a
// long poll cut with the link, answered late); a refused token or another protocol version stops
// sync for good. A suspended edge (its issuer lost access on the cloud: 401 edge_suspended) keeps
// asking, backed off, until an administrator of the cloud re-confirms it (docs/sync.md). A loop
// that fails twice in a row on what the cloud answered (an error status, an answer too large or
// not the protocol's, a page the edge cannot write) keeps the link down until that loop
// succeeds, whatever the other loops meet: the cloud answers, but sync does not work.
// `tell` is called once per change of state (sync.link_down / sync.link_up).

export type LinkState = 'starting' | 'online' | 'offline' | 'incompatible' | 'refused' | 'suspended';

export class LinkHealth {
  state: LinkState = 'starting';
  lastError: string | null = null;
  #downSince: string | null = null;
  #failures = 0;
  #failedSinceUp = 0;
  /** Start of the round of the last success. */
  #upSince = -1;
  /** Per loop, its failures in a row on what the cloud answered (not on the network). */
  readonly #failing = new Map<string, number>();

  constructor(
    private readonly log: Logger,
    private readonly now: () => string,
    private readonly tell: (event: 'sync.link_down' | 'sync.link_up', fields: Record<string, unknown>) => void,
  ) {}

  /** A round begun at `began` failed with `err`; answers true when sync must stop. */
  failed(loop: string, err: unknown, began: number): boolean {
    const message = err instanceof Error ? err.message : String(err);
    const e = err instanceof LinkError ? err : null;
    if (e?.status === 409 && e.body?.code === 'sync_protocol_unsupported') {
      this.state = 'incompatible';
      this.lastError = message;
      this.log.error(
        { err: message },
        'sync stopped: this edge and its cloud speak incompatible sync protocols; update one of them (nothing is uploaded or applied until then)',
      );
      return true;
    }
    if (e?.status === 401 && e.body?.code === 'edge_suspended') {
      if (this.state !== 'suspended') {
        this.log.error(
          { reason: quote(String(e.body.reason)) },
          'sync suspended: the cloud suspended this edge (its issuer lost access there); it resumes once an administrator of the cloud re-confirms it',
        );
      }
      this.state = 'suspended';
      this.lastError = `${message} (edge_suspended: ${quote(String(e.body.reason))})`;
      return false;
    }
    if (e?.status === 401) {
      this.state = 'refused';
      this.lastError = message;
      this.log.error(
        "sync stopped: the cloud refused this edge's sync token (revoked or wrong); set GATEHOUSE_SYNC_TOKEN to a token the cloud issued and restart",
      );
      return true;
    }
    const streak = e?.kind === 'network' ? 0 : (this.#failing.get(loop) ?? 0) + 1;
    if (streak > 0) this.#failing.set(loop, streak);
    if (!e && streak === 1) this.log.error({ err, loop }, 'sync round failed'); // once until the loop succeeds again
    this.#failures++;
    if (began < this.#upSince && streak < 2) return false;
    this.lastError = `${loop}: ${message}`;
    if (++this.#failedSinceUp < 2 && streak < 2 && this.state === 'online') return false;
    if (this.state !== 'offline') {
      this.state = 'offline';
      this.#downSince = this.now();
      this.log.warn(
        { reason: message },
        'cloud link down: decisions go on locally, sync resumes when the link is back',
      );
      this.tell('sync.link_down', { reason: message, since: this.#downSince });
    }
    return false;
  }

  /** The cloud answered `loop` 429 or 503 with Retry-After: not a failure of the link, its wait is the cloud's. */
  deferred(loop: string, err: LinkError, waitMs: number): void {
    this.lastError = `${loop}: ${err.message} (sent again in ${Math.ceil(waitMs / 1000)} s, as the cloud asked)`;
    this.log.debug({ loop, waitMs, reason: err.message }, 'the cloud asked this edge to come back later');
  }

  /** A round of `loop` went through without asking the cloud anything: it no longer fails (the link is as it was). */
  recovered(loop: string): void {
    this.#failing.delete(loop);
  }

  /** A round of `loop` begun at `began` got an answer from the cloud. */
  up(loop: string, began: number): void {
    this.#failing.delete(loop);
    this.#upSince = Math.max(this.#upSince, began);
    this.#failedSinceUp = 0;
    if (this.state === 'online') return;
    if ([...this.#failing.values()].some((n) => n >= 2)) return; // another loop still fails on what the cloud answers
    const wasDown = this.state === 'offline';
    if (this.state === 'suspended') this.log.info('sync resumed: the cloud accepts this edge again');
    this.state = 'online';
    this.lastError = null;
    if (wasDown) {
      this.log.info({ downSince: this.#downSince, failures: this.#failures }, 'cloud link up');
      this.tell('sync.link_up', { downSince: this.#downSince, at: this.now() });
    }
    this.#failures = 0;
    this.#downSince = null;
  }
}
