import type { Clock } from '../clock.js';
import { iso } from '../clock.js';
import type { Database } from '../store/database.js';
import type { EventBus } from '../events/bus.js';
import { statement } from '../store/statements.js';
import { writeTransaction } from '../store/transactions.js';

// Settings an administrator changes at run time (PUT /api/v1/settings). Each falls back to
// the config value until set; the store keeps what was set across restarts. Cached in memory
// so reading one on every request costs nothing.

export interface RuntimeSettings {
  token_expiry_minutes: number | null;
}

export class SettingsStore {
  #cache: RuntimeSettings | null = null;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly defaults: RuntimeSettings,
    /** A new token expiry may end tokens at once: connections are checked again (docs/security.md, attack 1). */
    private readonly bus?: EventBus,
  ) {}

  get(): RuntimeSettings {
    if (!this.#cache) {
      const rows = statement(this.db, 'SELECT key, value FROM settings').all() as { key: string; value: string }[];
      const stored = Object.fromEntries(rows.map((r) => [r.key, JSON.parse(r.value) as unknown]));
      this.#cache = { ...this.defaults, ...(stored as Partial<RuntimeSettings>) };
    }
    return this.#cache;
  }

  update(changes: Partial<RuntimeSettings>): RuntimeSettings {
    const upsert = statement(
      this.db,
      'INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at',
    );
    const now = iso(this.clock.now());
    writeTransaction(this.db, () => {
      for (const [key, value] of Object.entries(changes))
        if (value !== undefined) upsert.run(key, JSON.stringify(value), now);
    });
    this.#cache = null;
    if (changes.token_expiry_minutes !== undefined)
      this.bus?.emit('permissions.changed', { userId: null, reason: 'token_expiry_changed' });
    return this.get();
  }
}
