import fc from 'fast-check';
import { beforeEach, describe, expect, it } from 'vitest';
import { AccessEngine, type Decision } from '../../src/access/engine.js';
import { Occupancy } from '../../src/access/occupancy.js';
import { SignedValues } from '../../src/access/signed-values.js';
import { VenueIndex } from '../../src/access/venue-index.js';
import {
  generateSigningKey,
  privateKeyObject,
  type SignedClaims,
  signValue,
} from '../../src/credentials/signed-value.js';

// The engine deciding a signed value it does not hold (docs/credentials.md: deciding a signed
// value offline), from plain data as test/access/engine-plain.test.ts does: the key and the
// signature checked, then the claims decided as a stored credential of that holder would be.

const P = 1;
const OTHER = 2;
const NOW = Date.parse('2026-06-03T10:00:00Z');
const keyA = generateSigningKey();
const keyB = generateSigningKey();
const keyOther = generateSigningKey();
const stranger = generateSigningKey();

let index: VenueIndex;
let engine: AccessEngine;
let clockMs: number;

const claims = (over: Partial<SignedClaims> = {}): SignedClaims => ({
  kind: 'qr',
  keyId: 1,
  projectId: P,
  credentialId: 500,
  attendeeId: 700,
  attendeeTypeId: 1,
  validFrom: null,
  validUntil: null,
  ...over,
});
const sign = (over: Partial<SignedClaims> = {}, key = keyA) =>
  signValue(claims(over), privateKeyObject(key.privateKey));
const decide = (value: string, accessPointId = 20, readerId: number | null = 1, at = NOW): Decision =>
  engine.decide({ projectId: P, accessPointId, credentialValue: value, at, readerId });
const outcome = (d: Decision) => (d.granted ? `granted ${d.movement}` : `${d.reason}/${d.detail}`);

function venue(rate = 20): void {
  index = new VenueIndex(null as never);
  index.timezones.set(P, 'UTC');
  index.putZone({ id: 10, project_id: P, capacity: 100, requires_ticket: 1, anti_passback: 1 });
  index.putZone({ id: 11, project_id: P, capacity: null, requires_ticket: 1, anti_passback: 0 });
  index.putAccessPoint({ id: 20, project_id: P, access_zone_id: 10, direction: 'in', is_active: 1 });
  index.putAccessPoint({ id: 21, project_id: P, access_zone_id: 11, direction: 'in', is_active: 1 });
  index.typeZones.set(1, new Set([10])); // type 1: the hall only
  index.keys.put({ id: 1, project_id: P, public_key: keyA.publicKey, status: 'verifying' });
  index.keys.put({ id: 2, project_id: P, public_key: keyB.publicKey, status: 'signing' });
  index.keys.put({ id: 3, project_id: OTHER, public_key: keyOther.publicKey, status: 'signing' });
  clockMs = 0;
  engine = new AccessEngine(
    index,
    new Occupancy(),
    new SignedValues(index.keys, { verificationsPerSecond: rate, now: () => clockMs }),
  );
}

describe('deciding a signed value the box does not hold', () => {
  beforeEach(() => venue());

  it('grants from the claims, marked offline_verified, naming the claimed credential and holder', () => {
    const d = decide(sign());
    expect(outcome(d)).toBe('granted in');
    expect(d.offlineVerified).toBe(true);
    expect(d.credential?.id).toBe(500);
    expect(d.attendee?.id).toBe(700);
  });

  it('grants tokens of every key not retired (rotation: the old key verifies, the new one signs)', () => {
    expect(outcome(decide(sign({ keyId: 1, attendeeId: 1 }, keyA)))).toBe('granted in');
    expect(outcome(decide(sign({ keyId: 2, attendeeId: 2 }, keyB)))).toBe('granted in');
  });

  it('refuses a forged value (right format, wrong key) as signature_invalid', () => {
    expect(outcome(decide(sign({}, stranger)))).toBe('invalid_credential/signature_invalid');
  });

  it("refuses another project's token and an unknown key id as unknown_key", () => {
    expect(outcome(decide(sign({ keyId: 3, projectId: OTHER }, keyOther)))).toBe('invalid_credential/unknown_key');
    expect(outcome(decide(sign({ keyId: 3 }, keyOther)))).toBe('invalid_credential/unknown_key');
    expect(outcome(decide(sign({ keyId: 99 })))).toBe('invalid_credential/unknown_key');
  });

  it('refuses a retired key as key_retired, read at each scan (never cached)', () => {
    const value = sign();
    expect(outcome(decide(value))).toBe('granted in');
    index.keys.put({ id: 1, project_id: P, public_key: keyA.publicKey, status: 'retired' });
    expect(outcome(decide(value, 21))).toBe('invalid_credential/key_retired');
  });

  it('refuses outside validFrom / validUntil as expired', () => {
    expect(outcome(decide(sign({ validUntil: NOW - 60_000 })))).toBe('expired/null');
    expect(outcome(decide(sign({ validFrom: NOW + 60_000 })))).toBe('expired/null');
    expect(outcome(decide(sign({ validFrom: NOW - 60_000, validUntil: NOW + 60_000 })))).toBe('granted in');
  });

  it('decides the claims as a stored credential: type, anti-passback by attendee id, blocklist', () => {
    expect(outcome(decide(sign({ attendeeTypeId: 2 })))).toBe('not_authorized/type_not_permitted');
    expect(outcome(decide(sign({ attendeeTypeId: null })))).toBe('not_authorized/type_not_permitted');
    expect(outcome(decide(sign({ credentialId: 501 })))).toBe('granted in');
    // another token of the same holder: already inside (occupancy is keyed by attendee id)
    expect(outcome(decide(sign({ credentialId: 502 })))).toBe('not_authorized/already_inside');
    index.putBlock({ id: 1, attendee_id: 800, credential_id: null, until: null });
    expect(outcome(decide(sign({ attendeeId: 800, credentialId: 503 })))).toBe('blocklisted/null');
    index.putBlock({ id: 2, attendee_id: null, credential_id: 504, until: null });
    expect(outcome(decide(sign({ attendeeId: 801, credentialId: 504 })))).toBe('blocklisted/null');
  });

  it('lets the stored row win: a revocation learned denies the token; a held holder decides', () => {
    const value = sign();
    index.putCredential({
      id: 500,
      project_id: P,
      attendee_id: 700,
      value,
      status: 'revoked',
      valid_from: null,
      valid_until: null,
      revoked_at: '2026-06-01T00:00:00Z',
    });
    const d = decide(value);
    expect(outcome(d)).toBe('invalid_credential/null');
    expect(d.offlineVerified).toBe(false);
    index.putAttendee({
      id: 900,
      project_id: P,
      attendee_type_id: 1,
      first_name: 'A',
      last_name: 'B',
      status: 'cancelled',
    });
    expect(outcome(decide(sign({ attendeeId: 900, credentialId: 901 })))).toBe('invalid_credential/null');
  });

  it('verifies a value once: a flood of the same forged QR costs one signature check', () => {
    const forged = sign({}, stranger);
    for (let i = 0; i < 100; i++) expect(outcome(decide(forged))).toBe('invalid_credential/signature_invalid');
    expect(engine.signed.stats.refused).toBe(1);
    const good = sign({ credentialId: 600, attendeeId: 600 });
    decide(good);
    decide(good, 21);
    expect(engine.signed.stats.verified).toBe(1);
  });

  it('never verifies a value the index holds', () => {
    const value = sign();
    index.putAttendee({
      id: 700,
      project_id: P,
      attendee_type_id: 1,
      first_name: 'A',
      last_name: 'B',
      status: 'active',
    });
    index.putCredential({
      id: 500,
      project_id: P,
      attendee_id: 700,
      value,
      status: 'active',
      valid_from: null,
      valid_until: null,
      revoked_at: null,
    });
    expect(outcome(decide(value))).toBe('granted in');
    expect(engine.signed.stats).toEqual({ verified: 0, refused: 0, busy: 0, cacheHits: 0 });
  });

  it('denies verification_busy past the per-reader budget, and takes values again as it refills', () => {
    venue(5);
    const distinct = (i: number) => sign({ credentialId: 1000 + i, attendeeId: 1000 + i }, stranger);
    const details = Array.from({ length: 8 }, (_, i) => outcome(decide(distinct(i))));
    expect(details.slice(0, 5).every((d) => d === 'invalid_credential/signature_invalid')).toBe(true);
    expect(details.slice(5).every((d) => d === 'invalid_credential/verification_busy')).toBe(true);
    // another reader has its own budget
    expect(outcome(decide(distinct(20), 20, 2))).toBe('invalid_credential/signature_invalid');
    clockMs += 1000;
    expect(outcome(decide(sign({ credentialId: 2000, attendeeId: 2000 })))).toBe('granted in');
  });

  it('never grants a tampered value (any character changed)', () => {
    venue(0);
    const value = sign({ attendeeId: 4242, credentialId: 4242 });
    const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ $%*+-./:';
    fc.assert(
      fc.property(fc.integer({ min: 4, max: value.length - 1 }), fc.constantFrom(...alphabet), (at, char) => {
        fc.pre(value[at] !== char);
        const tampered = value.slice(0, at) + char + value.slice(at + 1);
        const d = decide(tampered, 21);
        return !d.granted && d.reason === 'invalid_credential';
      }),
      { numRuns: 300 },
    );
  });
});
