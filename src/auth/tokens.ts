import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../clock.js';
import { iso } from '../clock.js';
import type { Database } from '../store/database.js';
import type { EventBus } from '../events/bus.js';
import { statement } from '../store/statements.js';
import { isStoreBusy } from '../store/transactions.js';

// Personal access tokens, Sanctum style: `<id>|<random>` shown once; only SHA-256 of the
// random part is stored; compared in constant time. Revoking deletes the row, so the very
// next request with that token fails.

export interface TokenRecord {
  id: number;
  userId: number;
  name: string;
  abilities: string[];
  /** The effective expiry: the earlier of the token's own and the one the expiry setting gives. */
  expiresAt: string | null;
  lastUsedAt: string | null;
  createdAt: string;
}

interface TokenRow {
  id: number;
  user_id: number;
  name: string;
  token_hash: Buffer;
  abilities: string;
  expires_at: string | null;
  last_used_at: string | null;
  created_at: string;
}

const sha256 = (value: string) => createHash('sha256').update(value).digest();
// A last_used_at write at most once a minute per token (docs/auth.md, "last_used_at"; Sanctum
// users complain about a write on every request).
const TOUCH_INTERVAL_MS = 60_000;

export class TokenService {
  readonly #lastWritten = new Map<number, number>();
  readonly #lastUsed = new Map<number, number>();

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    /** Minutes a token lives, null = forever; read on each check so an administrator's change applies at once. */
    private readonly expiryMinutes: () => number | null,
    /** Announces revocations, so connections admitted with the token end at once (docs/security.md, attack 1). */
    private readonly bus?: EventBus,
  ) {}

  create(userId: number, name: string, abilities: string[]): { plainText: string; record: TokenRecord } {
    const secret = randomBytes(30).toString('base64url');
    const now = this.clock.now();
    // The column holds a token's own expiry only (none yet); the administrator's setting is
    // applied from created_at on every check, so changing it reaches existing tokens too.
    const expiresAt: string | null = null;
    const result = statement(
      this.db,
      `INSERT INTO personal_access_tokens (user_id, name, token_hash, abilities, expires_at, created_at)
         VALUES (?, ?, ?, ?, ?, ?)`,
    ).run(userId, name, sha256(secret), JSON.stringify(abilities), expiresAt, iso(now));
    const id = Number(result.lastInsertRowid);
    return { plainText: `${id}|${secret}`, record: this.toRecord(this.row(id)!) };
  }

  /** The token a bearer value names, or null when it is malformed, unknown, revoked or expired. */
  verify(bearer: string): TokenRecord | null {
    const bar = bearer.indexOf('|');
    if (bar < 1) return null;
    const idText = bearer.slice(0, bar);
    if (!/^\d{1,15}$/.test(idText)) return null;
    const row = this.row(Number(idText));
    if (!row) return null;
    const given = sha256(bearer.slice(bar + 1));
    if (row.token_hash.length !== given.length || !timingSafeEqual(row.token_hash, given)) return null;
    const record = this.toRecord(row);
    if (record.expiresAt !== null && Date.parse(record.expiresAt) <= this.clock.now()) return null;
    return record;
  }

  /** Marks the token used now; writes to the store at most once a minute per token. */
  touch(record: TokenRecord): TokenRecord {
    const now = this.clock.now();
    this.#lastUsed.set(record.id, now);
    const last = this.#lastWritten.get(record.id) ?? (record.lastUsedAt ? Date.parse(record.lastUsedAt) : 0);
    if (now - last >= TOUCH_INTERVAL_MS) this.write(record.id, now);
    return { ...record, lastUsedAt: iso(now) };
  }

  /** Writes the last-use times not yet stored (on shutdown). */
  flush(): void {
    for (const [id, used] of this.#lastUsed) if (used > (this.#lastWritten.get(id) ?? 0)) this.write(id, used);
  }

  private write(id: number, at: number): void {
    try {
      statement(this.db, 'UPDATE personal_access_tokens SET last_used_at = ? WHERE id = ?').run(iso(at), id);
    } catch (err) {
      // Bookkeeping, not the request's purpose: a store busy past busy_timeout must not fail a
      // read (docs/storage.md). Counted as written, so it is tried again a minute on, not on
      // every request meanwhile.
      if (!isStoreBusy(err)) throw err;
    }
    this.#lastWritten.set(id, at);
  }

  /** Still usable: not revoked and not expired (connections that outlive a request re-check with this). */
  isLive(id: number): boolean {
    const row = this.row(id);
    if (!row) return false;
    const { expiresAt } = this.toRecord(row);
    return expiresAt === null || Date.parse(expiresAt) > this.clock.now();
  }

  revoke(id: number): boolean {
    this.#lastWritten.delete(id);
    this.#lastUsed.delete(id);
    const owner = this.row(id)?.user_id;
    const revoked = statement(this.db, 'DELETE FROM personal_access_tokens WHERE id = ?').run(id).changes > 0;
    if (revoked && owner !== undefined)
      this.bus?.emit('permissions.changed', { userId: owner, reason: 'token_revoked' });
    return revoked;
  }

  /** The user's tokens, newest first, with the last use as known now (written at most once a minute). */
  listOf(userId: number): TokenRecord[] {
    const rows = statement(this.db, 'SELECT * FROM personal_access_tokens WHERE user_id = ? ORDER BY id DESC').all(
      userId,
    ) as TokenRow[];
    return rows.map((row) => {
      const record = this.toRecord(row);
      const used = this.#lastUsed.get(row.id);
      return used === undefined ? record : { ...record, lastUsedAt: iso(used) };
    });
  }

  /** The token `id` when it is `userId`'s (another user's is as good as missing). */
  findOwned(userId: number, id: number): TokenRecord | null {
    const row = this.row(id);
    return row && row.user_id === userId ? this.toRecord(row) : null;
  }

  revokeAllOf(userId: number): number {
    const revoked = statement(this.db, 'DELETE FROM personal_access_tokens WHERE user_id = ?').run(userId).changes;
    if (revoked > 0) this.bus?.emit('permissions.changed', { userId, reason: 'token_revoked' });
    return revoked;
  }

  private row(id: number): TokenRow | undefined {
    return statement(this.db, 'SELECT * FROM personal_access_tokens WHERE id = ?').get(id) as TokenRow | undefined;
  }

  private toRecord(row: TokenRow): TokenRecord {
    const minutes = this.expiryMinutes();
    const bySetting = minutes === null ? null : Date.parse(row.created_at) + minutes * 60_000;
    const own = row.expires_at === null ? null : Date.parse(row.expires_at);
    const effective = [own, bySetting].filter((v): v is number => v !== null);
    return {
      id: row.id,
      userId: row.user_id,
      name: row.name,
      abilities: JSON.parse(row.abilities) as string[],
      expiresAt: effective.length ? iso(Math.min(...effective)) : null,
      lastUsedAt: row.last_used_at,
      createdAt: row.created_at,
    };
  }
}
