import { Writable } from 'node:stream';
import { ed25519PublicKey } from '../../src/credentials/ed25519.js';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSignedValue, verifySignedValue } from '../../src/credentials/signed-value.js';
import { AppError } from '../../src/errors.js';
import { commit } from '../../src/events/unit-of-work.js';
import { CredentialKeys } from '../../src/venue/credential-keys.js';
import { Credentials } from '../../src/venue/credentials.js';
import { client, startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';

// Signing keys and signed issue over REST (docs/credentials.md): a project's first signed
// credential makes its key; rotation and retirement; the project default; and the private key
// in no answer and no log line.

const P = '/api/v1/projects/default/default';
const OTHER = '/api/v1/projects/default/other';

describe('credential keys and signed credentials', () => {
  let gh: TestAppliance;
  let api: ReturnType<typeof client>;
  let receiver: Receiver;
  let projectId: number;
  let typeId: number;
  let pointId: number;
  const logged: string[] = [];
  const answers: string[] = [];

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk, _enc, done) {
        logged.push(String(chunk));
        done();
      },
    });
    gh = await startAppliance({ GATEHOUSE_WEBHOOK_ALLOW_INSECURE: '1' }, { log: pino({ level: 'trace' }, sink) });
    const token = await gh.token();
    const raw = client(gh, token);
    const keep = <T extends { text: string }>(res: T): T => {
      answers.push(res.text);
      return res;
    };
    api = {
      post: async (path, body) => keep(await raw.post(path, body)),
      put: async (path, body) => keep(await raw.put(path, body)),
      get: async (path) => keep(await raw.get(path)),
      del: async (path) => keep(await raw.del(path)),
    };
    receiver = await startReceiver();
    projectId = (await api.get(P)).body.data.id;
    await api.post('/api/v1/projects', { name: 'Other', slug: 'other' });
    const zoneId = (await api.post(`${P}/access-zones`, { name: 'Hall' })).body.data.id;
    typeId = (await api.post(`${P}/attendee-types`, { name: 'Crew', zone_ids: [zoneId] })).body.data.id;
    pointId = (await api.post(`${P}/access-points`, { name: 'Door', access_zone_id: zoneId })).body.data.id;
    const hook = await gh.request('POST', '/api/v1/webhook/subscribe', {
      token,
      body: { project_id: projectId, url: receiver.url, events: ['credential.created'] },
    });
    expect(hook.status).toBe(201);
  });
  afterAll(async () => {
    await receiver.close();
    await gh.destroy();
  });

  const attendee = async (body: Record<string, unknown> = {}) =>
    (await api.post(`${P}/attendees`, { first_name: 'Ada', last_name: 'Lovelace', ...body })).body.data.id as number;
  const issue = (attendeeId: number, body: Record<string, unknown>) =>
    api.post(`${P}/attendees/${attendeeId}/credentials`, body);
  const keys = async (path = P) => (await api.get(`${path}/credential-keys`)).body.data as Record<string, any>[];
  const verifies = async (value: string) => {
    const read = readSignedValue(value);
    if (!read) return false;
    const key = (await keys()).find((k) => k.id === read.claims.keyId);
    return key !== undefined && verifySignedValue(read, ed25519PublicKey(key.public_key));
  };

  it('makes the signing key with the first signed credential, whose value verifies with the listed public key', async () => {
    expect(await keys()).toEqual([]);
    const id = await attendee({ attendee_type: 'crew' });
    const res = await issue(id, {
      signed: true,
      kind: 'qr',
      valid_from: '2030-06-01T10:00:00.250Z',
      valid_until: '2030-06-03T23:00:00Z',
    });
    expect(res.status).toBe(201);
    const credential = res.body.data;
    expect(credential.value).toMatch(/^GH1:[0-9A-Z $%*+\-./:]+$/);
    expect(credential.valid_from).toBe('2030-06-01T10:00:00.000Z'); // whole seconds, as the value says
    const [key] = await keys();
    expect(key).toEqual({
      id: expect.any(Number),
      public_key: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      status: 'signing',
      created_at: expect.any(String),
      retired_at: null,
    });
    expect(await verifies(credential.value)).toBe(true);
    expect(readSignedValue(credential.value)!.claims).toEqual({
      kind: 'qr',
      keyId: key!.id,
      projectId,
      credentialId: credential.id,
      attendeeId: id,
      attendeeTypeId: typeId,
      validFrom: Date.parse('2030-06-01T10:00:00Z'),
      validUntil: Date.parse('2030-06-03T23:00:00Z'),
    });
    const again = await issue(id, { signed: true });
    expect(readSignedValue(again.body.data.value)!.claims).toMatchObject({ keyId: key!.id, attendeeTypeId: typeId });
    expect(await keys()).toHaveLength(1);
  });

  it('carries the signed value in the credential resource, the CSV export and the outgoing webhook', async () => {
    const id = await attendee({ first_name: 'Exported' });
    const value = (await issue(id, { signed: true })).body.data.value as string;
    const listed = await api.get(`${P}/attendees/${id}/credentials`);
    expect(listed.body.data.map((c: { value: string }) => c.value)).toEqual([value]);
    const csv = await api.get(`${P}/attendees/export`);
    expect(csv.text).toContain(value);
    const hooks = await receiver.waitFor(1, 'credential.created');
    await expect.poll(() => receiver.received.some((r) => r.body.data.value === value), { timeout: 10_000 }).toBe(true);
    expect(hooks[0]!.body.data.value).toMatch(/^GH1:/);
  });

  it('keeps unsigned values working, and refuses signed with a value, or no value unsigned', async () => {
    const id = await attendee({ attendee_type: 'crew' });
    const plain = await issue(id, { value: 'PLAIN-1' });
    expect(plain.status).toBe(201);
    expect(plain.body.data.value).toBe('PLAIN-1');
    const both = await issue(id, { signed: true, value: 'X-1' });
    expect(both.status).toBe(422);
    expect(both.body.errors.value).toHaveLength(1);
    const none = await issue(id, { signed: false });
    expect(none.status).toBe(422);
    expect(none.body.errors.value).toEqual(['The value field is required.']);
    expect((await issue(id, {})).status).toBe(422);
    const scan = await api.post(`${P}/access-points/${pointId}/scan`, { credential_value: 'PLAIN-1' });
    expect(scan.body).toMatchObject({ success: true });
  });

  it('signs a credential issued with no value in a project that signs by default (PUT .../projects/...)', async () => {
    const on = await api.put(P, { signed_credentials_by_default: true });
    expect(on.status).toBe(200);
    expect(on.body.data.signed_credentials_by_default).toBe(true);
    const id = await attendee();
    const byDefault = await issue(id, { kind: 'rfid' });
    expect(byDefault.status).toBe(201);
    expect(await verifies(byDefault.body.data.value)).toBe(true);
    expect((await issue(id, { value: 'GIVEN-1' })).body.data.value).toBe('GIVEN-1');
    expect((await issue(id, { signed: false })).status).toBe(422);
    const off = await api.put(P, { signed_credentials_by_default: false });
    expect(off.body.data.signed_credentials_by_default).toBe(false);
    expect((await issue(id, {})).status).toBe(422);
  });

  it('rotates: the previous key verifies what it signed; retiring the signing key is refused', async () => {
    const id = await attendee();
    const before = (await issue(id, { signed: true })).body.data.value as string;
    const [first] = await keys();
    const rotated = await api.post(`${P}/credential-keys`, {});
    expect(rotated.status).toBe(201);
    expect(rotated.body.data).toMatchObject({ status: 'signing', retired_at: null });
    expect((await keys()).map((k) => [k.id, k.status])).toEqual([
      [first!.id, 'verifying'],
      [rotated.body.data.id, 'signing'],
    ]);
    const after = (await issue(id, { signed: true })).body.data.value as string;
    expect(readSignedValue(after)!.claims.keyId).toBe(rotated.body.data.id);
    expect(await verifies(before)).toBe(true);
    expect(await verifies(after)).toBe(true);

    const refused = await api.post(`${P}/credential-keys/${rotated.body.data.id}/retire`, {});
    expect(refused.status).toBe(409);
    expect(refused.body.code ?? refused.body.message).toBeDefined();
    expect(refused.body.message).toMatch(/rotate/);
    const retired = await api.post(`${P}/credential-keys/${first!.id}/retire`, {});
    expect(retired.status).toBe(200);
    expect(retired.body.data).toMatchObject({ id: first!.id, status: 'retired', retired_at: expect.any(String) });
    const twice = await api.post(`${P}/credential-keys/${first!.id}/retire`, {});
    expect(twice.body.data).toEqual(retired.body.data);
  });

  it("answers 404 for an unknown key and for another project's key", async () => {
    expect((await api.post(`${P}/credential-keys/999999/retire`, {})).status).toBe(404);
    const theirs = (await api.post(`${OTHER}/credential-keys`, {})).body.data.id;
    expect((await api.post(`${P}/credential-keys/${theirs}/retire`, {})).status).toBe(404);
    expect((await keys(OTHER)).map((k) => k.id)).toEqual([theirs]);
    expect((await keys()).map((k) => k.id)).not.toContain(theirs);
  });

  it('gives every key write a change version and announces it', async () => {
    const seen: string[] = [];
    gh.app.services.bus.on(seen, 'credential_key.created', (e) => seen.push(`created ${e.resource.id} v${e.version}`));
    gh.app.services.bus.on(seen, 'credential_key.updated', (e) => seen.push(`${e.resource.status} v${e.version}`));
    const made = gh.app.services.venue.credentialKeys.rotate(projectId);
    expect(seen).toEqual([`verifying v${made.version - 1}`, `created ${made.id} v${made.version}`]);
    gh.app.services.bus.removeListeners(seen);
  });

  it('refuses keys and signed credentials on an edge, which holds public keys only', async () => {
    const { store, clock, bus } = gh.app.services;
    const edgeKeys = new CredentialKeys(store.db, clock, bus, false);
    const edgeCredentials = new Credentials(store.db, clock, bus, edgeKeys);
    const refused = (f: () => unknown) => {
      try {
        f();
      } catch (err) {
        return err instanceof AppError ? `${err.status} ${(err.body as { message: string }).message}` : String(err);
      }
      return 'not refused';
    };
    expect(refused(() => edgeKeys.rotate(projectId))).toMatch(/^409 An edge holds public keys only/);
    const id = await attendee();
    expect(
      refused(() => commit(store.db, bus, (work) => edgeCredentials.insert(projectId, id, { signed: true }, work))),
    ).toMatch(/^409 /);
    expect(refused(() => edgeCredentials.issue(projectId, id, { value: 'EDGE-PLAIN' }))).toBe('not refused');
  });

  it('shows the private key in no REST answer and no log line', async () => {
    const privateKeys = gh.app.services.venue.credentialKeys.list(projectId).map((k) => k.private_key!);
    expect(privateKeys.length).toBeGreaterThan(1);
    const everything = answers.join('\n') + logged.join('') + receiver.received.map((r) => r.raw).join('\n');
    expect(logged.length).toBeGreaterThan(0);
    for (const key of privateKeys) {
      expect(key.length).toBeGreaterThan(40);
      expect(everything).not.toContain(key);
      expect(everything).not.toContain(key.slice(-44)); // the seed's end, however it was cut
    }
  });
});
