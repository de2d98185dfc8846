import { createPrivateKey, createPublicKey, sign } from 'node:crypto';
import { ed25519PublicKey } from '../../src/credentials/ed25519.js';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  encodeClaims,
  readSignedValue,
  type SignedClaims,
  SIGNED_KINDS,
  signValue,
  verifySignedValue,
} from '../../src/credentials/signed-value.js';

// docs/credentials.md's worked example, recomputed from the page's own text: a third party
// implements the format from that page, so the page and the code must say the same bytes.

const doc = readFileSync(new URL('../../docs/credentials.md', import.meta.url), 'utf8');
const example = doc.slice(doc.indexOf('## Worked example'), doc.indexOf('## Issuing a signed credential'));

/** The code span of the table row whose first cell begins with `label`. */
function cell(label: string): string {
  const row = example.split('\n').find((line) => line.startsWith(`| ${label}`));
  if (!row) throw new Error(`no row "${label}" in the worked example`);
  const spans = [...row.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
  return spans.at(-1)!;
}

/** A claim row: its value (second cell) and its bytes (third cell). */
function claim(name: string): { value: string; hex: string } {
  const row = example.split('\n').find((line) => line.startsWith(`| ${name} |`));
  if (!row) throw new Error(`no claim "${name}" in the worked example`);
  const [, , value, hex] = row.split('|').map((c) => c.trim());
  return { value: value!, hex: hex!.replaceAll('`', '') };
}

const seconds = (text: string) => Number(/\((\d+)\)/.exec(text)![1]) * 1000;

describe('the worked example of docs/credentials.md', () => {
  const seed = cell('private key seed');
  const pkcs8 = cell('private key, PKCS#8');
  const privateKey = createPrivateKey({ key: Buffer.from(pkcs8, 'hex'), format: 'der', type: 'pkcs8' });
  const claims: SignedClaims = {
    kind: claim('kind').value as SignedClaims['kind'],
    keyId: Number(claim('key_id').value),
    projectId: Number(claim('project_id').value),
    credentialId: Number(claim('credential_id').value),
    attendeeId: Number(claim('attendee_id').value),
    attendeeTypeId: Number(claim('attendee_type_id').value),
    validFrom: seconds(claim('valid_from').value),
    validUntil: seconds(claim('valid_until').value),
  };
  const payload = Buffer.from(encodeClaims(claims));
  const value = signValue(claims, privateKey);

  it('derives the PKCS#8 key and the public key from the seed', () => {
    expect(pkcs8).toBe(`302e020100300506032b657004220420${seed}`);
    const jwk = createPublicKey(privateKey).export({ format: 'jwk' });
    expect(cell('public key, as REST lists it')).toBe(jwk.x);
    expect(cell('public key (hex)')).toBe(Buffer.from(jwk.x!, 'base64url').toString('hex'));
  });

  it('states the claims as their dates say and spells each field as the code does', () => {
    expect(claims.validFrom).toBe(Date.parse(claim('valid_from').value.split(' ')[0]!));
    expect(claims.validUntil).toBe(Date.parse(claim('valid_until').value.split(' ')[0]!));
    expect(Number.parseInt(claim('kind').hex, 16)).toBe(SIGNED_KINDS.indexOf(claims.kind) + 1);
    const fields = ['format', 'kind', 'key_id', 'project_id', 'credential_id', 'attendee_id', 'attendee_type_id'];
    const spelled = [...fields, 'valid_from', 'valid_until'].map((f) => claim(f).hex).join('');
    expect(spelled).toBe(payload.toString('hex'));
  });

  it('gives the payload, the signed bytes, the signature and the value the code gives', () => {
    expect(cell('payload')).toBe(payload.toString('hex'));
    expect(example).toContain(`payload (hex, ${payload.length} bytes)`);
    const signed = Buffer.concat([Buffer.from('gatehouse-credential:', 'ascii'), payload]);
    expect(cell('signed bytes')).toBe(signed.toString('hex'));
    const signature = sign(null, signed, privateKey);
    expect(cell('signature')).toBe(signature.toString('hex'));
    expect(cell('value')).toBe(value);
    expect(example).toContain(`value (${value.length} characters`);
    const base64url = `GH1:${Buffer.concat([payload, signature]).toString('base64url')}`;
    expect(example).toContain(`| the same bytes in base64url, with the prefix | ${base64url.length} characters |`);
  });

  it('reads back to the claims and verifies with the public key as REST lists it', () => {
    const read = readSignedValue(cell('value'))!;
    expect(read.claims).toEqual(claims);
    expect(verifySignedValue(read, ed25519PublicKey(cell('public key, as REST lists it')))).toBe(true);
  });

  it('states the sizes the QR argument rests on', () => {
    const read = readSignedValue(value)!;
    const bytes = Buffer.concat([read.signed, read.signature]);
    const base64url = `GH1:${bytes.toString('base64url')}`;
    const prose = doc.replace(/\s+/g, ' ');
    expect(prose).toContain(
      `(the worked example below: ${bytes.length} bytes) is ${value.length} characters in base45`,
    );
    expect(prose).toContain(`in base64url it is ${base64url.length} characters`);
  });
});
