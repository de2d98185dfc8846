import type { MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AnswerHold, type HeldAnswer, type Hold } from '../helpers/answer-hold.js';
import { requester } from '../helpers/appliance.js';
import { connect, type Inbox, inbox, type ReaderCredentials, subscribe } from '../helpers/mqtt.js';
import { type Edge, P, scan, seedCloud, SyncWorld, until } from '../helpers/sync-world.js';

// A pull under way and a revocation on its own path (docs/sync.md: the edge's replica): a page
// the cloud computed while a credential was still active reaches the edge after the credential's
// revocation did. The page is held back by the test (helpers/answer-hold.ts), not by timing: the
// edge's request reaches the cloud, which answers it with the credential active; its answer waits
// until the revocation has reached the edge over GET .../sync/revocations. Then the page is
// written, and the edge must still refuse the credential, over REST and over MQTT. The page of
// the pull that carries the revoked row is held too, so the edge is looked at in between, while
// only the older row could have changed it.

type Change = { entity: string; id: number; op: string; data?: Record<string, unknown> };

const changesOf = (answer: HeldAnswer): Change[] => {
  const body = JSON.parse(answer.body);
  return ((body.data ?? body).changes ?? []) as Change[];
};
const carries = (answer: HeldAnswer, value: string, status: string) =>
  answer.path.includes('/sync/changes') &&
  changesOf(answer).some((c) => c.entity === 'credential' && c.data?.value === value && c.data?.status === status);

describe('a running pull and a revocation (processes)', () => {
  const world = new SyncWorld();
  let edge: Edge;
  let venue: { zone: number; entry: number; exit: number };
  let target: { attendee: number; credential: number };
  let olderPage: Hold;
  let revokedPage: Hold;
  let reader: { client: MqttClient; inbox: Inbox; creds: ReaderCredentials } | null = null;

  beforeAll(async () => {
    await world.startCloud();
    venue = await seedCloud(world.cloud, 40);
    await world.cloud.api('POST', '/readers', { identifier: 'GATE-1', access_point_id: venue.entry });
    // The ticket's holder some pages before the ticket, other tickets on either side: a pull of ~25 pages.
    const attendee = (
      await world.cloud.api('POST', '/attendees', { first_name: 'Rev', last_name: 'Oked', attendee_type: 'guest' })
    ).body.data.id as number;
    const more = (tag: string) =>
      Array.from({ length: 40 }, (_, i) => ({
        first_name: `${tag}${i}`,
        attendee_type: 'guest',
        external_id: `${tag}-${i}`,
        credential_value: `${tag}-${i}`,
      }));
    await world.cloud.api('POST', '/attendees/import', more('L'));
    const credential = (await world.cloud.api('POST', `/attendees/${attendee}/credentials`, { value: 'REVOKED-1' }))
      .body.data.id as number;
    await world.cloud.api('POST', '/attendees/import', more('M'));
    target = { attendee, credential };

    const answers = new AnswerHold(world.cloud.port);
    olderPage = answers.hold((a) => carries(a, 'REVOKED-1', 'active'));
    revokedPage = answers.hold((a) => carries(a, 'REVOKED-1', 'revoked'));
    // Pages of 10; a held answer must outlast no request timeout (the edge would ask again, and get a page without the row).
    // No zone refuses re-entry (the default): every scan of a ticket is decided on the ticket alone.
    edge = await world.addEdge(
      'north',
      { GATEHOUSE_SYNC_PAGE_SIZE: '10', GATEHOUSE_SYNC_REQUEST_TIMEOUT_MS: '60000' },
      { answers },
    );
  }, 120_000);
  afterAll(async () => {
    reader?.client.end(true);
    olderPage?.release();
    revokedPage?.release();
    await world.destroy();
  });

  /** A scan by the reader GATE-1 over the edge's MQTT broker: granted or the reason. */
  const mqttScan = async (value: string) => {
    if (!reader) {
      const creds = await readerLogin(edge);
      const client = await connect(`mqtt://127.0.0.1:${creds.mqtt.port}`, {
        username: creds.mqtt.username,
        password: creds.mqtt.password,
        clientId: 'GATE-1-test',
      });
      const box = inbox(client);
      expect(await subscribe(client, creds.mqtt.decisions_topic)).toEqual([1]);
      reader = { client, inbox: box, creds };
    }
    const id = `r-${Math.random().toString(36).slice(2, 10)}`;
    await reader.client.publishAsync(
      reader.creds.mqtt.scans_topic,
      JSON.stringify({ request_id: id, credential_value: value }),
      { qos: 1 },
    );
    const decision = (await reader.inbox.next((m) => m.payload.request_id === id, 5000)).payload;
    return decision.access_granted ? 'granted' : (decision.reason as string);
  };
  const restScan = async (value: string) => {
    const decision = await scan(edge.node, venue.entry, value);
    return decision.access_granted ? 'granted' : decision.reason;
  };
  const credentialOnEdge = async () => {
    const res = await edge.node.api('GET', `/attendees/${target.attendee}/credentials`);
    return res.status === 200
      ? (res.body.data as { id: number; status: string }[]).find((c) => c.id === target.credential)?.status
      : `http ${res.status}`;
  };

  it('never lets a page fetched before a revocation undo it, whichever arrives last', async () => {
    const held = await olderPage.reached; // the cloud answered it with the ticket active; the edge waits for it
    const others = changesOf(held).filter((c) => c.entity === 'credential' && c.data?.value !== 'REVOKED-1');
    expect(others.length).toBeGreaterThan(0);

    await world.cloud.api('DELETE', `/credentials/${target.credential}`);
    await until('the revocation on the edge', credentialOnEdge, (s) => s === 'revoked', 20_000);
    expect(await restScan('REVOKED-1')).toBe('invalid_credential');

    // The older page goes through and is written; the page with the revoked row is still held.
    olderPage.release();
    await until(
      'the held page written on the edge',
      () => restScan(String(others[0]!.data!.value)),
      (d) => d === 'granted',
      20_000,
    );
    expect((await edge.node.api('GET', '/sync/status')).body.data.cursor).not.toBeNull();
    expect(await credentialOnEdge()).toBe('revoked');
    expect(await mqttScan('REVOKED-1')).toBe('invalid_credential');
    expect(await restScan('REVOKED-1')).toBe('invalid_credential');

    // The rest of the pull, the revoked row again among it: the same.
    await revokedPage.reached;
    revokedPage.release();
    await until(
      'the pull done',
      () => edge.node.api('GET', '/sync/status'),
      (r) => r.body.data.last_download_at !== null,
      30_000,
    );
    expect(await restScan('M-39')).toBe('granted');
    expect(await credentialOnEdge()).toBe('revoked');
    expect(await restScan('REVOKED-1')).toBe('invalid_credential');
    expect(await mqttScan('REVOKED-1')).toBe('invalid_credential');
  }, 90_000);
});

/** The reader GATE-1's OTP login on the edge (docs/mqtt.md: reader login), as the admin reads the OTP. */
async function readerLogin(edge: Edge): Promise<ReaderCredentials> {
  const asked = await requester(edge.node.url)('POST', `${P}/readers/login`, { body: { reader_identifier: 'GATE-1' } });
  expect(asked.status).toBe(202);
  const logins = await edge.node.api('GET', '/readers/logins');
  const otp = (logins.body.data as { reader_identifier: string; otp: string }[]).find(
    (l) => l.reader_identifier === 'GATE-1',
  )!.otp;
  const verified = await requester(edge.node.url)('POST', '/api/v1/reader-otp/verify', {
    body: { otp, reader_identifier: 'GATE-1' },
  });
  expect(verified.status).toBe(200);
  return verified.body.data as ReaderCredentials;
}
