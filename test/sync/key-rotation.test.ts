import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { privateKeyObject, readSignedValue, type SignedClaims, signValue } from '../../src/credentials/signed-value.js';
import { AnswerHold, type HeldAnswer, type Hold } from '../helpers/answer-hold.js';
import { type Edge, type Node, scan, seedCloud, SyncWorld, until } from '../helpers/sync-world.js';

// Key rotation as an edge receives it (docs/credentials.md: the key lifecycle), across real
// processes. A project has one signing key; the change stream is ordered by each row's newest
// version, so a key's later change (its retirement) moves it behind the keys made after it: an
// edge that held it signing meets the new signing key first. It must take the new key (the old
// one verifies meanwhile, demoted on the edge until its own change arrives), never fail the page,
// and end exactly as the cloud: the newest key signing, the retired one refused with its reason.
// The answers that carry the old key's retirement are held, so the order is the test's, not timing's.

describe('key rotation reaching an edge out of order (processes)', () => {
  const world = new SyncWorld();
  let cloud: Node;
  let edge: Edge;
  let entry: number;
  let claims: SignedClaims;
  const privateKeys = new Map<number, string>();
  let holds: Hold[] = [];
  let answers: AnswerHold;

  const privateKeyOf = (keyId: number): string =>
    cloud.withStore(
      (db) => db.prepare('SELECT private_key FROM credential_keys WHERE id = ?').pluck().get(keyId) as string,
    );
  /** A ticket the cloud never issued, signed by `keyId`. */
  const token = (keyId: number, n: number) =>
    signValue(
      { ...claims, keyId, credentialId: 600_000 + n, attendeeId: 600_000 + n, validFrom: null, validUntil: null },
      privateKeyObject(privateKeys.get(keyId)!),
    );
  const decided = async (value: string) => {
    const d = (await scan(edge.node, entry, value)) as {
      access_granted: boolean;
      reason?: string;
      reason_detail?: string;
    };
    return d.access_granted ? 'granted' : `${d.reason}/${d.reason_detail ?? null}`;
  };
  const keysOnEdge = async () =>
    Object.fromEntries(
      ((await edge.node.api('GET', '/credential-keys')).body.data as { id: number; status: string }[]).map((k) => [
        k.id,
        k.status,
      ]),
    );

  beforeAll(async () => {
    cloud = await world.startCloud();
    entry = (await seedCloud(cloud, 1)).entry;
    const attendee = (
      await cloud.api('POST', '/attendees', { first_name: 'Key', last_name: 'Holder', attendee_type: 'guest' })
    ).body.data.id as number;
    const issued = await cloud.api('POST', `/attendees/${attendee}/credentials`, { kind: 'qr', signed: true });
    claims = readSignedValue(issued.body.data.value as string)!.claims;
    privateKeys.set(claims.keyId, privateKeyOf(claims.keyId));
    answers = new AnswerHold(cloud.port);
    // Pages of one change, so the new signing key and the old key's retirement come in pages of their own.
    edge = await world.addEdge(
      'north',
      { GATEHOUSE_SYNC_PAGE_SIZE: '1', GATEHOUSE_SYNC_REQUEST_TIMEOUT_MS: '60000' },
      { answers },
    );
    await until('the first key on the edge', keysOnEdge, (k) => k[claims.keyId] === 'signing');
  }, 120_000);
  afterAll(async () => {
    for (const h of holds) h.release();
    await world.destroy();
  }, 60_000);

  it('takes a new signing key before the old one is demoted, verifies both meanwhile, and ends as the cloud', async () => {
    const first = claims.keyId;
    expect(await decided(token(first, 1))).toBe('granted');
    // On the cloud, while the edge cannot hear: rotate twice, then retire the first key. Its newest
    // version is now the stream's last; the edge still holds it signing.
    edge.proxy.set('cut');
    const second = (await cloud.api('POST', '/credential-keys')).body.data.id as number;
    const third = (await cloud.api('POST', '/credential-keys')).body.data.id as number;
    privateKeys.set(second, privateKeyOf(second));
    privateKeys.set(third, privateKeyOf(third));
    expect((await cloud.api('POST', `/credential-keys/${first}/retire`)).status).toBe(200);
    // The answers that carry the first key's retirement to requests sent from now on are held. (The
    // long polls open before the cut are answered too, into the cut: they are let through.)
    const restored = performance.now();
    const retiredKey = (a: HeldAnswer) =>
      a.sentAt > restored && a.body.includes('"credential_key"') && a.body.includes('"retired"');
    holds = [
      answers.hold((a) => a.path.includes('/sync/changes') && retiredKey(a)),
      answers.hold((a) => a.path.includes('/sync/revocations') && retiredKey(a)),
    ];
    edge.proxy.set('pass');

    // The pages before the retirement: the third key arrives signing while the first is still signing here.
    const held = await Promise.race(holds.map((h) => h.reached));
    expect(held.body).toContain('"retired"');
    await until('the third key signing on the edge', keysOnEdge, (k) => k[third] === 'signing');
    expect(await keysOnEdge()).toEqual({ [first]: 'verifying', [second]: 'verifying', [third]: 'signing' });
    expect((await edge.node.api('GET', '/sync/status')).body.data.last_error).toBeNull();
    // Meanwhile every key the edge holds verifies: the first one's retirement has not arrived.
    expect(await decided(token(first, 2))).toBe('granted');
    expect(await decided(token(second, 3))).toBe('granted');
    expect(await decided(token(third, 4))).toBe('granted');

    // The retirement arrives: the edge ends as the cloud, and the first key's tickets are refused.
    for (const h of holds) h.release();
    await until('the first key retired on the edge', keysOnEdge, (k) => k[first] === 'retired');
    const onCloud = Object.fromEntries(
      ((await cloud.api('GET', '/credential-keys')).body.data as { id: number; status: string }[]).map((k) => [
        k.id,
        k.status,
      ]),
    );
    expect(await keysOnEdge()).toEqual(onCloud);
    expect(onCloud).toEqual({ [first]: 'retired', [second]: 'verifying', [third]: 'signing' });
    expect(await decided(token(first, 5))).toBe('invalid_credential/key_retired');
    expect(await decided(token(second, 6))).toBe('granted');
    expect(await decided(token(third, 7))).toBe('granted');
    expect((await edge.node.api('GET', '/sync/status')).body.data.last_error).toBeNull();
  }, 120_000);
});
