import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../clock.js';
import { iso } from '../clock.js';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import { writeTransaction } from '../store/transactions.js';
import type { EventBus } from '../events/bus.js';
import { commit, type Work } from '../events/unit-of-work.js';

// MQTT credentials of readers and gateways (docs/mqtt.md): `<kind>:<id>:<secret>` shown once,
// only the SHA-256 of the secret kept, compared in constant time. The kind in the token says
// which table the device is in, so one password field serves readers, gateways and staff
// tokens (`<id>|<secret>`, auth/tokens.ts). A device has at most one live token: issuing a new
// one replaces the old, revoking deletes it, and the broker disconnects whoever used it.

export type DeviceKind = 'reader' | 'gateway';

export interface DeviceToken {
  id: number;
  kind: DeviceKind;
  deviceId: number;
  projectId: number;
  createdAt: string;
  expiresAt: string | null;
}

interface Row {
  id: number;
  kind: DeviceKind;
  device_id: number;
  project_id: number;
  token_hash: Buffer;
  created_at: string;
  expires_at: string | null;
}

const sha256 = (value: string) => createHash('sha256').update(value).digest();
const SHAPE = /^(reader|gateway):(\d{1,15}):([A-Za-z0-9_-]{20,100})$/;

export class DeviceTokens {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    /** Announces revoked and replaced tokens: their connections are closed (mqtt/service.ts). */
    private readonly bus: EventBus,
  ) {}

  /**
   * A new token for the device; any earlier one stops working, and its connections are closed
   * once this commits. Inside another unit of work, pass it: the announcement waits for that
   * one's commit.
   */
  issue(
    kind: DeviceKind,
    deviceId: number,
    projectId: number,
    ttlDays: number | null,
    outer?: Work,
  ): { plainText: string; token: DeviceToken } {
    const secret = randomBytes(30).toString('base64url');
    const now = this.clock.now();
    const expiresAt = ttlDays === null ? null : iso(now + ttlDays * 86_400_000);
    const id = this.#unit(outer, (work) => {
      this.#revoke(kind, deviceId, work);
      return Number(
        statement(
          this.db,
          'INSERT INTO device_tokens (kind, device_id, project_id, token_hash, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)',
        ).run(kind, deviceId, projectId, sha256(secret), iso(now), expiresAt).lastInsertRowid,
      );
    });
    return { plainText: `${kind}:${id}:${secret}`, token: this.#record(this.#row(id)!) };
  }

  /** The token a password names, or null when malformed, unknown, replaced, revoked or expired. */
  verify(plainText: string): DeviceToken | null {
    const match = SHAPE.exec(plainText);
    if (!match) return null;
    const row = this.#row(Number(match[2]));
    if (!row || row.kind !== match[1]) return null;
    const given = sha256(match[3]!);
    if (row.token_hash.length !== given.length || !timingSafeEqual(row.token_hash, given)) return null;
    if (row.expires_at !== null && Date.parse(row.expires_at) <= this.clock.now()) return null;
    return this.#record(row);
  }

  /** Still usable: not replaced, revoked or expired. */
  isLive(id: number): boolean {
    const row = this.#row(id);
    return !!row && (row.expires_at === null || Date.parse(row.expires_at) > this.clock.now());
  }

  /** The device's live token, without its secret. */
  current(kind: DeviceKind, deviceId: number): DeviceToken | null {
    const row = statement(
      this.db,
      'SELECT * FROM device_tokens WHERE kind = ? AND device_id = ? ORDER BY id DESC LIMIT 1',
    ).get(kind, deviceId) as Row | undefined;
    return row ? this.#record(row) : null;
  }

  /** Deletes the device's tokens and closes their connections; answers how many there were. */
  revoke(kind: DeviceKind, deviceId: number): number {
    return commit(this.db, this.bus, (work) => this.#revoke(kind, deviceId, work));
  }

  #revoke(kind: DeviceKind, deviceId: number, work: Work): number {
    work.emit('device.credentials_revoked', { kind, deviceId });
    return deleteDeviceTokens(this.db, kind, deviceId);
  }

  #unit<T>(outer: Work | undefined, fn: (work: Work) => T): T {
    return outer ? writeTransaction(this.db, () => fn(outer)) : commit(this.db, this.bus, fn);
  }

  #row(id: number): Row | undefined {
    return statement(this.db, 'SELECT * FROM device_tokens WHERE id = ?').get(id) as Row | undefined;
  }

  #record(row: Row): DeviceToken {
    return {
      id: row.id,
      kind: row.kind,
      deviceId: row.device_id,
      projectId: row.project_id,
      createdAt: row.created_at,
      expiresAt: row.expires_at,
    };
  }
}

/** Deletes a device's tokens in the caller's transaction; answers how many there were. Also for a reader deleted
 * (venue/readers.ts), whose id SQLite may give the next reader made. */
export function deleteDeviceTokens(db: Database, kind: DeviceKind, deviceId: number): number {
  return statement(db, 'DELETE FROM device_tokens WHERE kind = ? AND device_id = ?').run(kind, deviceId).changes;
}
