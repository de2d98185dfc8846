import { createPrivateKey, generateKeyPairSync, type KeyObject, sign } from 'node:crypto';
import { decodeBase45, encodeBase45 } from './base45.js';
import type { Ed25519PublicKey } from './ed25519.js';

// A signed credential value (docs/credentials.md): what a door needs to decide a ticket it has
// never seen, signed by its project's key, so an edge cut from its cloud admits what was sold
// after its last sync. Format 1:
//
//   value     = "GH1:" base45(payload || signature)
//   payload   = format (1 byte, 1) kind (1 byte) key_id project_id credential_id attendee_id
//               attendee_type_id valid_from valid_until      (each after kind: an unsigned LEB128)
//   signature = Ed25519(project key, "gatehouse-credential:" || payload)   (64 bytes)
//
// attendee_type_id 0: none; valid_from / valid_until: Unix seconds, 0: open. Ed25519 signs with
// Node's crypto (OpenSSL) and verifies with libsodium where it loads (ed25519.ts); nothing here is
// cryptography of our own, only the bytes it signs.

export const SIGNED_PREFIX = 'GH1:';
export const SIGNED_FORMAT = 1;
/** Signed so a signature over these bytes can mean nothing else. */
const DOMAIN = Buffer.from('gatehouse-credential:', 'ascii');
const SIGNATURE_BYTES = 64;
/** A varint of more than 8 bytes is no id or time of ours (2^56 > Number.MAX_SAFE_INTEGER). */
const MAX_VARINT_BYTES = 8;
/** The longest value read: a payload of 2 + 7 × 8 bytes and a signature, in base45, with the prefix. */
export const MAX_SIGNED_VALUE_LENGTH = SIGNED_PREFIX.length + Math.ceil(((2 + 7 * MAX_VARINT_BYTES + 64) / 2) * 3);

export const SIGNED_KINDS = ['barcode', 'qr', 'rfid', 'nfc'] as const;
export type SignedKind = (typeof SIGNED_KINDS)[number];

/** What a signed value says: its key, and the credential as it was issued. */
export interface SignedClaims {
  kind: SignedKind;
  keyId: number;
  projectId: number;
  credentialId: number;
  attendeeId: number;
  attendeeTypeId: number | null;
  /** Unix milliseconds (whole seconds), or null: from issue. */
  validFrom: number | null;
  /** Unix milliseconds (whole seconds), or null: no end. */
  validUntil: number | null;
}

/** A value read apart: its claims, and the bytes its signature covers. */
export interface SignedValue {
  claims: SignedClaims;
  signed: Uint8Array;
  signature: Uint8Array;
}

export const isSignedValue = (value: string): boolean => value.startsWith(SIGNED_PREFIX);

export function encodeClaims(claims: SignedClaims): Uint8Array {
  const bytes: number[] = [SIGNED_FORMAT, SIGNED_KINDS.indexOf(claims.kind) + 1];
  for (const n of [
    claims.keyId,
    claims.projectId,
    claims.credentialId,
    claims.attendeeId,
    claims.attendeeTypeId ?? 0,
    seconds(claims.validFrom),
    seconds(claims.validUntil),
  ])
    writeVarint(bytes, n);
  return Uint8Array.from(bytes);
}

/** The value a credential with these claims is issued under. */
export function signValue(claims: SignedClaims, privateKey: KeyObject): string {
  const payload = encodeClaims(claims);
  const signature = sign(null, Buffer.concat([DOMAIN, payload]), privateKey);
  return SIGNED_PREFIX + encodeBase45(Buffer.concat([payload, signature]));
}

/** The value read apart, not yet verified; null when it is not a well-formed value of format 1. */
export function readSignedValue(value: string): SignedValue | null {
  if (!isSignedValue(value) || value.length > MAX_SIGNED_VALUE_LENGTH) return null;
  const bytes = decodeBase45(value.slice(SIGNED_PREFIX.length));
  if (!bytes || bytes.length < 2 + 7 + SIGNATURE_BYTES) return null;
  const signed = bytes.subarray(0, bytes.length - SIGNATURE_BYTES);
  if (signed[0] !== SIGNED_FORMAT) return null;
  const kind = SIGNED_KINDS[signed[1]! - 1];
  if (!kind) return null;
  const fields: number[] = [];
  let at = 2;
  for (let i = 0; i < 7; i++) {
    const read = readVarint(signed, at);
    if (!read) return null;
    fields.push(read.value);
    at = read.next;
  }
  if (at !== signed.length) return null;
  const [keyId, projectId, credentialId, attendeeId, typeId, from, until] = fields as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  if (keyId === 0 || projectId === 0 || credentialId === 0 || attendeeId === 0) return null;
  if (from !== 0 && until !== 0 && from >= until) return null;
  return {
    claims: {
      kind,
      keyId,
      projectId,
      credentialId,
      attendeeId,
      attendeeTypeId: typeId === 0 ? null : typeId,
      validFrom: from === 0 ? null : from * 1000,
      validUntil: until === 0 ? null : until * 1000,
    },
    signed,
    signature: bytes.subarray(bytes.length - SIGNATURE_BYTES),
  };
}

/** Whether the value's signature is its key's over its bytes. */
export function verifySignedValue(value: SignedValue, publicKey: Ed25519PublicKey): boolean {
  return publicKey.verify(Buffer.concat([DOMAIN, value.signed]), value.signature);
}

/** A new project key: the public key as 32 raw bytes in base64url (what edges and REST carry),
 * the private key as PKCS#8 DER in base64 (what the cloud keeps). */
export function generateSigningKey(): { publicKey: string; privateKey: string } {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  return {
    publicKey: publicKey.export({ format: 'jwk' }).x!,
    privateKey: privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64'),
  };
}

export const privateKeyObject = (pkcs8: string): KeyObject =>
  createPrivateKey({ key: Buffer.from(pkcs8, 'base64'), format: 'der', type: 'pkcs8' });

function seconds(ms: number | null): number {
  return ms === null ? 0 : Math.floor(ms / 1000);
}

function writeVarint(out: number[], n: number): void {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`not an unsigned safe integer: ${n}`);
  let v = n;
  while (v >= 0x80) {
    out.push((v % 0x80) + 0x80);
    v = Math.floor(v / 0x80);
  }
  out.push(v);
}

function readVarint(bytes: Uint8Array, at: number): { value: number; next: number } | null {
  let value = 0;
  let scale = 1;
  for (let i = 0; i < MAX_VARINT_BYTES && at + i < bytes.length; i++) {
    const b = bytes[at + i]!;
    value += (b & 0x7f) * scale;
    if (b < 0x80) {
      // The shortest encoding only: a trailing zero group would give one claim two spellings.
      if (b === 0 && i > 0) return null;
      return Number.isSafeInteger(value) ? { value, next: at + i + 1 } : null;
    }
    scale *= 0x80;
  }
  return null;
}
