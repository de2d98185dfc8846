import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeCursor, UPLOAD_MAX_BYTES, UPLOAD_MAX_ITEMS } from '../../sync/protocol.js';
import { PROTOCOL_VERSION, SUPPORTED_PROTOCOLS } from '../../src/http/sync-protocol-version.js';
import { requester } from '../helpers/appliance.js';
import { Node, until } from '../helpers/sync-world.js';

// A cloud the edge does not trust (docs/security.md: a stolen edge; docs/sync.md: what the edge
// takes from its cloud). An edge process meets a fake cloud, a small HTTP server in this test
// that answers hello, changes, revocations and upload properly until the test makes it answer
// an oversized, malformed or prototype-polluting body, or 503 with Retry-After. The edge reads
// no answer past sync.maxAnswerBytes (it closes the connection: the fake sees its answer cut),
// takes only answers that follow the protocol's schemas, says what failed in sync/status (not
// online meanwhile), stays up, and recovers once the fake answers properly again. An edge whose
// cloud URL is plain http outside loopback says once at start that its token travels in clear.
// A batch larger than one request may carry goes up as several.

const FAST_SYNC = {
  GATEHOUSE_SYNC_REQUEST_TIMEOUT_MS: '1500',
  GATEHOUSE_SYNC_BACKOFF_MIN_MS: '100',
  GATEHOUSE_SYNC_BACKOFF_MAX_MS: '500',
  GATEHOUSE_SYNC_LONG_POLL_SECONDS: '3',
};
const CAP = 1024 * 1024;
const PROJECT = '/api/v1/projects/default/default/sync';

type Answer = (req: IncomingMessage, res: ServerResponse, body: string) => void;

/** What the fake sent of an answer the edge closed before it was sent whole. */
interface Cut {
  path: string;
  written: number;
  total: number;
}

class FakeCloud {
  #server: Server | null = null;
  incarnation = 'fake-1';
  version = 0;
  /** Changes the next changes request gets (then none). */
  pending: unknown[] = [];
  /** The edge's feed position past the last batch stored here (hello answers it). */
  uploaded: unknown = null;
  readonly uploads: { at: number; items: number; feed: boolean; bytes: number }[] = [];
  readonly cuts: Cut[] = [];
  /** Answers the test swaps in, by route; absent: the proper one. */
  readonly answer: Partial<Record<'hello' | 'changes' | 'revocations' | 'upload', Answer>> = {};

  async start(): Promise<string> {
    this.#server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => this.#route(req, res, body));
    });
    await new Promise<void>((resolve) => this.#server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.#server!.address() as { port: number }).port}`;
  }

  async stop(): Promise<void> {
    this.#server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.#server ? this.#server.close(() => resolve()) : resolve()));
  }

  meta() {
    return {
      cloud: { incarnation: this.incarnation, high_water: this.version },
      server_time: new Date().toISOString(),
    };
  }

  #route(req: IncomingMessage, res: ServerResponse, body: string): void {
    const url = new URL(req.url ?? '/', 'http://fake');
    const route =
      url.pathname === '/api/v1/sync/hello'
        ? 'hello'
        : url.pathname.startsWith(PROJECT)
          ? (url.pathname.slice(PROJECT.length + 1) as 'changes' | 'revocations' | 'upload')
          : null;
    const answer: Answer =
      route === null
        ? (_q, r) => json(r, 404, { message: 'no such route' })
        : (this.answer[route] ?? this.#proper(route, url));
    answer(req, res, body);
  }

  /** What a cloud that follows the protocol answers. */
  #proper(route: 'hello' | 'changes' | 'revocations' | 'upload', url: URL): Answer {
    if (route === 'hello') {
      return (_req, res) =>
        json(res, 200, {
          data: {
            protocol: PROTOCOL_VERSION,
            supported_protocols: [...SUPPORTED_PROTOCOLS],
            edge: { id: 7, name: 'gate' },
            project: { id: 1, team_slug: 'default', slug: 'default', name: 'Default', timezone: 'UTC' },
            highest_ids: { attendee: null, credential: null },
            uploaded: this.uploaded,
            ...this.meta(),
          },
        });
    }
    if (route === 'upload') {
      return (_req, res, body) => {
        const batch = JSON.parse(body) as { items: unknown[]; feed?: { to: unknown } };
        this.uploads.push({
          at: performance.now(),
          items: batch.items.length,
          feed: batch.feed !== undefined,
          bytes: Buffer.byteLength(body),
        });
        if (batch.feed) this.uploaded = batch.feed.to;
        json(res, 200, { data: { accepted: batch.items.length, duplicates: 0, refused: 0, ...this.meta() } });
      };
    }
    return (_req, res) => {
      const changes = route === 'changes' ? this.pending.splice(0) : [];
      const page = () =>
        json(res, 200, { data: { changes, cursor: encodeCursor(this.version), has_more: false, ...this.meta() } });
      // A caught-up long poll: held a little, as a cloud with nothing new holds it.
      if (changes.length === 0 && Number(url.searchParams.get('wait') ?? 0) > 0) setTimeout(page, 300);
      else page();
    };
  }

  /** An answer of `total` bytes, streamed (no Content-Length) or declared up front, sent as fast as the edge reads it. */
  oversized(total: number, declared: boolean): Answer {
    return (req, res) => {
      const cut: Cut = { path: new URL(req.url ?? '/', 'http://fake').pathname, written: 0, total };
      res.writeHead(200, {
        'content-type': 'application/json',
        ...(declared ? { 'content-length': String(total) } : {}),
      });
      res.on('close', () => {
        if (cut.written < total) this.cuts.push(cut);
      });
      const chunk = Buffer.alloc(64 * 1024, ' ');
      const pump = () => {
        while (cut.written < total && !res.destroyed) {
          cut.written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        if (!res.destroyed) res.end();
      };
      res.write('{"data": {"changes": [');
      pump();
    };
  }
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
}

const raw =
  (text: string): Answer =>
  (_req, res) =>
    json(res, 200, text);

describe('a cloud the edge does not trust (an edge process, a fake cloud)', () => {
  const fake = new FakeCloud();
  let edge: Node;
  const status = async () => (await edge.api('GET', '/sync/status')).body.data as Record<string, any>;
  const online = () => until('the edge online', status, (s) => s.online === true && s.last_error === null, 30_000);
  const failing = (what: string, pattern: RegExp) =>
    until(`the edge to say ${what}`, status, (s) => s.online === false && pattern.test(String(s.last_error)), 30_000);
  const alive = async () => {
    expect(edge.proc.proc.exitCode).toBeNull();
    expect((await requester(edge.url)('GET', '/health')).status).toBe(200);
  };

  beforeAll(async () => {
    const url = await fake.start();
    edge = await new Node('edge', {
      GATEHOUSE_ROLE: 'edge',
      GATEHOUSE_CLOUD_URL: url,
      GATEHOUSE_SYNC_TOKEN: '7|fake',
      GATEHOUSE_SYNC_MAX_ANSWER_BYTES: String(CAP),
      ...FAST_SYNC,
    }).start();
    await until('the edge linked', status, (s) => s.edge_id === 7 && s.online === true, 30_000);
  }, 90_000);
  afterAll(async () => {
    await edge?.destroy();
    await fake.stop();
  });

  it('refuses an answer over sync.maxAnswerBytes without reading it whole, streamed or declared, says so, and recovers', async () => {
    fake.answer.changes = fake.oversized(400 * 1024 * 1024, false);
    const s = await failing('the answer is too large', /changes.*larger than 1048576 bytes/);
    expect(s.state).not.toBe('online');
    await until(
      'the streamed answer cut by the edge',
      () => fake.cuts.filter((c) => c.path.endsWith('/changes')),
      (cuts) => cuts.length > 0,
    );
    // The edge closed the connection once past its cap: of the 400 MB, a few were ever sent, none kept.
    for (const cut of fake.cuts) expect(cut.written).toBeLessThan(16 * CAP); // the cap, and what the sockets' buffers held

    await alive();

    fake.cuts.length = 0;
    fake.answer.changes = fake.oversized(400 * 1024 * 1024, true);
    await until(
      'the declared answer refused by the edge',
      () => fake.cuts.length,
      (n) => n > 0,
    );
    expect((await status()).last_error).toMatch(/larger than 1048576 bytes/);
    await alive();

    delete fake.answer.changes;
    await online();
  }, 60_000);

  it('refuses a page that does not follow the protocol (an entity named constructor, not JSON), says so while downloads fail, and recovers', async () => {
    fake.answer.changes = (_req, res) =>
      json(res, 200, {
        data: {
          changes: [{ entity: 'constructor', op: 'upsert', id: 1, version: 1, data: {} }],
          cursor: encodeCursor(1),
          has_more: false,
          ...fake.meta(),
        },
      });
    const s = await failing(
      'the page does not follow the protocol',
      /changes.*does not follow the sync protocol.*entity/,
    );
    expect(s.state).toBe('offline');
    await alive();

    fake.answer.changes = raw('<html>a captive portal</html>');
    await failing('the page is not JSON', /changes.*not JSON/);
    await alive();

    delete fake.answer.changes;
    await online();
  }, 60_000);

  it('takes a page with __proto__ keys for its own fields only', async () => {
    const now = new Date().toISOString();
    fake.version = 2;
    // As a hostile cloud writes it: __proto__ keys at the page, in a change and in its data.
    fake.answer.changes = raw(
      `{"data": {"__proto__": {"has_more": true}, "changes": [{"__proto__": {"op": "delete"}, "entity": "access_zone", "op": "upsert", "id": 5, "version": 2, "data": {"__proto__": {"capacity": 99}, "name": "Main hall", "slug": "main-hall", "capacity": null, "requires_ticket": 1, "created_at": "${now}", "updated_at": "${now}"}}], "cursor": "${encodeCursor(2)}", "has_more": false, "cloud": {"incarnation": "${fake.incarnation}", "high_water": 2}, "server_time": "${now}"}}`,
    );
    const zone = await until(
      'the zone on the edge',
      async () => (await edge.api('GET', '/access-zones')).body.data?.find((z: { id: number }) => z.id === 5),
      (z) => z !== undefined,
    );
    expect(zone).toMatchObject({ name: 'Main hall', capacity: null });
    delete fake.answer.changes;
    await online();
    expect((await status()).cursor).toBe(encodeCursor(2));
  }, 60_000);

  it('refuses a hello and an upload answer that do not follow the protocol, keeps the batch until one does, and says so meanwhile', async () => {
    // A new incarnation makes the edge say hello again.
    fake.answer.hello = (_req, res) =>
      json(res, 200, { data: { protocol: PROTOCOL_VERSION, edge: { id: 'seven' }, ...fake.meta() } });
    fake.incarnation = 'fake-2';
    await failing('the hello does not follow the protocol', /hello.*does not follow the sync protocol/);
    await alive();
    delete fake.answer.hello;
    await online();

    fake.answer.upload = (_req, res) => json(res, 200, { data: { accepted: 'all of them', ...fake.meta() } });
    expect((await edge.api('POST', '/attendees', { first_name: 'Walk', last_name: 'In' })).status).toBe(201);
    const s = await failing(
      'the upload answer does not follow the protocol',
      /upload.*does not follow the sync protocol/,
    );
    expect(s.backlog).toBeGreaterThan(0); // not acknowledged: sent again
    delete fake.answer.upload;
    await until('the batch acknowledged', status, (st) => st.online === true && st.backlog === 0);
  }, 60_000);

  it('waits as long as Retry-After says before sending a batch again, and stays online meanwhile', async () => {
    let deferred = 0;
    fake.answer.upload = (_req, res) => {
      deferred++;
      fake.uploads.push({ at: performance.now(), items: -1, feed: false, bytes: 0 });
      delete fake.answer.upload; // once
      json(
        res,
        503,
        { message: 'The cloud is applying another batch of this edge.', retry_after: 2 },
        { 'retry-after': '2' },
      );
    };
    const from = fake.uploads.length;
    expect((await edge.api('POST', '/attendees', { first_name: 'Later', last_name: 'In' })).status).toBe(201);
    await until(
      'the batch taken',
      () => fake.uploads.slice(from),
      (u) => u.length >= 2,
    );
    expect(deferred).toBe(1);
    const [refused, taken] = fake.uploads.slice(from);
    // The edge's own back-off is at most 500 ms here: the wait is the cloud's.
    expect(taken!.at - refused!.at).toBeGreaterThanOrEqual(1950);
    const s = await status();
    expect(s.online).toBe(true);
    expect(s.backlog).toBe(0);
  }, 30_000);

  it('sends a batch larger than one request may carry as several, its feed position with the last', async () => {
    const from = fake.uploads.length;
    // A bulk import is one item of the feed and goes up as every row it wrote: 1,200 items.
    const rows = Array.from({ length: 600 }, (_, i) => ({
      first_name: 'Bulk',
      last_name: `No${i}`,
      external_id: `B-${i}`,
      credential_value: `B-${i}`,
    }));
    expect((await edge.api('POST', '/attendees/import', rows)).status).toBe(200);
    await until(
      'the import acknowledged',
      status,
      (s) => s.backlog === 0 && fake.uploads.slice(from).some((u) => u.feed),
    );
    const sent = fake.uploads.slice(from);
    expect(sent.reduce((n, u) => n + u.items, 0)).toBe(1200);
    expect(sent.length).toBeGreaterThan(1);
    for (const u of sent) expect(u.items <= UPLOAD_MAX_ITEMS && u.bytes <= UPLOAD_MAX_BYTES).toBe(true);
    expect(sent.map((u) => u.feed)).toEqual([...sent.slice(1).map(() => false), true]);
  }, 30_000);

  it('warns once at start when its cloud URL is plain http outside this box, and not for loopback', async () => {
    expect(edge.proc.output.filter((l) => /plain http/.test(l))).toEqual([]);
    const far = await new Node('far edge', {
      GATEHOUSE_ROLE: 'edge',
      GATEHOUSE_CLOUD_URL: 'http://cloud.example.invalid:8080',
      GATEHOUSE_SYNC_TOKEN: '7|fake',
      ...FAST_SYNC,
    }).start();
    try {
      await far.proc.waitFor(/plain http/, 10_000);
      await new Promise((r) => setTimeout(r, 1000)); // a few failed rounds: still one line
      const lines = far.proc.output.filter((l) => /plain http/.test(l));
      expect(lines).toHaveLength(1);
      expect(JSON.parse(lines[0]!)).toMatchObject({ level: 40, cloud: 'http://cloud.example.invalid:8080' });
    } finally {
      await far.destroy();
    }
  }, 60_000);
});
