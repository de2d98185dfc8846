import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { privateKeyObject, signValue } from '../../src/credentials/signed-value.js';
import { startAppliance, type TestAppliance } from '../helpers/appliance.js';

// A standalone box decides a signed value it does not hold with the keys it made itself: the
// venue index takes a rotation and a retirement from the keys' bus events (access/index-sync.ts),
// without a restart (docs/credentials.md: deciding a signed value offline).

const P = '/api/v1/projects/default/default';

describe('signed values on a standalone box', () => {
  let gh: TestAppliance;
  let token: string;
  let point: number;
  let projectId: number;
  const api = (method: string, path: string, body?: unknown) =>
    gh.request(method, `${P}${path}`, { token, ...(body === undefined ? {} : { body }) });
  const privateKey = (id: number) =>
    privateKeyObject(
      gh.app.services.store.db
        .prepare('SELECT private_key FROM credential_keys WHERE id = ?')
        .pluck()
        .get(id) as string,
    );
  const token4 = (keyId: number, n: number) =>
    signValue(
      {
        kind: 'qr',
        keyId,
        projectId,
        credentialId: 800_000 + n,
        attendeeId: 800_000 + n,
        attendeeTypeId: null,
        validFrom: null,
        validUntil: null,
      },
      privateKey(keyId),
    );
  const scan = async (value: string) => {
    const res = await api('POST', `/access-points/${point}/scan`, { credential_value: value });
    const d = res.body.data ?? res.body;
    return { outcome: d.access_granted ? 'granted' : `${d.reason}/${d.reason_detail}`, id: d.event_id as string };
  };

  beforeAll(async () => {
    gh = await startAppliance();
    token = await gh.token();
    // An open zone (no ticket required): the claims' holder needs no type here.
    const zone = (await api('POST', '/access-zones', { name: 'Foyer', requires_ticket: false })).body.data.id as number;
    point = (await api('POST', '/access-points', { name: 'Door', access_zone_id: zone })).body.data.id as number;
    projectId = gh.app.services.store.db
      .prepare("SELECT id FROM projects WHERE slug = 'default'")
      .pluck()
      .get() as number;
  }, 60_000);
  afterAll(() => gh?.destroy());

  it('grants a token of a key made after start, records offline_verified, and refuses it once retired', async () => {
    const first = (await api('POST', '/credential-keys')).body.data.id as number;
    const granted = await scan(token4(first, 1));
    expect(granted.outcome).toBe('granted');
    await gh.app.services.access.scans.settled();
    const events = (await api('GET', '/access-events')).body.data as { uuid: string; offline_verified: boolean }[];
    expect(events.find((e) => e.uuid === granted.id)?.offline_verified).toBe(true);

    const second = (await api('POST', '/credential-keys')).body.data.id as number;
    expect((await scan(token4(second, 2))).outcome).toBe('granted');
    expect((await scan(token4(first, 3))).outcome).toBe('granted'); // verifying: still admits
    expect((await api('POST', `/credential-keys/${first}/retire`)).status).toBe(200);
    expect((await scan(token4(first, 4))).outcome).toBe('invalid_credential/key_retired');
    expect((await scan(token4(first, 1))).outcome).toBe('invalid_credential/key_retired'); // cached, but retired
  });
});
