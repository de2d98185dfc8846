import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { AppError } from '../errors.js';

// Failed logins per account (docs/security.md, attack 11), apart from the per-address budget of the
// standard rate class: a client guessing at one account is stopped after
// auth.loginFailuresPerAccount failures in auth.loginFailureWindowSeconds, for that account
// only and from every address, while its neighbours keep logging in from the same address.
//
// - An attempt takes a point before the password is checked, so parallel guesses cannot all
//   pass the check before any failure is counted; a successful login (token issued, session
//   started) forgets the account's failures, as Laravel's ThrottlesLogins does. A correct
//   password that still gets a 401 (no device_name) forgets nothing: that would tell a guesser
//   the password was right.
// - While an account is locked even its correct password is refused (429): the lock cannot
//   tell a right guess from a wrong one, or it would be an oracle.
// - The key is the email as given (trimmed, lower-cased), whether or not an account has it, so
//   the lock says nothing about which accounts exist.

export interface LoginThrottleSettings {
  /** Failed logins per account per window; 0 = no per-account limit. */
  failuresPerAccount: number;
  windowSeconds: number;
}

export class LoginThrottle {
  readonly #limiter: RateLimiterMemory | null;

  constructor(private readonly settings: LoginThrottleSettings) {
    this.#limiter =
      settings.failuresPerAccount > 0
        ? new RateLimiterMemory({
            points: settings.failuresPerAccount,
            duration: settings.windowSeconds,
            keyPrefix: 'login-account',
          })
        : null;
  }

  /** Takes one attempt for the account; 429 when it is locked. Call succeeded() when the login succeeds. */
  async attempt(email: string | undefined): Promise<void> {
    const key = keyOf(email);
    if (!this.#limiter || key === null) return;
    try {
      await this.#limiter.consume(key);
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      const seconds = Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
      throw new AppError(
        'login_locked',
        { seconds },
        {
          headers: {
            'Retry-After': String(seconds),
            'X-RateLimit-Limit': String(this.settings.failuresPerAccount),
            'X-RateLimit-Remaining': '0',
            'X-RateLimit-Reset': String(Math.ceil((Date.now() + rejection.msBeforeNext) / 1000)),
          },
          body: { retry_after: seconds },
        },
      );
    }
  }

  /** The login succeeded: the account's failures are forgotten. */
  async succeeded(email: string | undefined): Promise<void> {
    const key = keyOf(email);
    if (this.#limiter && key !== null) await this.#limiter.delete(key);
  }
}

function keyOf(email: string | undefined): string | null {
  const key = email?.trim().toLowerCase();
  return key ? key : null;
}
