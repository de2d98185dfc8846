import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Edge, type Node, scan, seedCloud, SyncWorld, until } from '../helpers/sync-world.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

// Several cloud URLs (docs/sync.md: several cloud URLs): instances of one cloud on one database, simulated by one
// cloud process and TCP proxies in front of it on other ports, the edge given their URLs. The first proxy is closed
// while a batch is on its way: the edge goes on through the second, every event stored once, the pull too. A first
// URL that never answered, an answer of 4xx (no switch) then of 5xx (a switch), and a second URL that reaches
// another run of the cloud on the same data (another incarnation: nothing found behind). Real processes.

const metric = (text: string, name: string) =>
  Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
const uuids = (events: Record<string, unknown>[]) => events.map((e) => e.uuid as string).sort();
const status = async (edge: Edge) => (await edge.node.api('GET', '/sync/status')).body.data;

/** The edge's backlog drained, and the cloud holds each of the edge's events once (by uuid), no other of its edge. */
async function storedOnce(edge: Edge, cloud: Node): Promise<void> {
  await until(
    "the edge's backlog to drain",
    () => status(edge),
    (s) => s.online === true && s.backlog === 0,
    60_000,
    200,
  );
  const mine = uuids(await edge.node.events());
  const theirs = async () => uuids((await cloud.events()).filter((e) => e.edge_id === edge.id));
  await until(
    `the cloud to hold the edge's ${mine.length} events`,
    theirs,
    (t) => t.length >= mine.length,
    30_000,
    500,
  );
  const held = await theirs();
  expect(new Set(held).size).toBe(held.length);
  expect(held).toEqual(mine);
}

/** A port nothing listens on: connections to it are refused. */
async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** An HTTP server standing where an instance of the cloud should: it answers every request `answer.status`. */
async function impostor(): Promise<{
  url: string;
  requests: number;
  answer: { status: number; headers?: Record<string, string> };
  close(): Promise<void>;
}> {
  const me = {
    url: '',
    requests: 0,
    answer: { status: 404 } as { status: number; headers?: Record<string, string> },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  const server: Server = createServer((req, res) => {
    me.requests++;
    req.resume();
    const { status, headers = {} } = me.answer;
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify({ message: `answered ${status} by the test` }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  me.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return me;
}

describe('several cloud URLs (processes: one cloud, proxies in front of it)', () => {
  const world = new SyncWorld();
  const closers: (() => Promise<unknown>)[] = [];
  let venue: { zone: number; entry: number; exit: number };

  const proxy = async () => {
    const p = new TcpProxy(world.cloud.port);
    await p.start();
    closers.push(() => p.stop());
    return p;
  };
  /** An edge given `urls` as GATEHOUSE_CLOUD_URL, once it holds the cloud's tickets. */
  const edgeOn = async (name: string, urls: string[], env: Record<string, string> = {}) => {
    const edge = await world.addEdge(name, { GATEHOUSE_CLOUD_URL: urls.join(','), ...env });
    await until(
      `the tickets on ${name}`,
      () => edge.node.api('GET', '/attendees?search=X-300'),
      (r) => r.status === 200 && r.body.data.length === 1,
      60_000,
    );
    return edge;
  };
  const switchLines = (edge: Edge) => edge.node.proc.output.filter((l) => l.includes('cloud URL switched'));

  beforeAll(async () => {
    await world.startCloud();
    venue = await seedCloud(world.cloud, 300);
  }, 120_000);
  afterAll(async () => {
    await world.destroy();
    for (const close of closers) await close();
  });

  it('goes on through the second URL when the first is closed mid-upload: each event once, the pull too', async () => {
    const [first, second] = [await proxy(), await proxy()];
    const [firstUrl, secondUrl] = [first.url, second.url];
    // Requests given up after 10 s, not 1.5: the first URL is left because it is closed, not because it was slow.
    const edge = await edgeOn('north', [first.url, second.url], {
      GATEHOUSE_SYNC_UPLOAD_BATCH: '50',
      GATEHOUSE_SYNC_REQUEST_TIMEOUT_MS: '10000',
    });
    expect(await status(edge)).toMatchObject({ online: true, cloud_url: first.url });
    expect(second.connections).toBe(0);

    const cloudHeld = async () => (await world.cloud.events()).filter((e) => e.edge_id === edge.id).length;
    for (let i = 1; i <= 100; i++) await scan(edge.node, i % 5 === 0 ? venue.exit : venue.entry, `T-${i}`);
    await storedOnce(edge, world.cloud);
    const duplicatesBefore = metric(
      (await world.cloud.api('GET', '/metrics')).text,
      'gatehouse_sync_received_duplicates_total',
    );
    // While the doors go on, a batch reaches the cloud through the first URL, whose answer never comes back; then
    // that URL is gone (its connections reset, new ones refused).
    first.set('drop-answers');
    const heldBefore = await cloudHeld();
    const scanning = (async () => {
      for (let i = 101; i <= 300; i++) await scan(edge.node, venue.entry, `T-${i}`);
    })();
    await until('a batch on the cloud, unanswered', cloudHeld, (n) => n > heldBefore, 30_000, 20);
    await first.stop();
    await scanning;

    await storedOnce(edge, world.cloud);
    expect(await cloudHeld()).toBe(300);
    // The batch whose answer was lost went again, through the second URL, and was stored once.
    expect(
      metric((await world.cloud.api('GET', '/metrics')).text, 'gatehouse_sync_received_duplicates_total'),
    ).toBeGreaterThan(duplicatesBefore);
    expect(second.connections).toBeGreaterThan(0);
    const after = await status(edge);
    expect(after).toMatchObject({ online: true, cloud_url: second.url, cloud_rollback: null });
    expect(switchLines(edge)).toHaveLength(1);
    expect(switchLines(edge)[0]).toContain(`"from":"${firstUrl}"`);
    expect(switchLines(edge)[0]).toContain(`"to":"${secondUrl}"`);

    // The pull goes on from its cursor: a ticket made on the cloud now admits at the edge.
    const made = await world.cloud.api('POST', '/attendees', {
      first_name: 'After',
      last_name: 'Switch',
      attendee_type: 'guest',
      external_id: 'X-AFTER',
    });
    expect(made.status).toBe(201);
    const ticket = await world.cloud.api('POST', `/attendees/${made.body.data.id}/credentials`, {
      kind: 'qr',
      value: 'T-AFTER',
    });
    expect(ticket.status).toBe(201);
    await until(
      'the new ticket on the edge',
      () => edge.node.api('GET', `/attendees/${made.body.data.id}/credentials`),
      (r) => r.status === 200 && r.body.data.length === 1,
      30_000,
      200,
    );
    expect((await scan(edge.node, venue.entry, 'T-AFTER')).access_granted).toBe(true);
    expect((await status(edge)).cloud_url).toBe(second.url);
    await edge.node.destroy();
  }, 240_000);

  it('links through the second URL when the first never answered', async () => {
    const dead = `http://127.0.0.1:${await deadPort()}`;
    const second = await proxy();
    const edge = await edgeOn('south', [dead, second.url]);
    expect(await status(edge)).toMatchObject({ online: true, cloud_url: second.url, edge_id: edge.id });
    expect(switchLines(edge)).toHaveLength(1);
    expect(switchLines(edge)[0]).toMatch(/ECONNREFUSED/);
    for (let i = 1; i <= 20; i++) await scan(edge.node, venue.entry, `T-${i}`);
    await storedOnce(edge, world.cloud);
    await edge.node.destroy();
  }, 180_000);

  it('stays on a URL that answers 4xx (or 503 with Retry-After), and leaves it when it answers 502', async () => {
    const first = await impostor();
    closers.push(() => first.close());
    const second = await proxy();
    const edge = await world.addEdge('west', {
      GATEHOUSE_CLOUD_URL: `${first.url},${second.url}`,
      GATEHOUSE_SYNC_REQUEST_TIMEOUT_MS: '10000', // no answer of the first URL is late, on a busy machine too
    });
    await until(
      'a few 404s',
      () => first.requests,
      (n) => n >= 3,
      30_000,
    );
    const refused = await until(
      'the 404 in the status',
      () => status(edge),
      (s) => /404/.test(s.last_error ?? ''),
      30_000,
    );
    expect(refused).toMatchObject({ online: false, cloud_url: first.url });
    first.answer = { status: 503, headers: { 'retry-after': '0' } };
    const before = first.requests;
    await until(
      'a few 503s',
      () => first.requests,
      (n) => n >= before + 3,
      30_000,
    );
    expect(second.connections).toBe(0);
    expect((await status(edge)).cloud_url).toBe(first.url);
    expect(switchLines(edge)).toHaveLength(0);

    first.answer = { status: 502 };
    await until(
      'the edge online through the second URL',
      () => status(edge),
      (s) => s.online === true && s.cloud_url === second.url && s.edge_id === edge.id,
      30_000,
    );
    expect(switchLines(edge)[0]).toMatch(/502/);
    await edge.node.destroy();
  }, 180_000);

  it('finds nothing behind when the second URL reaches another run of the cloud on the same data', async () => {
    const [first, second] = [await proxy(), await proxy()];
    const edge = await edgeOn('east', [first.url, second.url]);
    for (let i = 1; i <= 20; i++) await scan(edge.node, venue.entry, `T-${i}`);
    await storedOnce(edge, world.cloud);
    // The first instance goes away; another, started anew on the same database (a new incarnation), is behind the second.
    await first.stop();
    await world.cloud.stop();
    await world.cloud.start();
    second.targetPort = world.cloud.port;
    for (let i = 21; i <= 40; i++) await scan(edge.node, venue.entry, `T-${i}`);
    await storedOnce(edge, world.cloud);
    expect(await status(edge)).toMatchObject({ online: true, cloud_url: second.url, cloud_rollback: null });
    expect(edge.node.proc.output.some((l) => l.includes('the cloud started again'))).toBe(true);
    expect(edge.node.proc.output.some((l) => l.includes('the cloud is behind this edge'))).toBe(false);
  }, 180_000);
});
