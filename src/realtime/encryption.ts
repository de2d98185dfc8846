import { createHash, randomBytes } from 'node:crypto';
import nacl from 'tweetnacl';
import { parseJson } from '../json-depth.js';
import { channelKind } from './protocol.js';

// End-to-end encrypted channels (`private-encrypted-`;
// https://pusher.com/docs/channels/using_channels/encrypted-channels/; docs/realtime.md, "Encrypted channels"). Each
// channel has its own key, derived from the app's 32-byte master key as the official server libraries derive it
// (pusher-http-node `channelSharedSecret`: SHA-256 over the channel name's bytes followed by the master key's).
// /broadcasting/auth hands that key to an authorized subscriber
// as `shared_secret` (base64); an event's data is then the JSON
// `{nonce, ciphertext}` (base64) of NaCl secretbox over the event's JSON, which pusher-js opens.
// The WebSocket server never decrypts: it relays what publishers encrypted; only the events the
// appliance itself publishes are sealed here (broadcaster.ts).

/** secretbox key and nonce sizes (XSalsa20-Poly1305). */
export const MASTER_KEY_BYTES = nacl.secretbox.keyLength;
const NONCE_BYTES = nacl.secretbox.nonceLength;
/** Derived keys kept; channel names come from clients (auth requests), so the memo is bounded. */
const MEMO_LIMIT = 4096;

export const isEncryptedChannel = (name: string) => channelKind(name) === 'encrypted';

/** The master key as configured: base64 of exactly 32 bytes; null when it is not. */
export function decodeMasterKey(base64: string): Buffer | null {
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(base64) || base64.length % 4 !== 0) return null;
  const bytes = Buffer.from(base64, 'base64');
  return bytes.length === MASTER_KEY_BYTES ? bytes : null;
}

export class ChannelCipher {
  readonly #masterKey: Buffer;
  readonly #secrets = new Map<string, Buffer>();

  constructor(masterKeyBase64: string) {
    const key = decodeMasterKey(masterKeyBase64);
    // Config validation (schema.ts) and generation (credentials.ts) make this unreachable.
    if (!key) throw new Error('pusher.encryptionMasterKey must be base64 of exactly 32 bytes');
    this.#masterKey = key;
  }

  /** The channel's key: SHA-256(channel name bytes || master key bytes). */
  sharedSecret(channel: string): Buffer {
    let secret = this.#secrets.get(channel);
    if (!secret) {
      secret = createHash('sha256')
        .update(Buffer.concat([Buffer.from(channel), this.#masterKey]))
        .digest();
      if (this.#secrets.size >= MEMO_LIMIT) this.#secrets.clear();
      this.#secrets.set(channel, secret);
    }
    return secret;
  }

  /** The event data for an encrypted channel: `{nonce, ciphertext}` over `json` (the event's JSON text). */
  seal(channel: string, json: string): string {
    const nonce = randomBytes(NONCE_BYTES);
    const box = nacl.secretbox(Buffer.from(json, 'utf8'), nonce, this.sharedSecret(channel));
    return JSON.stringify({ nonce: nonce.toString('base64'), ciphertext: Buffer.from(box).toString('base64') });
  }
}

/** Whether published data has the shape of a sealed event, as the server libraries send it:
 * `{nonce, ciphertext}` (as JSON text, or the object) with a 24-byte nonce and a ciphertext at
 * least as long as the authenticator. Anything else would reach subscribers in clear, and
 * pusher-js would drop it. */
export function looksSealed(data: unknown): boolean {
  let parsed: unknown = data;
  if (typeof data === 'string') {
    try {
      parsed = parseJson(data);
    } catch {
      return false;
    }
  }
  if (typeof parsed !== 'object' || parsed === null) return false;
  const { nonce, ciphertext } = parsed as { nonce?: unknown; ciphertext?: unknown };
  if (typeof nonce !== 'string' || typeof ciphertext !== 'string') return false;
  return (
    Buffer.from(nonce, 'base64').length === NONCE_BYTES &&
    Buffer.from(ciphertext, 'base64').length >= nacl.secretbox.overheadLength
  );
}
