import { randomBytes, randomInt } from 'node:crypto';
import type { Clock } from '../clock.js';
import { iso } from '../clock.js';
import type { Config } from '../config/schema.js';
import type { Database } from '../store/database.js';
import { writeTransaction } from '../store/transactions.js';

// The Pusher app id, key and secret (docs/realtime.md) and the encryption master key of
// private-encrypted- channels (docs/realtime.md, "Encrypted channels"): from config (GATEHOUSE_PUSHER_APP_ID, _KEY,
// _SECRET, _ENCRYPTION_MASTER_KEY) where given, else generated on first start and kept in the
// database, so clients configured once keep working across restarts. The secret and the master
// key are never logged or served (a channel's derived key goes only to its authorized subscribers).

export interface PusherCredentials {
  appId: string;
  key: string;
  secret: string;
  /** base64 of 32 bytes (encryption.ts) */
  encryptionMasterKey: string;
}

const generators: Record<keyof PusherCredentials, () => string> = {
  appId: () => String(randomInt(100_000, 1_000_000)),
  key: () => randomBytes(10).toString('hex'),
  secret: () => randomBytes(16).toString('hex'),
  encryptionMasterKey: () => randomBytes(32).toString('base64'),
};

export function resolvePusherCredentials(db: Database, clock: Clock, config: Config['pusher']): PusherCredentials {
  const read = db.prepare('SELECT value FROM generated_credentials WHERE name = ?').pluck();
  const write = db.prepare('INSERT INTO generated_credentials (name, value, created_at) VALUES (?, ?, ?)');
  return writeTransaction(db, () => {
    const resolved = {} as PusherCredentials;
    for (const field of ['appId', 'key', 'secret', 'encryptionMasterKey'] as const) {
      const configured = config[field];
      if (configured) {
        resolved[field] = configured;
        continue;
      }
      const name = `pusher.${field}`;
      let value = read.get(name) as string | undefined;
      if (value === undefined) write.run(name, (value = generators[field]()), iso(clock.now()));
      resolved[field] = value;
    }
    return resolved;
  });
}
