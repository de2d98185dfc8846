import { join } from 'node:path';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  generateSigningKey,
  privateKeyObject,
  readSignedValue,
  type SignedClaims,
  signValue,
} from '../../src/credentials/signed-value.js';
import { DB_FILE } from '../../src/store/database.js';
import { requester } from '../helpers/appliance.js';
import {
  type Edge,
  cutLink,
  drained,
  mqttReader,
  type Node,
  P,
  scan,
  seedCloud,
  SyncWorld,
  until,
} from '../helpers/sync-world.js';

// Tickets sold after the last sync open the doors offline (docs/credentials.md: deciding a signed
// value offline), across real processes: a cloud and an edge, the link between them cut. The edge
// holds its project's public keys (the change stream's credential_key rows), decides a signed value
// it has never seen from its claims, records offline_verified, and the cloud sees it once the link
// is back, flagging what it knows better (a revocation before the scan, a credential it never issued).

describe('signed credentials decided offline (processes)', () => {
  const world = new SyncWorld();
  let cloud: Node;
  let edge: Edge;
  let venue: { zone: number; entry: number; exit: number };
  let reader: Awaited<ReturnType<typeof mqttReader>>;
  let oldKey: { id: number; privateKey: string };
  let newKeyId: number;

  /** A new guest on the cloud with a signed QR credential: its id and value. */
  const issue = async (name: string, extra: Record<string, unknown> = {}) => {
    const attendee = (
      await cloud.api('POST', '/attendees', { first_name: name, last_name: 'Signed', attendee_type: 'guest' })
    ).body.data.id as number;
    const res = await cloud.api('POST', `/attendees/${attendee}/credentials`, { kind: 'qr', signed: true, ...extra });
    if (res.status !== 201) throw new Error(`signed issue: ${res.status} ${res.text}`);
    return { attendee, id: res.body.data.id as number, value: res.body.data.value as string };
  };
  /** A key's private part, as only the cloud holds it (read from its file: the test signs tokens it never issued). */
  const privateKeyOf = (keyId: number): string =>
    cloud.withStore(
      (db) => db.prepare('SELECT private_key FROM credential_keys WHERE id = ?').pluck().get(keyId) as string,
    );
  const claimsOf = (value: string): SignedClaims => readSignedValue(value)!.claims;
  const mqtt = async (value: string) => {
    const d = (await reader.scan(value)) as { access_granted: boolean; reason?: string; reason_detail?: string | null };
    return d.access_granted ? 'granted' : `${d.reason}/${d.reason_detail ?? null}`;
  };
  const eventOn = async (node: Node, uuid: string) => (await node.events()).find((e) => e.uuid === uuid);

  beforeAll(async () => {
    cloud = await world.startCloud();
    venue = await seedCloud(cloud, 3);
    await cloud.api('POST', '/readers', { identifier: 'GATE-1', access_point_id: venue.entry });
    // Two keys before the edge starts: the first (rotated out: verifying), the second signing.
    oldKey = { id: (await cloud.api('POST', '/credential-keys')).body.data.id as number, privateKey: '' };
    newKeyId = (await cloud.api('POST', '/credential-keys')).body.data.id as number;
    oldKey.privateKey = privateKeyOf(oldKey.id);
    edge = await world.addEdge('north');
    await until(
      "the project's keys on the edge",
      () => edge.node.api('GET', '/credential-keys'),
      (r) => r.status === 200 && (r.body.data as unknown[]).length === 2,
    );
    reader = await mqttReader(edge.node, 'GATE-1');
  }, 120_000);
  afterAll(async () => {
    await reader?.close();
    await world.destroy();
  });

  it('carries public keys to the edge, never a private key', async () => {
    const listed = await cloud.api('GET', '/credential-keys');
    const onEdge = await edge.node.api('GET', '/credential-keys');
    expect(onEdge.body.data.map((k: { public_key: string }) => k.public_key).sort()).toEqual(
      listed.body.data.map((k: { public_key: string }) => k.public_key).sort(),
    );
    expect(JSON.stringify(onEdge.body)).not.toContain(oldKey.privateKey);
    // The change stream itself: credential_key rows with their public part, no private_key anywhere.
    const page = await requester(cloud.url)('GET', `${P}/sync/changes`, {
      token: edge.syncToken,
      headers: { 'gatehouse-sync-protocol': '2' },
    });
    expect(page.status).toBe(200);
    const keys = (page.body.data ?? page.body).changes.filter((c: { entity: string }) => c.entity === 'credential_key');
    expect(keys.map((k: { id: number }) => k.id).sort()).toEqual([oldKey.id, newKeyId].sort());
    expect(Object.keys(keys[0].data).sort()).toEqual([
      'created_at',
      'public_key',
      'retired_at',
      'status',
      'updated_at',
    ]);
    expect(page.text).not.toContain('private_key');
    expect(page.text).not.toContain(oldKey.privateKey);
    const db = new Database(join(edge.node.dataDir, DB_FILE), { readonly: true, fileMustExist: true });
    try {
      expect(db.prepare('SELECT count(*) FROM credential_keys WHERE private_key IS NOT NULL').pluck().get()).toBe(0);
    } finally {
      db.close();
    }
  });

  it('grants, offline, a signed credential issued after the cut; the cloud sees it offline_verified', async () => {
    await cutLink(edge);
    const ticket = await issue('Late');
    const granted = (await reader.scan(ticket.value)) as { access_granted: boolean; event_id: string };
    expect(granted.access_granted).toBe(true);
    const onEdge = await eventOn(edge.node, granted.event_id);
    expect(onEdge).toMatchObject({ offline_verified: true, credential_id: ticket.id, attendee_id: ticket.attendee });

    // Denials at the edge, each with its reason.
    const stranger = generateSigningKey();
    const claims = claimsOf(ticket.value);
    const forged = signValue(
      { ...claims, credentialId: claims.credentialId + 1000 },
      privateKeyObject(stranger.privateKey),
    );
    expect(await mqtt(forged)).toBe('invalid_credential/signature_invalid');
    const otherProject = signValue(
      { ...claims, projectId: claims.projectId + 1, keyId: 999 },
      privateKeyObject(stranger.privateKey),
    );
    expect(await mqtt(otherProject)).toBe('invalid_credential/unknown_key');
    const expired = signValue(
      {
        ...claims,
        keyId: oldKey.id,
        credentialId: 900_001,
        validFrom: Date.now() - 7_200_000,
        validUntil: Date.now() - 3_600_000,
      },
      privateKeyObject(oldKey.privateKey),
    );
    expect(await mqtt(expired)).toBe('expired/null');
    const at = ticket.value.length - 5;
    const tampered = ticket.value.slice(0, at) + (ticket.value[at] === 'A' ? 'B' : 'A') + ticket.value.slice(at + 1);
    expect(await mqtt(tampered)).toBe('invalid_credential/signature_invalid');

    // Key rotation: a token of the rotated-out key (verifying) is granted beside the signing key's.
    expect(claims.keyId).toBe(newKeyId);
    const byOldKey = signValue(
      { ...claims, keyId: oldKey.id, credentialId: 900_002, attendeeId: 900_002, validFrom: null, validUntil: null },
      privateKeyObject(oldKey.privateKey),
    );
    const old = (await reader.scan(byOldKey)) as { access_granted: boolean; event_id: string };
    expect(old.access_granted).toBe(true);

    // A revoked ticket scanned before the edge learns of it: granted there, flagged on the cloud.
    const revoked = await issue('Revoked');
    await cloud.api('DELETE', `/credentials/${revoked.id}`);
    const before = (await reader.scan(revoked.value)) as { access_granted: boolean; event_id: string };
    expect(before.access_granted).toBe(true);

    edge.proxy.set('pass');
    await drained(edge.node);
    const uploaded = await until(
      'the offline admission on the cloud',
      () => eventOn(cloud, granted.event_id),
      (e) => e !== undefined,
    );
    expect(uploaded).toMatchObject({
      offline_verified: true,
      edge_id: edge.id,
      review: null,
      credential_id: ticket.id,
    });
    const flagged = await until(
      'the revoked admission',
      () => eventOn(cloud, before.event_id),
      (e) => !!e,
    );
    expect(flagged).toMatchObject({ offline_verified: true, review: 'revoked_credential' });
    // A credential the cloud never issued (the old key's token above): kept for review.
    const unknown = await until(
      'the unknown credential',
      () => eventOn(cloud, old.event_id),
      (e) => !!e,
    );
    expect(unknown).toMatchObject({ offline_verified: true, review: 'unknown_reference' });

    // The revocation reached the edge (it now holds the row: the stored row wins).
    await until(
      'the revocation on the edge',
      () => mqtt(revoked.value),
      (d) => d === 'invalid_credential/null',
      20_000,
    );
  }, 120_000);

  it('never grants a tampered token (any character changed), over REST at the edge', async () => {
    const ticket = await issue('Prop');
    await until(
      'the ticket on the edge',
      () => scan(edge.node, venue.entry, ticket.value),
      (d) => d.access_granted,
    );
    const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ $%*+-./:';
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 4, max: ticket.value.length - 1 }),
        fc.constantFrom(...alphabet),
        async (i, c) => {
          fc.pre(ticket.value[i] !== c);
          const d = await scan(edge.node, venue.exit, ticket.value.slice(0, i) + c + ticket.value.slice(i + 1));
          return !d.access_granted && d.reason === 'invalid_credential';
        },
      ),
      { numRuns: 25 },
    );
  }, 60_000);
});
