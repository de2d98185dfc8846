import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { privateKeyObject, readSignedValue, signValue } from '../../src/credentials/signed-value.js';
import { PROTOCOL_VERSION, SUPPORTED_PROTOCOLS } from '../../src/http/sync-protocol-version.js';
import { requester } from '../helpers/appliance.js';
import { OlderCloud } from '../helpers/older-cloud.js';
import { drained, type Edge, mqttReader, type Node, P, seedCloud, SyncWorld, until } from '../helpers/sync-world.js';

// Sync protocol versions (docs/sync.md: protocol versions), across real processes. Version 2 adds
// signed credentials: public keys in the pages, offline decisions in the uploads. A cloud answers
// each request in the version it names, so an edge of the build before (version 1) keeps syncing
// and is never sent what it cannot read; an edge meeting a cloud of the build before speaks 1 to
// it, leaving out what that cloud cannot store, and once the cloud is updated pulls again from the
// start, so the keys skipped under 1 arrive and tickets it never saw open its doors offline.

describe('sync protocol versions (processes)', () => {
  const world = new SyncWorld();
  let cloud: Node;
  let venue: { zone: number; entry: number; exit: number };
  let ticket: { id: number; attendee: number; value: string };
  let keys: { signing: number; retired: number };
  let older: OlderCloud;
  let edge: Edge;

  const asEdge = (version: string, token: string) => (method: string, path: string, body?: unknown) =>
    requester(cloud.url)(method, path, { token, headers: { 'Gatehouse-Sync-Protocol': version }, body });
  const entities = (res: { body: { data: { changes: { entity: string }[] } } }) =>
    new Set(res.body.data.changes.map((c) => c.entity));
  const privateKeyOf = (keyId: number): string =>
    cloud.withStore(
      (db) => db.prepare('SELECT private_key FROM credential_keys WHERE id = ?').pluck().get(keyId) as string,
    );
  /** A value signed with the project's signing key for a credential the cloud never issued. */
  const unissued = (credentialId: number) => {
    const claims = readSignedValue(ticket.value)!.claims;
    return signValue(
      { ...claims, credentialId, attendeeId: credentialId, validFrom: null, validUntil: null },
      privateKeyObject(privateKeyOf(keys.signing)),
    );
  };

  beforeAll(async () => {
    cloud = await world.startCloud();
    venue = await seedCloud(cloud, 2);
    await cloud.api('POST', '/readers', { identifier: 'GATE-1', access_point_id: venue.entry });
    // A retired key, then the signing key that issues the ticket.
    const first = (await cloud.api('POST', '/credential-keys')).body.data.id as number;
    const signing = (await cloud.api('POST', '/credential-keys')).body.data.id as number;
    expect((await cloud.api('POST', `/credential-keys/${first}/retire`)).status).toBe(200);
    keys = { signing, retired: first };
    const attendee = (
      await cloud.api('POST', '/attendees', { first_name: 'Early', last_name: 'Signed', attendee_type: 'guest' })
    ).body.data.id as number;
    const issued = await cloud.api('POST', `/attendees/${attendee}/credentials`, { kind: 'qr', signed: true });
    expect(issued.status).toBe(201);
    ticket = { id: issued.body.data.id, attendee, value: issued.body.data.value };
  }, 120_000);
  afterAll(async () => {
    await world.destroy();
  }, 60_000);

  it('answers each request in the version it names: version 1 gets no keys and cannot upload what 2 adds', async () => {
    const issued = await cloud.api('POST', '/sync/edges', { name: 'old build' });
    const token = issued.body.data.token as string;
    const v1 = asEdge('1', token);
    const v2 = asEdge('2', token);

    expect((await v1('GET', '/api/v1/sync/hello')).body.data).toMatchObject({
      protocol: 1,
      supported_protocols: [...SUPPORTED_PROTOCOLS],
    });
    expect((await v2('GET', '/api/v1/sync/hello')).body.data.protocol).toBe(2);
    const unknown = await asEdge(String(PROTOCOL_VERSION + 1), token)('GET', '/api/v1/sync/hello');
    expect(unknown.status).toBe(409);
    expect(unknown.body).toMatchObject({ code: 'sync_protocol_unsupported', supported_protocols: [1, 2] });

    // The change stream: the signed ticket's row in both, public keys in 2 only.
    const changes1 = await v1('GET', `${P}/sync/changes?limit=20000`);
    const changes2 = await v2('GET', `${P}/sync/changes?limit=20000`);
    expect(entities(changes1).has('credential')).toBe(true);
    expect(entities(changes1).has('credential_key')).toBe(false);
    expect(entities(changes2).has('credential_key')).toBe(true);
    expect(changes1.body.data.changes.some((c: { data?: { value?: string } }) => c.data?.value === ticket.value)).toBe(
      true,
    );
    // Revocations: the retired key in 2 only.
    const revoked1 = await v1('GET', `${P}/sync/revocations?limit=20000`);
    const revoked2 = await v2('GET', `${P}/sync/revocations?limit=20000`);
    expect(entities(revoked1).has('credential_key')).toBe(false);
    expect(
      revoked2.body.data.changes
        .filter((c: { entity: string }) => c.entity === 'credential_key')
        .map((c: { id: number }) => c.id),
    ).toEqual([keys.retired]);

    // An upload naming 1 with what 2 adds is refused as a cloud of 1 would refuse it, storing nothing.
    const item = (over: Record<string, unknown>) => ({
      kind: 'access',
      uuid: randomUUID(),
      access_point_id: venue.entry,
      access_zone_id: venue.zone,
      reader_id: null,
      credential_id: null,
      credential_value: 'GH1:FORGED',
      attendee_id: null,
      granted: false,
      reason: 'invalid_credential',
      movement: null,
      scanned_at: new Date().toISOString(),
      decided_at: new Date().toISOString(),
      source: 'api',
      ...over,
    });
    const upload = (send: typeof v1, items: unknown[]) =>
      send('POST', `${P}/sync/upload`, { clock: { offset_ms: 0, synchronised: true }, backlog: 0, items });
    const before = (await cloud.events()).length;
    const refused = await upload(v1, [
      item({}),
      item({ reason_detail: 'unknown_key' }),
      item({ offline_verified: false }),
    ]);
    expect(refused.status).toBe(422);
    expect(Object.keys(refused.body.errors).sort()).toEqual(['items.1.reason_detail', 'items.2.offline_verified']);
    expect((await cloud.events()).length).toBe(before);
    const taken = await upload(v2, [item({ reason_detail: 'unknown_key' })]);
    expect(taken.status, taken.text).toBe(200);
    expect((await cloud.events()).length).toBe(before + 1);
    // The edge is listed with the version it spoke last.
    const listed = (await cloud.api('GET', '/sync/edges')).body.data.find(
      (e: { id: number }) => e.id === issued.body.data.id,
    );
    expect(listed.protocol_version).toBe(2);
    // (A contact is written at most once a second, an upload's always: the hello is asked until one is.)
    await until(
      'the edge listed as speaking 1',
      async () => {
        await v1('GET', '/api/v1/sync/hello');
        return (await cloud.api('GET', '/sync/edges')).body.data.find(
          (e: { id: number }) => e.id === issued.body.data.id,
        );
      },
      (e) => e.protocol_version === 1,
    );
  }, 60_000);

  it('speaks 1 to a cloud of the build before, uploading only what it stores; pulls the keys once the cloud is updated', async () => {
    older = new OlderCloud([1], cloud.port);
    edge = await world.addEdge('north', {}, { hop: older });
    const status = () => edge.node.api('GET', '/sync/status');
    await until(
      'the edge speaking 1',
      status,
      (r) => r.body.data.protocol === 1 && r.body.data.last_download_at !== null,
    );
    expect(older.spoken).toContain(2); // it asked for 2 first
    // The ticket's row arrived (a held row decides as any other), no key did.
    const held = (await edge.node.api('GET', `/attendees/${ticket.attendee}/credentials`)).body.data;
    expect(held.map((c: { value: string }) => c.value)).toEqual([ticket.value]);
    expect((await edge.node.api('GET', '/credential-keys')).body.data).toEqual([]);

    const reader = await mqttReader(edge.node, 'GATE-1');
    try {
      expect(await reader.scan(ticket.value)).toMatchObject({ access_granted: true });
      // A value it does not hold, with no key to verify it: refused, its cause kept on the edge...
      const stranger = (await reader.scan(unissued(800_001))) as { access_granted: boolean; event_id: string };
      expect(stranger).toMatchObject({ access_granted: false, reason: 'invalid_credential' });
      const onEdge = (await edge.node.events()).find((e) => e.uuid === stranger.event_id);
      expect(onEdge).toMatchObject({ reason_detail: 'unknown_key', offline_verified: false });
      // ...and uploaded without it: the cloud of 1 stores the refusal as it can.
      await drained(edge.node);
      const onCloud = await until(
        'the refusal on the cloud',
        async () => (await cloud.events()).find((e) => e.uuid === stranger.event_id),
        (e) => e !== undefined,
      );
      expect(onCloud).toMatchObject({ reason: 'invalid_credential', reason_detail: null, offline_verified: false });
      const sent = older.uploads.flatMap((u) => u.items).find((i) => i.uuid === stranger.event_id)!;
      expect(sent).toBeDefined();
      expect('reason_detail' in sent || 'offline_verified' in sent).toBe(false);
      expect((await status()).body.data.last_error).toBeNull();

      // The cloud is updated (it serves 2, and restarts): the edge speaks 2, pulls again, gets the keys.
      older.served = [1, 2];
      await world.cloud.stop();
      await world.restartCloud();
      await until('the edge speaking 2', status, (r) => r.body.data.protocol === 2);
      await until(
        'the keys on the edge',
        () => edge.node.api('GET', '/credential-keys'),
        (r) => r.status === 200 && (r.body.data as unknown[]).length === 2,
      );
      // A ticket it never saw now opens the door from its signature.
      const offline = (await reader.scan(unissued(800_002))) as { access_granted: boolean; event_id: string };
      expect(offline.access_granted).toBe(true);
      expect((await edge.node.events()).find((e) => e.uuid === offline.event_id)).toMatchObject({
        offline_verified: true,
      });
      await drained(edge.node);
      const flagged = await until(
        'the offline admission on the cloud',
        async () => (await cloud.events()).find((e) => e.uuid === offline.event_id),
        (e) => e !== undefined,
      );
      expect(flagged).toMatchObject({ offline_verified: true, review: 'unknown_reference' });
    } finally {
      await reader.close();
    }
  }, 180_000);
});
