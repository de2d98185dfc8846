import fc from 'fast-check';
import { ed25519PublicKey } from '../../src/credentials/ed25519.js';
import { describe, expect, it } from 'vitest';
import { BASE45_ALPHABET, decodeBase45, encodeBase45 } from '../../src/credentials/base45.js';
import {
  encodeClaims,
  generateSigningKey,
  MAX_SIGNED_VALUE_LENGTH,
  privateKeyObject,
  readSignedValue,
  SIGNED_KINDS,
  SIGNED_PREFIX,
  type SignedClaims,
  signValue,
  verifySignedValue,
} from '../../src/credentials/signed-value.js';

const text = (s: string) => new TextEncoder().encode(s);

describe('base45 (RFC 9285)', () => {
  it("encodes and decodes the RFC's examples", () => {
    expect(encodeBase45(text('AB'))).toBe('BB8');
    expect(encodeBase45(text('Hello!!'))).toBe('%69 VD92EX0');
    expect(encodeBase45(text('base-45'))).toBe('UJCLQE7W581');
    expect(new TextDecoder().decode(decodeBase45('QED8WEX0')!)).toBe('ietf!');
  });

  it('refuses what is not strict base45: a group over 16 bits, a stray character, a length of 3n+1', () => {
    expect(decodeBase45('GGW')).toBeNull(); // 65536: the RFC's own example of an invalid group
    expect(decodeBase45(':;')).toBeNull(); // 256 in a 2-character tail
    expect(decodeBase45('BB8a')).toBeNull();
    expect(decodeBase45('BB')).toBeNull(); // 506 in a 2-character tail
    expect(decodeBase45('05')).toEqual(Uint8Array.of(225));
    expect(decodeBase45('B')).toBeNull();
    expect(decodeBase45('bb8')).toBeNull(); // lower case is not in the alphabet
    expect(decodeBase45('BB\u00e9')).toBeNull();
  });

  it('round-trips any bytes, in its alphabet only', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        const encoded = encodeBase45(bytes);
        expect([...encoded].every((c) => BASE45_ALPHABET.includes(c))).toBe(true);
        expect(decodeBase45(encoded)).toEqual(bytes);
      }),
    );
  });
});

const key = generateSigningKey();
const privateKey = privateKeyObject(key.privateKey);
const publicKey = ed25519PublicKey(key.publicKey);
const other = ed25519PublicKey(generateSigningKey().publicKey);

const claimsArb: fc.Arbitrary<SignedClaims> = fc
  .record({
    kind: fc.constantFrom(...SIGNED_KINDS),
    keyId: fc.integer({ min: 1, max: 2 ** 40 }),
    projectId: fc.integer({ min: 1, max: 2 ** 31 }),
    credentialId: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
    attendeeId: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
    attendeeTypeId: fc.option(fc.integer({ min: 1, max: 2 ** 40 }), { nil: null }),
    validFrom: fc.option(fc.integer({ min: 1, max: 2 ** 33 }), { nil: null }),
    span: fc.option(fc.integer({ min: 1, max: 2 ** 30 }), { nil: null }),
  })
  .map(({ span, validFrom, ...c }) => ({
    ...c,
    validFrom: validFrom === null ? null : validFrom * 1000,
    validUntil: span === null ? null : ((validFrom ?? 0) + span) * 1000,
  }));

describe('signed values', () => {
  it('read back exactly the claims signed, verified by their key and no other', () => {
    fc.assert(
      fc.property(claimsArb, (claims) => {
        const value = signValue(claims, privateKey);
        expect(value.startsWith(SIGNED_PREFIX)).toBe(true);
        expect(value.length).toBeLessThanOrEqual(MAX_SIGNED_VALUE_LENGTH);
        const read = readSignedValue(value);
        expect(read?.claims).toEqual(claims);
        expect(verifySignedValue(read!, publicKey)).toBe(true);
        expect(verifySignedValue(read!, other)).toBe(false);
      }),
      { numRuns: 200 },
    );
  });

  it('any one character changed is not a valid value: it is unreadable or its signature fails', () => {
    fc.assert(
      fc.property(claimsArb, fc.nat(), fc.constantFrom(...BASE45_ALPHABET), (claims, at, replacement) => {
        const value = signValue(claims, privateKey);
        const i = SIGNED_PREFIX.length + (at % (value.length - SIGNED_PREFIX.length));
        fc.pre(value[i] !== replacement);
        const tampered = value.slice(0, i) + replacement + value.slice(i + 1);
        const read = readSignedValue(tampered);
        expect(read === null || !verifySignedValue(read, publicKey)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('a typical ticket fits a version 6 QR code at error correction M (154 alphanumeric characters)', () => {
    const value = signValue(
      {
        kind: 'qr',
        keyId: 3,
        projectId: 1,
        credentialId: 120_345,
        attendeeId: 98_765,
        attendeeTypeId: 2,
        validFrom: Date.UTC(2026, 5, 1),
        validUntil: Date.UTC(2026, 5, 4),
      },
      privateKey,
    );
    expect(value.length).toBeLessThanOrEqual(154);
    expect(/^[0-9A-Z $%*+\-./:]+$/.test(value)).toBe(true);
  });

  it('refuses a malformed value before any signature is checked', () => {
    const claims: SignedClaims = {
      kind: 'qr',
      keyId: 1,
      projectId: 1,
      credentialId: 1,
      attendeeId: 1,
      attendeeTypeId: null,
      validFrom: null,
      validUntil: null,
    };
    const payload = encodeClaims(claims);
    const withSignature = (bytes: Uint8Array) =>
      SIGNED_PREFIX + encodeBase45(Uint8Array.from([...bytes, ...new Uint8Array(64)]));
    expect(readSignedValue(withSignature(payload))).not.toBeNull(); // well-formed (its signature is another matter)
    expect(readSignedValue(`GH2:${withSignature(payload).slice(4)}`)).toBeNull(); // another prefix
    expect(readSignedValue(withSignature(Uint8Array.from([2, ...payload.slice(1)])))).toBeNull(); // format 2
    expect(readSignedValue(withSignature(Uint8Array.from([1, 9, ...payload.slice(2)])))).toBeNull(); // no such kind
    expect(readSignedValue(withSignature(Uint8Array.from([...payload, 0])))).toBeNull(); // a byte too many
    expect(readSignedValue(withSignature(payload.slice(0, -1)))).toBeNull(); // a claim missing
    // 1 spelled in two bytes (0x81 0x00): one claim, one spelling.
    expect(readSignedValue(withSignature(Uint8Array.from([1, 2, 0x81, 0x00, ...payload.slice(3)])))).toBeNull();
    expect(readSignedValue(SIGNED_PREFIX + 'A'.repeat(MAX_SIGNED_VALUE_LENGTH))).toBeNull(); // too long to be one
    expect(readSignedValue(`${SIGNED_PREFIX}not base45`)).toBeNull();
    const zeroKey = encodeClaims({ ...claims, keyId: 0 });
    expect(readSignedValue(withSignature(zeroKey))).toBeNull();
  });
});
