import { sign } from '@octokit/webhooks-methods';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, ManualClock, startAppliance, type TestAppliance, type TestResponse } from '../helpers/appliance.js';
import { createSource, ENDPOINTS, signedPost, type SourceKind } from '../helpers/signed-webhooks.js';
import { ReplayWindow, type KeptResponse } from '../../src/webhooks/replay-window.js';

// Retried webhooks are answered like the first time, never as an error
// (docs/webhooks-incoming.md: Retries). Senders resend the identical signed body when they got
// no answer in time or a 5xx; every request here is signed with @octokit/webhooks-methods.

const A = '/api/v1/projects/default/default';
const NOW = Date.parse('2026-11-23T12:00:00Z');

/** Reads one HTTP/1.1 response (Content-Length framed) off a socket. */
function readResponse(socket: Socket): Promise<{ status: number; replayed: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    let buffered = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      const end = buffered.indexOf('\r\n\r\n');
      if (end < 0) return;
      const lines = buffered.subarray(0, end).toString('latin1').split('\r\n');
      const header = (name: string) =>
        lines
          .find((l) => l.toLowerCase().startsWith(`${name}:`))
          ?.slice(name.length + 1)
          .trim();
      const length = Number(header('content-length') ?? 0);
      if (buffered.length < end + 4 + length) return;
      socket.off('data', onData);
      resolve({
        status: Number(lines[0]!.split(' ')[1]),
        replayed: header('x-svc-replayed'),
        body: buffered.subarray(end + 4, end + 4 + length).toString('utf8'),
      });
    };
    socket.on('data', onData).once('error', reject);
  });
}

/** Opens `n` keep-alive connections and has each answered once (so the appliance is reading
 * all of them), then writes the same POST on every one in the same turn. */
async function sendTogether(url: string, path: string, headers: Record<string, string>, body: string, n: number) {
  const { hostname, port } = new URL(url);
  const sockets = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<Socket>((resolve, reject) =>
          connect(Number(port), hostname, function (this: Socket) {
            resolve(this);
          }).once('error', reject),
        ),
    ),
  );
  const request = (lines: string[], payload = '') => [...lines, `Host: ${hostname}:${port}`, '', payload].join('\r\n');
  await Promise.all(sockets.map((socket) => (socket.write(request(['GET /health HTTP/1.1'])), readResponse(socket))));
  const post = request(
    [
      `POST ${path} HTTP/1.1`,
      'Content-Type: application/json',
      `Content-Length: ${Buffer.byteLength(body)}`,
      ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
    ],
    body,
  );
  const replies = sockets.map((socket) => readResponse(socket));
  for (const socket of sockets) socket.write(post);
  try {
    return await Promise.all(replies);
  } finally {
    for (const socket of sockets) socket.destroy();
  }
}

describe('retried webhooks, from outside', () => {
  const clock = new ManualClock(NOW);
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-replays-'));
  const secrets = {} as Record<SourceKind, string>;
  let gh: TestAppliance;
  let api: ReturnType<typeof client>;
  let door: number;
  const post = (kind: SourceKind, body: unknown) =>
    signedPost(gh, ENDPOINTS[kind], body, secrets[kind], { timestamp: Math.floor(clock.now() / 1000) });
  /** Sends the same body `n` times, one after the other, as a retrying sender does. */
  const sendTimes = async (kind: SourceKind, body: unknown, n: number) => {
    const answers: TestResponse[] = [];
    for (let i = 0; i < n; i++) answers.push(await post(kind, body));
    return answers;
  };
  const shape = (answers: TestResponse[]) =>
    answers.map((r) => ({ status: r.status, text: r.text, replayed: r.headers.get('x-svc-replayed') }));
  const total = async (path: string) => (await api.get(`${A}/${path}`)).body.meta.total as number;
  const partnerEvent = {
    event_type: 'registration.created',
    event_id: 'evt-retry-1',
    data: { registration_id: 'REG-R1', attendee: { first_name: 'Hedy', last_name: 'Lamarr' } },
  };
  const scanWithId = { reader_id: 'R-1', credential_value: 'TICKET-2', request_id: 'gw-req-1' };

  beforeAll(async () => {
    gh = await startAppliance({}, { clock, dataDir });
    const token = await gh.token();
    api = client(gh, token);
    const zone = (await api.post(`${A}/access-zones`, { name: 'Arena' })).body.data.id;
    door = (await api.post(`${A}/access-points`, { name: 'Gate', access_zone_id: zone, direction: 'both' })).body.data
      .id;
    await api.post(`${A}/readers`, { identifier: 'R-1', access_point_id: door });
    await api.post(
      `${A}/attendees/import`,
      [1, 2, 3, 4].map((n) => ({ first_name: `Guest ${n}`, credential_value: `TICKET-${n}` })),
    );
    await api.post(`${A}/gateways`, { identifier: 'GW-1' });
    for (const kind of Object.keys(ENDPOINTS) as SourceKind[])
      secrets[kind] = (await createSource(gh, token, kind)).secret;
  });
  afterAll(async () => {
    await gh.destroy();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('answers a partner event sent three times with three 200s of the same body, changing the venue once', async () => {
    const attendees = await total('attendees');
    const answers = await sendTimes('registration-partner', partnerEvent, 3);
    expect(answers[0]!.body).toMatchObject({ success: true, outcome: 'created', attendee_id: expect.any(Number) });
    expect(shape(answers)).toEqual([
      { status: 200, text: answers[0]!.text, replayed: null },
      { status: 200, text: answers[0]!.text, replayed: 'true' },
      { status: 200, text: answers[0]!.text, replayed: 'true' },
    ]);
    expect(await total('attendees')).toBe(attendees + 1);
    expect((await api.get(`${A}/attendees/${answers[0]!.body.attendee_id}/credentials`)).body.data).toHaveLength(1);
    // The log shows the retries as replays, not as fresh acceptances (newest first).
    const log = (
      await api.get(`${A}/incoming-webhooks?endpoint=${encodeURIComponent(ENDPOINTS['registration-partner'])}`)
    ).body.data;
    expect(log.map((e: { status: number; reason: string | null }) => [e.status, e.reason])).toEqual([
      [200, 'replayed'],
      [200, 'replayed'],
      [200, null],
    ]);
    expect((await gh.request('GET', '/metrics')).text).toMatch(/^gatehouse_webhook_replays_total [1-9]/m);
  });

  it('answers an access-event body sent three times with the same decision, making one access event', async () => {
    const events = await total('access-events');
    const answers = await sendTimes('access-event', { reader_id: 'R-1', credential_value: 'TICKET-1' }, 3); // no request_id: the gate alone
    expect(answers[0]!.body).toMatchObject({ success: true, access_granted: true });
    expect(shape(answers)).toEqual(
      [0, 1, 2].map((i) => ({ status: 200, text: answers[0]!.text, replayed: i === 0 ? null : 'true' })),
    );
    expect(await total('access-events')).toBe(events + 1);
    // The same scan in other bytes is another request: decided anew.
    const other = await post('access-event', { credential_value: 'TICKET-1', reader_id: 'R-1' });
    expect([other.status, other.headers.get('x-svc-replayed')]).toEqual([200, null]);
    expect(await total('access-events')).toBe(events + 2);
  });

  it('applies concurrent sends of one body once, each answered with the one decision', async () => {
    const events = await total('access-events');
    const body = JSON.stringify({ reader_id: 'R-1', credential_value: 'TICKET-3' });
    const headers = { 'X-Svc-Signature': await sign(secrets['access-event'], body) };
    // Eight connections open first, then the eight requests written in one go: the appliance
    // reads them together, the later ones while the first is still waiting for its event to be durable.
    const answers = await sendTogether(gh.url, ENDPOINTS['access-event'], headers, body, 8);
    expect(answers.map((r) => r.status)).toEqual(Array(8).fill(200));
    expect(new Set(answers.map((r) => r.body)).size).toBe(1);
    expect(JSON.parse(answers[0]!.body)).toMatchObject({ success: true, access_granted: true });
    expect(answers.filter((r) => r.replayed === undefined)).toHaveLength(1);
    expect(await total('access-events')).toBe(events + 1);
  });

  it('applies a body answered with an error when it is sent again: an unknown reader, then the reader is created', async () => {
    const events = await total('access-events');
    const body = { reader_id: 'R-LATE', credential_value: 'TICKET-4' };
    const refused = await sendTimes('access-event', body, 2);
    expect(shape(refused).map(({ status, replayed }) => [status, replayed])).toEqual([
      [404, null],
      [404, null],
    ]);
    expect(refused[1]!.body.error).toBe('unknown_reader');
    expect((await api.post(`${A}/readers`, { identifier: 'R-LATE', access_point_id: door })).status).toBe(201);
    const [applied, retried] = await sendTimes('access-event', body, 2);
    expect(applied!.body).toMatchObject({ success: true, access_granted: true });
    expect(applied!.headers.get('x-svc-replayed')).toBeNull();
    expect(shape([retried!])).toEqual([{ status: 200, text: applied!.text, replayed: 'true' }]);
    expect(await total('access-events')).toBe(events + 1);
  });

  it('answers gateway-status, attendee-sync and upload notices sent again with their first answer, applying each once', async () => {
    const gatewayAt = async () => (await api.get(`${A}/gateways`)).body.data[0].last_seen as string;
    const report = {
      gateway_id: 'GW-1',
      status: 'online',
      readers: [
        { reader_id: 'R-1', status: 'online' },
        { reader_id: 'R-GONE', status: 'online' },
      ],
    };
    const status = await post('gateway-status', report);
    const seen = await gatewayAt();
    clock.advance(1_000);
    expect(shape([await post('gateway-status', report)])).toEqual([
      { status: 200, text: status.text, replayed: 'true' },
    ]);
    expect(status.body.message).toContain('R-GONE');
    expect(await gatewayAt()).toBe(seen); // a report applied again would move last_seen

    const attendees = await total('attendees');
    const sync = {
      team_slug: 'default',
      project_slug: 'default',
      sync_mode: 'upsert',
      attendees: [{ external_id: 'CRM-9', first_name: 'Ada' }],
    };
    const synced = await sendTimes('attendee-sync', sync, 3);
    // Applied again, the upsert would answer skipped: 1; the retries get created: 1, the first answer.
    expect(synced[0]!.body.results).toMatchObject({ created: 1, updated: 0, skipped: 0 });
    expect(shape(synced)).toEqual(
      [0, 1, 2].map((i) => ({ status: 200, text: synced[0]!.text, replayed: i === 0 ? null : 'true' })),
    );
    expect(await total('attendees')).toBe(attendees + 1);

    const uploads = await total('uploads');
    const notice = {
      kind: 'storage#object',
      name: 'notes.txt',
      bucket: 'other',
      contentType: 'text/plain',
      size: '3',
      timeCreated: '2026-11-23T10:00:00Z',
    };
    const noticed = await sendTimes('upload-finalized', notice, 2);
    expect(shape(noticed)).toEqual(
      [0, 1].map((i) => ({ status: 200, text: noticed[0]!.text, replayed: i === 0 ? null : 'true' })),
    );
    expect(await total('uploads')).toBe(uploads + 1);
  });

  it("after the window, and after a restart, answers a body sent again from the durable receipts, and the same request in other bytes by the endpoint's own idempotency", async () => {
    const first = await post('access-event', scanWithId);
    expect(first.body.access_granted).toBe(true);
    const attendees = await total('attendees');
    const events = await total('access-events');
    const partnerFirst = (
      await api.get(
        `${A}/incoming-webhooks?endpoint=${encodeURIComponent(ENDPOINTS['registration-partner'])}&per_page=1`,
      )
    ).body.data;
    expect(partnerFirst).toHaveLength(1);

    clock.advance(301_000); // past timestampToleranceSeconds: the answer is no longer in memory
    // The identical body: its receipt answers it (test/webhooks/receipts.test.ts).
    const afterWindow = await post('registration-partner', partnerEvent);
    expect([afterWindow.status, afterWindow.headers.get('x-svc-replayed'), afterWindow.body.outcome]).toEqual([
      200,
      'true',
      'created',
    ]);
    // The same event in other bytes: by its event_id.
    const reworded = await post('registration-partner', { ...partnerEvent, timestamp: '2026-11-23T12:05:00Z' });
    expect([reworded.status, reworded.headers.get('x-svc-replayed'), reworded.body.outcome]).toEqual([
      200,
      null,
      'replayed',
    ]);

    await gh.stop();
    gh = await startAppliance({}, { clock, dataDir });
    api = client(gh, await gh.token());
    const afterRestart = await post('access-event', scanWithId);
    expect([afterRestart.status, afterRestart.headers.get('x-svc-replayed'), afterRestart.text]).toEqual([
      200,
      'true',
      first.text,
    ]);
    // The same request_id in other bytes: the request_id answers the first decision from the log.
    const sameId = await post('access-event', { ...scanWithId, scan_type: 'qr' });
    expect([sameId.status, sameId.headers.get('x-svc-replayed')]).toEqual([200, null]);
    expect(sameId.body).toEqual(first.body);
    expect((await post('registration-partner', partnerEvent)).body.outcome).toBe('created');
    expect([await total('attendees'), await total('access-events')]).toEqual([attendees, events]);
  });
});

describe('the replay window', () => {
  const limits = { windowMs: 300_000, maxEntries: 3, maxBytes: 1_000, maxAnswerBytes: 400, waitMs: 10_000 };
  const answer = (body: string, status = 200): KeptResponse => ({
    status,
    body,
    contentType: 'application/json; charset=utf-8',
  });
  const kept = async (window: ReplayWindow, key: string) => {
    const claim = await window.claim(key);
    if (claim.kind === 'claimed') window.settle(key, null); // put back as it was: not kept
    return claim.kind === 'answered' ? claim.answer.body : claim.kind;
  };

  it('gives an accepted answer again until the window ends, and forgets a refused body', async () => {
    const clock = new ManualClock(NOW);
    const window = new ReplayWindow(clock, limits);
    expect(await window.claim('a')).toEqual({ kind: 'claimed' });
    window.settle('a', answer('{"n":1}', 202));
    expect(await window.claim('a')).toEqual({ kind: 'answered', answer: answer('{"n":1}', 202) });
    expect(await window.claim('b')).toEqual({ kind: 'claimed' });
    window.settle('b', null);
    expect(await kept(window, 'b')).toBe('claimed');
    clock.advance(299_999);
    expect(await kept(window, 'a')).toBe('{"n":1}');
    clock.advance(1);
    expect(await kept(window, 'a')).toBe('claimed');
    expect([window.size, window.bytes]).toEqual([0, 0]);
  });

  it('keeps at most maxEntries answers and maxBytes of them, the oldest given up first, and no answer over maxAnswerBytes', async () => {
    const window = new ReplayWindow(new ManualClock(NOW), {
      ...limits,
      maxEntries: 3,
      maxBytes: 500,
      maxAnswerBytes: 400,
    });
    const put = async (key: string, bytes: number) => {
      expect(await window.claim(key)).toEqual({ kind: 'claimed' });
      window.settle(key, answer('x'.repeat(bytes)));
    };
    /** The length of each key's kept answer, null when none is kept. */
    const held = async (keys: string[]) => {
      const out: (number | null)[] = [];
      for (const key of keys) out.push(await kept(window, key).then((v) => (v === 'claimed' ? null : v.length)));
      return out;
    };
    for (const key of ['a', 'b', 'c', 'd']) await put(key, 100);
    expect(await held(['a', 'b', 'c', 'd'])).toEqual([null, 100, 100, 100]); // entry cap: 'a' went first
    await put('big', 401);
    expect([await held(['big']), window.stats.notKept]).toEqual([[null], 1]);
    await put('e', 200);
    expect(await held(['b', 'c', 'd', 'e'])).toEqual([null, 100, 100, 200]);
    await put('f', 350); // c, d, e, f: over 3 entries and 500 bytes: c, d and e go, oldest first
    expect(await held(['c', 'd', 'e', 'f'])).toEqual([null, null, null, 350]);
    expect([window.size, window.bytes, window.stats.evicted]).toEqual([1, 350, 5]);
  });

  it('makes a retry of a body still being handled wait for its answer, even one too large to keep', async () => {
    const window = new ReplayWindow(new ManualClock(NOW), limits);
    expect(await window.claim('a')).toEqual({ kind: 'claimed' });
    const retries = [window.claim('a'), window.claim('a')];
    window.settle('a', answer('y'.repeat(500)));
    expect(await Promise.all(retries)).toEqual(
      [0, 1].map(() => ({ kind: 'answered', answer: answer('y'.repeat(500)) })),
    );
    expect(await kept(window, 'a')).toBe('claimed'); // over maxAnswerBytes: given to the waiting retries only
  });

  it('lets one waiting retry take a body whose first request was refused, and answers busy past waitMs', async () => {
    const window = new ReplayWindow(new ManualClock(NOW), { ...limits, waitMs: 50 });
    await window.claim('a');
    const retry = window.claim('a');
    window.settle('a', null);
    expect(await retry).toEqual({ kind: 'claimed' }); // the refused first applied nothing: this one is handled
    expect(await window.claim('a')).toEqual({ kind: 'busy' }); // the retry is now in flight, and is not answered within 50 ms
    expect(window.stats.busy).toBe(1);
    window.settle('a', answer('{}'));
    expect(await kept(window, 'a')).toBe('{}');
  });
});
