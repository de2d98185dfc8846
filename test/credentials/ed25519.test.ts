import { generateKeyPairSync, sign } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ed25519Backend, ed25519PublicKey } from '../../src/credentials/ed25519.js';

// The two verifiers of credentials/ed25519.ts: libsodium (sodium-native), used wherever it loads,
// and Node's OpenSSL where it does not. A box on either must admit and refuse the same values.

const pair = () => {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  return { raw: publicKey.export({ format: 'jwk' }).x!, privateKey };
};
const keys = [pair(), pair()];

describe('Ed25519 verifiers', () => {
  it('libsodium loads on this machine and is the one keys are made with', () => {
    // sodium-native ships a prebuilt addon for linux-x64 (this machine and the Docker image).
    expect(ed25519Backend()).toBe('libsodium');
    expect(ed25519PublicKey(keys[0]!.raw).backend).toBe('libsodium');
    expect(ed25519PublicKey(keys[0]!.raw, 'openssl').backend).toBe('openssl');
  });

  it('both verify every good signature and refuse the same tampered ones', () => {
    const sodium = keys.map((k) => ed25519PublicKey(k.raw, 'libsodium'));
    const openssl = keys.map((k) => ed25519PublicKey(k.raw, 'openssl'));
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 0, maxLength: 120 }),
        fc.nat(63),
        fc.integer({ min: 1, max: 255 }),
        fc.nat(200),
        (message, at, flip, messageAt) => {
          const signature = sign(null, message, keys[0]!.privateKey);
          const good = [sodium[0]!.verify(message, signature), openssl[0]!.verify(message, signature)];
          expect(good).toEqual([true, true]);
          // Another key: refused by both.
          expect([sodium[1]!.verify(message, signature), openssl[1]!.verify(message, signature)]).toEqual([
            false,
            false,
          ]);
          // One byte of the signature changed.
          const bad = Buffer.from(signature);
          bad[at] = bad[at]! ^ flip;
          const refused = [sodium[0]!.verify(message, bad), openssl[0]!.verify(message, bad)];
          expect(refused).toEqual([false, false]);
          // One byte of the message changed.
          if (message.length > 0) {
            const changed = Buffer.from(message);
            const i = messageAt % message.length;
            changed[i] = changed[i]! ^ flip;
            expect([sodium[0]!.verify(changed, signature), openssl[0]!.verify(changed, signature)]).toEqual([
              false,
              false,
            ]);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('a signature of the wrong length is refused by both, never thrown on', () => {
    const message = Buffer.from('gatehouse');
    const signature = sign(null, message, keys[0]!.privateKey);
    for (const backend of ['libsodium', 'openssl'] as const) {
      const key = ed25519PublicKey(keys[0]!.raw, backend);
      expect(key.verify(message, signature.subarray(0, 63))).toBe(false);
      expect(key.verify(message, Buffer.concat([signature, Buffer.from([0])]))).toBe(false);
      expect(key.verify(message, new Uint8Array(0))).toBe(false);
    }
  });

  it('a public key that is not 32 bytes of base64url is refused at once', () => {
    const raw = keys[0]!.raw;
    for (const bad of ['', raw.slice(1), `${raw}AA`, `${raw.slice(0, -1)}+`, Buffer.alloc(32).toString('base64')])
      for (const backend of ['libsodium', 'openssl'] as const)
        expect(() => ed25519PublicKey(bad, backend), `${backend} ${bad}`).toThrow();
  });
});
