import { randomUUID } from 'node:crypto';
import { type IncomingMessage, request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requester, type TestResponse } from '../helpers/appliance.js';
import { UPLOAD_MAX_BYTES, UPLOAD_MAX_ITEMS } from '../../sync/protocol.js';
import { P, seedCloud, SyncWorld } from '../helpers/sync-world.js';

// Floods from an edge (docs/security.md: a stolen edge; docs/sync.md: limits), against a cloud
// process with crafted requests made with edges' sync tokens: each edge has a budget of
// requests (429 with Retry-After past it, other edges served); an upload carries at most
// UPLOAD_MAX_ITEMS items in at most UPLOAD_MAX_BYTES (an edge sends a larger batch as several); a batch the cloud cannot take now (another
// of the same edge still under way, or sync.uploadsAtOnce batches already) is answered 503 with
// Retry-After before its body is read, and taken once sent again. A batch is held open by
// sending its headers (Expect: 100-continue) and only part of its body.

const SYNC_BUDGET = 20;

describe('floods from an edge (processes)', () => {
  const world = new SyncWorld();
  let venue: { zone: number; entry: number; exit: number };
  const tokens: string[] = [];

  /** A sync token of a new edge of the cloud's project (no edge process: the test speaks for it). */
  const issue = async (name: string) => {
    const res = await world.cloud.api('POST', '/sync/edges', { name });
    expect(res.status).toBe(201);
    tokens.push(res.body.data.token as string);
    return res.body.data.token as string;
  };
  const speak = (token: string, method: string, path: string, body?: unknown, raw?: string): Promise<TestResponse> =>
    requester(world.cloud.url)(method, path, {
      token,
      headers: { 'Gatehouse-Sync-Protocol': '1', ...(raw === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body }),
      ...(raw === undefined ? {} : { rawBody: raw }),
    });
  /** An entry by attendee `n` at the hall's door, as an edge uploads it; `pad` lengthens its credential value. */
  const entry = (n: number, pad = 0) => {
    const at = new Date(Date.now() - 60_000 + n).toISOString();
    return {
      kind: 'access',
      uuid: randomUUID(),
      access_point_id: venue.entry,
      access_zone_id: venue.zone,
      reader_id: null,
      credential_id: null,
      credential_value: `T-${(n % 20) + 1}${'x'.repeat(pad)}`,
      attendee_id: null,
      granted: false,
      reason: 'not_authorized',
      movement: null,
      scanned_at: at,
      decided_at: at,
      source: 'api',
    };
  };
  const batch = (items: unknown[]) => ({ clock: { offset_ms: 0, synchronised: true }, backlog: 0, items });
  const upload = (token: string, items: unknown[]) => speak(token, 'POST', `${P}/sync/upload`, batch(items));

  /** An upload whose headers and first half reached the cloud: `finish()` sends the rest and answers the cloud's answer. */
  const heldUpload = async (token: string, items: unknown[]) => {
    const body = Buffer.from(JSON.stringify(batch(items)));
    const url = new URL(`${P}/sync/upload`, world.cloud.url);
    const req = request(url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        'content-length': String(body.length),
        'gatehouse-sync-protocol': '1',
        expect: '100-continue',
      },
    });
    const answered = new Promise<{ status: number; text: string }>((resolve, reject) => {
      req.on('response', (res: IncomingMessage) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      });
      req.on('error', reject);
    });
    answered.catch(() => {}); // met in finish(); a test that never gets there must not leave it unhandled
    // The cloud says continue once the request reached its handler: it is past the gate by the next request.
    await new Promise<void>((resolve) => req.once('continue', resolve));
    req.write(body.subarray(0, body.length >> 1));
    return {
      async finish() {
        req.end(body.subarray(body.length >> 1));
        const { status, text } = await answered;
        return { status, body: JSON.parse(text) as Record<string, any> };
      },
    };
  };

  beforeAll(async () => {
    await world.startCloud({
      GATEHOUSE_RATE_LIMIT_SYNC: String(SYNC_BUDGET),
      GATEHOUSE_RATE_LIMIT_SYNC_WINDOW_SECONDS: '3600',
      GATEHOUSE_SYNC_UPLOADS_AT_ONCE: '2',
    });
    venue = await seedCloud(world.cloud, 20);
  }, 120_000);
  afterAll(() => world.destroy());

  it('answers 429 with Retry-After once an edge has spent its budget of requests, and serves other edges meanwhile', async () => {
    const greedy = await issue('greedy');
    const modest = await issue('modest');
    for (let i = 0; i < SYNC_BUDGET; i++) expect((await speak(greedy, 'GET', '/api/v1/sync/hello')).status).toBe(200);
    for (const [method, path] of [
      ['GET', '/api/v1/sync/hello'],
      ['GET', `${P}/sync/changes`],
      ['GET', `${P}/sync/revocations`],
      ['POST', `${P}/sync/upload`],
    ] as const) {
      const refused = await speak(greedy, method, path, method === 'POST' ? batch([entry(1)]) : undefined);
      expect([path, refused.status]).toEqual([path, 429]);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(refused.headers.get('x-ratelimit-limit')).toBe(String(SYNC_BUDGET));
      expect(refused.body).toMatchObject({ message: expect.any(String), retry_after: expect.any(Number) });
    }
    // Per edge: another edge's budget is its own.
    const other = await speak(modest, 'GET', '/api/v1/sync/hello');
    expect(other.status).toBe(200);
    expect(other.headers.get('x-ratelimit-remaining')).toBe(String(SYNC_BUDGET - 1));
  });

  it('refuses an upload of more items than one request may carry, and a body over the limit, storing nothing', async () => {
    const edge = await issue('bulky');
    const before = (await world.cloud.api('GET', '/access-events?per_page=1')).body.meta.total as number;
    const many = await upload(
      edge,
      Array.from({ length: UPLOAD_MAX_ITEMS + 1 }, (_, i) => entry(i)),
    );
    expect(many.status).toBe(422);
    expect(many.body.errors).toHaveProperty('items');
    // The most items, valid, of about 4.6 KB each: over the most bytes.
    const fat = JSON.stringify(batch(Array.from({ length: UPLOAD_MAX_ITEMS }, (_, i) => entry(i, 4000))));
    expect(fat.length).toBeGreaterThan(UPLOAD_MAX_BYTES);
    const heavy = await speak(edge, 'POST', `${P}/sync/upload`, undefined, fat);
    expect(heavy.status).toBe(413);
    expect(heavy.body.message).toMatch(new RegExp(`exceeds the limit of ${UPLOAD_MAX_BYTES} bytes`));
    expect((await world.cloud.api('GET', '/access-events?per_page=1')).body.meta.total).toBe(before);
    // The most one request may carry is taken.
    const most = await upload(
      edge,
      Array.from({ length: UPLOAD_MAX_ITEMS }, (_, i) => entry(i, 3000)),
    );
    expect(most.status).toBe(200);
    expect(most.body.data).toMatchObject({ accepted: UPLOAD_MAX_ITEMS, duplicates: 0 });
  }, 60_000);

  it('answers 503 with Retry-After to a second batch of an edge while its first is still under way, and takes it once sent again', async () => {
    const [north, south] = [await issue('north'), await issue('south')];
    const first = [entry(1), entry(2)];
    const second = [entry(3)];
    const held = await heldUpload(north, first);
    const refused = await upload(north, second);
    expect(refused.status).toBe(503);
    expect(refused.body).toMatchObject({
      message: expect.stringMatching(/another batch of this edge/),
      retry_after: expect.any(Number),
    });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    // Another edge is served meanwhile.
    expect((await upload(south, [entry(4)])).status).toBe(200);
    const done = await held.finish();
    expect(done.status).toBe(200);
    expect(done.body.data).toMatchObject({ accepted: 2, duplicates: 0 });
    const again = await upload(north, second);
    expect(again.status).toBe(200);
    expect(again.body.data).toMatchObject({ accepted: 1, duplicates: 0 });
  }, 30_000);

  it('answers 503 with Retry-After to a batch while sync.uploadsAtOnce batches of other edges are under way', async () => {
    const [east, west, third] = [await issue('east'), await issue('west'), await issue('third')];
    const a = await heldUpload(east, [entry(5)]);
    const b = await heldUpload(west, [entry(6)]);
    const refused = await upload(third, [entry(7)]);
    expect(refused.status).toBe(503);
    expect(refused.body).toMatchObject({ message: expect.stringMatching(/batches/), retry_after: expect.any(Number) });
    expect(refused.headers.get('retry-after')).not.toBeNull();
    expect((await a.finish()).status).toBe(200);
    expect((await b.finish()).status).toBe(200);
    const taken = await upload(third, [entry(7)]);
    expect(taken.status).toBe(200);
    // Still serving: the cloud's own API answers.
    expect((await requester(world.cloud.url)('GET', '/health')).status).toBe(200);
  }, 30_000);
});
