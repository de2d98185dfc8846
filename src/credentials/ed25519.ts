import { createPublicKey, verify } from 'node:crypto';
import { createRequire } from 'node:module';

// Ed25519 verification of signed credential values (docs/credentials.md: the verifier). libsodium
// (the sodium-native package, a prebuilt addon) verifies about twice as fast as Node's OpenSSL on
// the boxes measured (docs/performance.md), and verification is the one cost of a ticket an edge
// has never seen. Where no prebuilt libsodium loads (a platform sodium-native does not ship, such
// as 32-bit ARM), Node's crypto verifies instead: the same signatures verify under both, which
// test/credentials/ed25519.test.ts checks over random and tampered values. Signing stays Node's:
// it happens once per credential, on the cloud.

/** A project's public key, ready to verify with. */
export interface Ed25519PublicKey {
  readonly backend: Ed25519Backend;
  verify(message: Uint8Array, signature: Uint8Array): boolean;
}

export type Ed25519Backend = 'libsodium' | 'openssl';

interface Sodium {
  crypto_sign_PUBLICKEYBYTES: number;
  crypto_sign_BYTES: number;
  crypto_sign_verify_detached(signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean;
}

let sodium: Sodium | null | undefined;

/** libsodium, or null where it does not load here; loaded once, at the first key. */
function libsodium(): Sodium | null {
  if (sodium === undefined) {
    try {
      sodium = createRequire(import.meta.url)('sodium-native') as Sodium;
      if (typeof sodium.crypto_sign_verify_detached !== 'function' || sodium.crypto_sign_PUBLICKEYBYTES !== 32)
        sodium = null;
    } catch {
      sodium = null;
    }
  }
  return sodium;
}

/** The backend keys are made with on this machine. */
export const ed25519Backend = (): Ed25519Backend => (libsodium() ? 'libsodium' : 'openssl');

/** A raw 32-byte public key in base64url (what edges and REST carry); throws when it is not one. */
export function ed25519PublicKey(raw: string, backend: Ed25519Backend = ed25519Backend()): Ed25519PublicKey {
  const bytes = Buffer.from(raw, 'base64url');
  if (bytes.length !== 32 || bytes.toString('base64url') !== raw) throw new TypeError('not a raw Ed25519 public key');
  const lib = backend === 'libsodium' ? libsodium() : null;
  if (backend === 'libsodium' && !lib) throw new Error('libsodium is not available here');
  if (lib) {
    return {
      backend,
      verify: (message, signature) =>
        signature.length === lib.crypto_sign_BYTES && lib.crypto_sign_verify_detached(signature, message, bytes),
    };
  }
  const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw }, format: 'jwk' });
  return { backend: 'openssl', verify: (message, signature) => verify(null, message, key, signature) };
}
