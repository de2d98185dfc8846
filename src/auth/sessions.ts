import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../clock.js';
import { iso } from '../clock.js';
import type { Database } from '../store/database.js';
import type { EventBus } from '../events/bus.js';
import { statement } from '../store/statements.js';
import { isStoreBusy } from '../store/transactions.js';

// Cookie sessions for same-domain single-page apps (spec: Authentication item 7), in the
// Laravel Sanctum style: GET /sanctum/csrf-cookie starts a session and hands its CSRF token
// out in the readable XSRF-TOKEN cookie; the app echoes it in X-XSRF-TOKEN on every
// state-changing request. The session id itself is only stored hashed.

export interface SessionRecord {
  idHash: Buffer;
  userId: number | null;
  csrfToken: string;
  createdAt: string;
  expiresAt: string;
}

interface SessionRow {
  id_hash: Buffer;
  user_id: number | null;
  csrf_token: string;
  created_at: string;
  expires_at: string;
}

const sha256 = (value: string) => createHash('sha256').update(value).digest();
const SLIDE_STEP_MS = 60_000;

/** A write that only keeps books (a session's sliding expiry): a store busy past busy_timeout
 * must not fail the request it rides on; the next request writes it (docs/storage.md). */
function bookkeeping(write: () => unknown): void {
  try {
    write();
  } catch (err) {
    if (!isStoreBusy(err)) throw err;
  }
}

export class SessionService {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly lifetimeMinutes: number,
    /** Announces a logged-in session ended, so connections
     * admitted with it end at once (docs/security.md, attack 1). */
    private readonly bus?: EventBus,
  ) {}

  get lifetimeMs(): number {
    return this.lifetimeMinutes * 60_000;
  }

  /** A new session (anonymous until login); answers the cookie value to hand out. */
  start(
    userId: number | null = null,
    csrfToken = randomBytes(30).toString('base64url'),
  ): { id: string; record: SessionRecord } {
    const id = randomBytes(30).toString('base64url');
    const now = this.clock.now();
    statement(
      this.db,
      'INSERT INTO sessions (id_hash, user_id, csrf_token, created_at, expires_at) VALUES (?, ?, ?, ?, ?)',
    ).run(sha256(id), userId, csrfToken, iso(now), iso(now + this.lifetimeMs));
    return { id, record: this.find(id)! };
  }

  /** The live session a cookie names; extends its lifetime, writing at most once a minute. */
  find(id: string): SessionRecord | null {
    const row = statement(this.db, 'SELECT * FROM sessions WHERE id_hash = ?').get(sha256(id)) as
      | SessionRow
      | undefined;
    if (!row) return null;
    const now = this.clock.now();
    const expires = Date.parse(row.expires_at);
    if (expires <= now) {
      bookkeeping(() => statement(this.db, 'DELETE FROM sessions WHERE id_hash = ?').run(row.id_hash)); // the sweep takes it otherwise
      return null;
    }
    if (now + this.lifetimeMs - expires >= SLIDE_STEP_MS) {
      row.expires_at = iso(now + this.lifetimeMs);
      bookkeeping(() =>
        statement(this.db, 'UPDATE sessions SET expires_at = ? WHERE id_hash = ?').run(row.expires_at, row.id_hash),
      );
    }
    return {
      idHash: row.id_hash,
      userId: row.user_id,
      csrfToken: row.csrf_token,
      createdAt: row.created_at,
      expiresAt: row.expires_at,
    };
  }

  /** Logging in issues a fresh session id (no fixation) that keeps the CSRF token. */
  login(previous: SessionRecord, userId: number): { id: string; record: SessionRecord } {
    this.destroy(previous);
    return this.start(userId, previous.csrfToken);
  }

  destroy(record: SessionRecord): void {
    const ended = statement(this.db, 'DELETE FROM sessions WHERE id_hash = ?').run(record.idHash).changes > 0;
    if (ended && record.userId !== null)
      this.bus?.emit('permissions.changed', { userId: record.userId, reason: 'session_ended' });
  }

  destroyAllOf(userId: number): void {
    if (statement(this.db, 'DELETE FROM sessions WHERE user_id = ?').run(userId).changes > 0)
      this.bus?.emit('permissions.changed', { userId, reason: 'session_ended' });
  }

  /** Whether the session is still there and unexpired, without extending it: connections that
   * outlive a request re-check with this (a WebSocket is not a use of the session). */
  isLive(idHash: Buffer): boolean {
    const row = statement(this.db, 'SELECT expires_at FROM sessions WHERE id_hash = ?').get(idHash) as
      | { expires_at: string }
      | undefined;
    return row !== undefined && Date.parse(row.expires_at) > this.clock.now();
  }

  purgeExpired(): number {
    return statement(this.db, 'DELETE FROM sessions WHERE expires_at <= ?').run(iso(this.clock.now())).changes;
  }

  static csrfMatches(record: SessionRecord, header: string | undefined): boolean {
    if (!header) return false;
    const a = Buffer.from(record.csrfToken);
    const b = Buffer.from(header);
    return a.length === b.length && timingSafeEqual(a, b);
  }
}
