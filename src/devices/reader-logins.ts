import { randomInt, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../clock.js';
import { iso } from '../clock.js';
import { validationError } from '../errors.js';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import type { DeviceTokens, DeviceToken } from './device-tokens.js';
import { isStoreBusy } from '../store/transactions.js';
import type { EventBus } from '../events/bus.js';
import { commit } from '../events/unit-of-work.js';

// Reader login with a one-time password (spec: Authentication item 8; docs/mqtt.md). A reader
// asks for a login by its identifier; the box makes a 6-digit OTP that staff see (REST listing,
// console, a log line) and read out to whoever sets the reader up; verify trades the OTP for the
// reader's MQTT token. An OTP is single use, lives readers.otpTtlMinutes (10), and a login is
// locked after readers.otpMaxAttempts wrong tries (5); asking again supersedes the pending one.

export interface ReaderLoginSettings {
  otpTtlMinutes: number;
  otpMaxAttempts: number;
  tokenTtlDays: number | null;
}

export interface ReaderLoginRow {
  id: number;
  project_id: number;
  reader_id: number;
  otp: string | null;
  status: 'pending' | 'used' | 'locked' | 'superseded' | 'expired';
  attempts: number;
  requested_ip: string | null;
  created_at: string;
  expires_at: string;
  used_at: string | null;
}

export interface LoginReader {
  id: number;
  projectId: number;
  identifier: string;
}

export interface VerifiedLogin {
  login: ReaderLoginRow;
  plainText: string;
  token: DeviceToken;
  /** The reader's live token this one replaced, if it had one:
   * announced, a takeover is possible (docs/security.md, attack 2). */
  replaced: DeviceToken | null;
}

/** Every refusal of an OTP answers this (docs/security.md, attack 12): which of wrong, expired, used,
 * locked or no login at all (or no such reader) it was is for the log, not for whoever asks,
 * since the differences told a stranger which readers exist and what state their logins are in. */
export const OTP_REFUSED = 'The one-time password is invalid, expired or already used: ask for a new reader login.';

/** The uniform 422, carrying the real reason for the log. */
const otpError = (reason: string) => Object.assign(validationError({ otp: [OTP_REFUSED] }), { reason });

export class ReaderLogins {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly tokens: DeviceTokens,
    private readonly settings: ReaderLoginSettings,
    /** Announces requested logins (staff see the OTP live) and tokens taken over. */
    private readonly bus: EventBus,
  ) {}

  /** A new pending login for the reader, superseding any pending one; answers it with its OTP. */
  request(reader: LoginReader, ip: string | null, now = this.clock.now()): ReaderLoginRow {
    return commit(this.db, this.bus, (work) => {
      statement(
        this.db,
        "UPDATE reader_logins SET status = 'superseded', otp = NULL WHERE reader_id = ? AND status = 'pending'",
      ).run(reader.id);
      const otp = String(randomInt(0, 1_000_000)).padStart(6, '0');
      const id = statement(
        this.db,
        'INSERT INTO reader_logins (project_id, reader_id, otp, requested_ip, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)',
      ).run(
        reader.projectId,
        reader.id,
        otp,
        ip,
        iso(now),
        iso(now + this.settings.otpTtlMinutes * 60_000),
      ).lastInsertRowid;
      const login = this.#row(Number(id))!;
      work.emit('reader.login_requested', {
        projectId: reader.projectId,
        readerId: reader.id,
        identifier: reader.identifier,
        expiresAt: login.expires_at,
      });
      return login;
    });
  }

  /** Pending, unexpired logins of a project, newest first (what staff read the OTPs from). */
  pending(projectId: number): ReaderLoginRow[] {
    const now = iso(this.clock.now());
    try {
      this.#expire(now);
    } catch (err) {
      // Bookkeeping: a store busy past busy_timeout must not fail this read (the query below
      // leaves expired logins out either way); the next listing marks them.
      if (!isStoreBusy(err)) throw err;
    }
    return statement(
      this.db,
      "SELECT * FROM reader_logins WHERE project_id = ? AND status = 'pending' AND expires_at > ? ORDER BY id DESC",
    ).all(projectId, now) as ReaderLoginRow[];
  }

  /**
   * Trades an OTP for a reader token. `readers` are the readers with this identifier (the
   * identifier is unique per project only); the OTP says which one. Wrong, expired, used or
   * locked OTPs (and no reader at all: `readers` empty) are the same 422 on `otp`, its `reason`
   * saying which for the log; a wrong one counts an attempt.
   */
  verify(readers: readonly LoginReader[], otp: string, ip: string | null): VerifiedLogin {
    const now = this.clock.now();
    // The transaction returns refusals instead of throwing them: a throw would roll back the
    // attempt counted for a wrong OTP (and the expiry marked for an old one).
    // Immediate: the attempt count and the OTP's state read here are what gets written back.
    const outcome = commit(this.db, this.bus, (work): VerifiedLogin | string => {
      const logins = readers.flatMap((r) => this.#latest(r.id));
      const given = Buffer.from(otp.padEnd(6, ' ').slice(0, 6));
      const matching = logins.find(
        (l) => l.otp !== null && l.otp.length === 6 && otp.length === 6 && timingSafeEqual(Buffer.from(l.otp), given),
      );
      if (!matching) {
        const pending = logins.filter((l) => l.status === 'pending');
        if (pending.length === 0) {
          if (logins.some((l) => l.status === 'locked'))
            return 'Too many wrong one-time passwords: request a new reader login.';
          if (logins.some((l) => l.status === 'expired'))
            return 'The one-time password has expired: request a new reader login.';
          if (logins.some((l) => l.status === 'used'))
            return 'The one-time password has already been used: request a new reader login.';
          return 'No reader login is pending for this reader: request one first.';
        }
        for (const login of pending) this.#wrongAttempt(login);
        return 'The one-time password is invalid.';
      }
      if (Date.parse(matching.expires_at) <= now) {
        statement(this.db, "UPDATE reader_logins SET status = 'expired', otp = NULL WHERE id = ?").run(matching.id);
        return 'The one-time password has expired: request a new reader login.';
      }
      // Used: the OTP is blanked; trying it again finds the used login and says so.
      statement(this.db, "UPDATE reader_logins SET status = 'used', otp = NULL, used_at = ? WHERE id = ?").run(
        iso(now),
        matching.id,
      );
      const previous = this.tokens.current('reader', matching.reader_id);
      const replaced = previous && this.tokens.isLive(previous.id) ? previous : null;
      // The earlier token's connections are closed; a live one replaced is announced (staff must see a takeover).
      const { plainText, token } = this.tokens.issue(
        'reader',
        matching.reader_id,
        matching.project_id,
        this.settings.tokenTtlDays,
        work,
      );
      const reader = readers.find((r) => r.id === matching.reader_id)!;
      if (replaced) {
        work.emit('reader.token_replaced', {
          projectId: matching.project_id,
          readerId: matching.reader_id,
          identifier: reader.identifier,
          replacedTokenCreatedAt: replaced.createdAt,
          ip,
          timestamp: iso(now),
        });
      }
      return { login: { ...matching, status: 'used', otp: null, used_at: iso(now) }, plainText, token, replaced };
    });
    if (typeof outcome === 'string') throw otpError(outcome);
    return outcome;
  }

  #wrongAttempt(login: ReaderLoginRow): void {
    const attempts = login.attempts + 1;
    if (attempts >= this.settings.otpMaxAttempts)
      statement(this.db, "UPDATE reader_logins SET attempts = ?, status = 'locked', otp = NULL WHERE id = ?").run(
        attempts,
        login.id,
      );
    else statement(this.db, 'UPDATE reader_logins SET attempts = ? WHERE id = ?').run(attempts, login.id);
  }

  /** The reader's most recent login (the one an OTP can still refer to). */
  #latest(readerId: number): ReaderLoginRow[] {
    const row = statement(
      this.db,
      "SELECT * FROM reader_logins WHERE reader_id = ? AND status != 'superseded' ORDER BY id DESC LIMIT 1",
    ).get(readerId) as ReaderLoginRow | undefined;
    return row ? [row] : [];
  }

  #expire(now: string): void {
    statement(
      this.db,
      "UPDATE reader_logins SET status = 'expired', otp = NULL WHERE status = 'pending' AND expires_at <= ?",
    ).run(now);
  }

  #row(id: number): ReaderLoginRow | undefined {
    return statement(this.db, 'SELECT * FROM reader_logins WHERE id = ?').get(id) as ReaderLoginRow | undefined;
  }
}
