// bench:credentials — signed credential values decided offline (docs/credentials.md: deciding a
// signed value offline), AccessEngine.decide in this one thread, the venue index filled in memory:
//   offline_verifications_per_s: distinct valid signed values the index does not hold, the
//     verified-value cache cold and no per-reader budget: read, key looked up, Ed25519 verified,
//     claims decided (the signing is done before the clock starts);
//   known_decisions_per_s: stored credentials alone, for DURATION;
//   known_decisions_per_s_under_forgery: the same, with a stream of distinct forged values (right
//     format and key id, signed by another key: signature_invalid) arriving at FORGED_PER_S from
//     FORGED_READERS readers (1,000 a second each: far past what a reader's optics can read), each
//     under the default budget (20 checks/s): the signature checks an attack costs are bounded by
//     the readers it holds × the budget, whatever it prints;
//   known_ratio_under_forgery: the second over the first (the doors' share kept under attack);
//   verifier_per_s: the floor, measured in the same run: the verifier the engine uses alone
//     (credentials/ed25519.ts: libsodium where it loads, named on the line verifier_backend) over one
//     signature in a loop, nothing else; offline_share_of_verifier: the first figure over it (what
//     the decision path keeps of the one call it cannot do without);
//   node_verify_per_s: Node's own Ed25519 verify (OpenSSL) the same way: the verifier before libsodium.
// BENCH_QUICK=1 runs shorter loops.
import { AccessEngine } from '../src/access/engine.js';
import { Occupancy } from '../src/access/occupancy.js';
import { SignedValues } from '../src/access/signed-values.js';
import { VenueIndex } from '../src/access/venue-index.js';
import { ed25519Backend, ed25519PublicKey } from '../src/credentials/ed25519.js';
import { generateSigningKey, privateKeyObject, readSignedValue, signValue } from '../src/credentials/signed-value.js';

const quick = process.env.BENCH_QUICK === '1';
const line = (name: string, value: string | number, unit: string) => console.log(`${name}: ${value} ${unit}`);

const P = 1;
const KNOWN = 100_000;
const SIGNED = quick ? 5_000 : 30_000;
const DURATION_MS = quick ? 1000 : 3000;
const FORGED_PER_S = 5_000;
const FORGED_READERS = 5;

const index = new VenueIndex(null as never);
index.timezones.set(P, 'UTC');
index.putZone({ id: 1, project_id: P, capacity: null, requires_ticket: 1, anti_passback: 0 });
index.putAccessPoint({ id: 1, project_id: P, access_zone_id: 1, direction: 'in', is_active: 1 });
index.putAttendeeType({ id: 1, zone_ids: [1] });
for (let i = 1; i <= KNOWN; i++) {
  index.putAttendee({ id: i, project_id: P, attendee_type_id: 1, first_name: 'A', last_name: 'B', status: 'active' });
  index.putCredential({
    id: i,
    project_id: P,
    attendee_id: i,
    value: `TICKET-${i}`,
    status: 'active',
    valid_from: null,
    valid_until: null,
    revoked_at: null,
  });
}
const key = generateSigningKey();
const stranger = generateSigningKey();
index.keys.put({ id: 1, project_id: P, public_key: key.publicKey, status: 'signing' });
const claims = (n: number) => ({
  kind: 'qr' as const,
  keyId: 1,
  projectId: P,
  credentialId: 1_000_000 + n,
  attendeeId: 1_000_000 + n,
  attendeeTypeId: 1,
  validFrom: null,
  validUntil: Date.now() + 86_400_000,
});
const privateKey = privateKeyObject(key.privateKey);
const forgingKey = privateKeyObject(stranger.privateKey);
const signed = Array.from({ length: SIGNED }, (_, n) => signValue(claims(n), privateKey));
const forged = Array.from({ length: Math.ceil((FORGED_PER_S * DURATION_MS * 1.2) / 1000) }, (_, n) =>
  signValue(claims(SIGNED + n), forgingKey),
);
const at = Date.now();

// 1. Offline verifications: every value new to the engine, no budget.
{
  const engine = new AccessEngine(index, new Occupancy(), new SignedValues(index.keys, { verificationsPerSecond: 0 }));
  let granted = 0;
  const t0 = performance.now();
  for (const value of signed)
    if (engine.decide({ projectId: P, accessPointId: 1, credentialValue: value, at, readerId: 1 }).granted) granted++;
  const seconds = (performance.now() - t0) / 1000;
  if (granted !== SIGNED) throw new Error(`only ${granted} of ${SIGNED} signed values granted`);
  const perSecond = SIGNED / seconds;
  line('credentials.offline_verifications_per_s', Math.round(perSecond), '/s');
  // The floors: the same count of one verifier's calls alone, over one value's bytes.
  const one = readSignedValue(signed[0]!)!;
  const data = Buffer.concat([Buffer.from('gatehouse-credential:', 'ascii'), one.signed]);
  const verifier = ed25519PublicKey(key.publicKey);
  const s0 = performance.now();
  for (let i = 0; i < SIGNED; i++) if (!verifier.verify(data, one.signature)) throw new Error('floor: bad signature');
  const verifierPerSecond = SIGNED / ((performance.now() - s0) / 1000);
  console.log(`credentials.verifier_backend: ${ed25519Backend()}`);
  line('credentials.verifier_per_s', Math.round(verifierPerSecond), '/s');
  line('credentials.offline_share_of_verifier', (perSecond / verifierPerSecond).toFixed(3), 'ratio');
  const publicKey = ed25519PublicKey(key.publicKey, 'openssl');
  const v0 = performance.now();
  for (let i = 0; i < SIGNED; i++)
    if (!publicKey.verify(data, one.signature)) throw new Error('baseline: bad signature');
  const nodePerSecond = SIGNED / ((performance.now() - v0) / 1000);
  line('credentials.node_verify_per_s', Math.round(nodePerSecond), '/s');
}

// 2. Known credentials alone, then with the forged stream (the default budget per reader), in
// alternating slices of SLICE_MS, so a shared machine's load falls on both alike. The budget's clock
// runs in the attacked slices only, as if they were one continuous attack.
const SLICE_MS = 250;
let k = 0;
let sent = 0;
let attackMs = 0;
let attackFrom: number | null = null;
const attackClock = () => attackMs + (attackFrom === null ? 0 : performance.now() - attackFrom);
const engine = new AccessEngine(
  index,
  new Occupancy(),
  new SignedValues(index.keys, { verificationsPerSecond: 20, now: attackClock }),
);
function slice(forgery: boolean): { decisions: number; ms: number } {
  let done = 0;
  const t0 = performance.now();
  const sentBefore = sent;
  if (forgery) attackFrom = t0;
  for (;;) {
    for (let b = 0; b < 200; b++) {
      k = (k + 7919) % KNOWN;
      engine.decide({ projectId: P, accessPointId: 1, credentialValue: `TICKET-${k + 1}`, at, readerId: 1 });
    }
    done += 200;
    const elapsed = performance.now() - t0;
    if (forgery) {
      const due =
        sentBefore +
        Math.floor(((attackMs + elapsed) * FORGED_PER_S) / 1000) -
        Math.floor((attackMs * FORGED_PER_S) / 1000);
      for (; sent < due && sent < forged.length; sent++) {
        const d = engine.decide({
          projectId: P,
          accessPointId: 1,
          credentialValue: forged[sent]!,
          at,
          readerId: 100 + (sent % FORGED_READERS),
        });
        if (d.granted) throw new Error('a forged value was granted');
      }
    }
    if (elapsed >= SLICE_MS) {
      if (forgery) {
        attackMs += elapsed;
        attackFrom = null;
      }
      return { decisions: done, ms: elapsed };
    }
  }
}
slice(false); // warm up the JIT
const alone = { decisions: 0, ms: 0 };
const attacked = { decisions: 0, ms: 0 };
for (let i = 0; i < DURATION_MS / SLICE_MS; i++) {
  for (const [total, forgery] of [
    [alone, false],
    [attacked, true],
  ] as const) {
    const r = slice(forgery);
    total.decisions += r.decisions;
    total.ms += r.ms;
  }
}
const alonePerS = (alone.decisions * 1000) / alone.ms;
const attackedPerS = (attacked.decisions * 1000) / attacked.ms;
line('credentials.known_decisions_per_s', Math.round(alonePerS), '/s');
line('credentials.known_decisions_per_s_under_forgery', Math.round(attackedPerS), '/s');
line('credentials.forged_values_per_s', Math.round((sent * 1000) / attacked.ms), '/s');
line('credentials.forged_signature_checks', engine.signed.stats.refused, 'checks');
line('credentials.forged_refused_busy', engine.signed.stats.busy, 'values');
line('credentials.known_ratio_under_forgery', (attackedPerS / alonePerS).toFixed(3), 'ratio');
