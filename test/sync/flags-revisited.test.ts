import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Receiver, startReceiver } from '../helpers/receiver.js';
import { type Edge, scan, seedCloud, SyncWorld, until } from '../helpers/sync-world.js';

// Flags are a function of the merged history by corrected time (docs/sync.md: conflicts): a
// late arrival that changes a holder's movement just before an entry clears or raises that
// entry's double-entry flag, and the change is announced (sync.conflict with cleared_at). A
// cloud and three edges as processes, each link cut and restored by the test; the cloud's
// outgoing webhooks are read by a receiver.

const down = (edge: Edge) =>
  until(
    `${edge.node.name}'s link down`,
    () => edge.node.api('GET', '/sync/status'),
    (r) => r.body.data.online === false,
    20_000,
  );
const drained = (edge: Edge) =>
  until(
    `${edge.node.name} uploaded everything`,
    () => edge.node.api('GET', '/sync/status'),
    (r) => r.body.data.online === true && r.body.data.backlog === 0,
    30_000,
  );
/** Far more than two edges' clock offsets can differ on one machine: the scans' order is the real one. */
const apart = () => new Promise((r) => setTimeout(r, 300));

type Conflict = {
  id: number;
  event_id: string;
  duplicate_of: string | null;
  edge_id: number;
  cleared_at: string | null;
};

describe('flags revisited (processes)', () => {
  const world = new SyncWorld();
  let a: Edge;
  let b: Edge;
  let c: Edge;
  let venue: { zone: number; entry: number; exit: number };
  let receiver: Receiver;

  const cloudEvent = async (uuid: string) => (await world.cloud.events()).find((e) => e.uuid === uuid);
  /** An edge reports an empty backlog before a scan just made is in it: wait for the event itself. */
  const onCloud = (uuid: string) =>
    until(
      `${uuid} on the cloud`,
      () => cloudEvent(uuid),
      (e) => e !== undefined,
    );
  const doubles = async () =>
    (await world.cloud.api('GET', '/sync/conflicts?kind=duplicate_entry&per_page=100')).body.data as Conflict[];
  const inside = async () =>
    (await world.cloud.api('GET', `/access-zones/${venue.zone}`)).body.data.current_count as number;
  /** The sync.conflict deliveries so far, as their data (the conflict). */
  const announced = () =>
    receiver.received.filter((r) => r.body.event === 'sync.conflict').map((r) => r.body.data as Conflict);

  beforeAll(async () => {
    receiver = await startReceiver();
    await world.startCloud({ GATEHOUSE_WEBHOOK_ALLOW_INSECURE: 'true' });
    venue = await seedCloud(world.cloud, 20);
    const project = (await world.cloud.api('GET', '')).body.data.id as number;
    const sub = await world.cloud.api('POST', '/api/v1/webhook/subscribe', {
      project_id: project,
      url: receiver.url,
      events: ['sync.conflict'],
    });
    expect(sub.status, sub.text).toBe(201);
    a = await world.addEdge('north');
    b = await world.addEdge('south');
    c = await world.addEdge('east');
    for (const e of [a, b, c])
      await until(
        'the tickets on the edge',
        () => e.node.api('GET', '/attendees?search=X-20'),
        (r) => r.body.data?.length === 1,
        60_000,
      );
  }, 180_000);
  afterAll(async () => {
    await world.destroy();
    await receiver?.close();
  });

  it("clears a double entry once the other edge's exit between the two entries arrives, keeps the conflict as cleared, announces it, and counts the person in once", async () => {
    const before = await inside();
    const first = await scan(a.node, venue.entry, 'T-10'); // online: on the cloud at once
    await onCloud(first.event_id);
    a.proxy.set('cut');
    b.proxy.set('cut');
    await Promise.all([down(a), down(b)]);
    const exit = await scan(a.node, venue.exit, 'T-10');
    await apart();
    const second = await scan(b.node, venue.entry, 'T-10'); // south never heard of the first entry
    expect([first.access_granted, exit.access_granted, second.access_granted]).toEqual([true, true, true]);

    // South reconnects first: on what the cloud knows, its entry repeats north's.
    b.proxy.set('pass');
    await drained(b);
    expect((await onCloud(second.event_id))!.duplicate_of).toBe(first.event_id);
    const [raised] = (await doubles()).filter((d) => d.event_id === second.event_id);
    expect(raised).toMatchObject({ duplicate_of: first.event_id, edge_id: b.id, cleared_at: null });
    await until('the flag announced', announced, (list) =>
      list.some((d) => d.id === raised!.id && d.cleared_at === null),
    );

    // North's exit arrives: it sits between the two entries, so the second is no double entry.
    a.proxy.set('pass');
    await drained(a);
    const cleared = await until(
      'the flag cleared',
      () => cloudEvent(second.event_id),
      (e) => e?.duplicate_of === null,
    );
    expect(cleared!.edge_id).toBe(b.id);
    const kept = (await doubles()).filter((d) => d.event_id === second.event_id);
    expect(kept).toEqual([
      expect.objectContaining({ id: raised!.id, duplicate_of: first.event_id, cleared_at: expect.any(String) }),
    ]);
    const told = await until('the clearing announced', announced, (list) =>
      list.some((d) => d.id === raised!.id && d.cleared_at !== null),
    );
    expect(told.filter((d) => d.id === raised!.id).map((d) => (d.cleared_at === null ? 'raised' : 'cleared'))).toEqual([
      'raised',
      'cleared',
    ]);
    expect(await inside()).toBe(before + 1); // in, out, in: inside, once
  }, 120_000);

  it('moves a double entry to the late entry at a third edge that lands just before it: the old flag cleared, the late entry and the later one flagged', async () => {
    const before = await inside();
    const first = await scan(a.node, venue.entry, 'T-11');
    await onCloud(first.event_id);
    for (const e of [a, b, c]) e.proxy.set('cut');
    await Promise.all([down(a), down(b), down(c)]);
    const late = await scan(c.node, venue.entry, 'T-11');
    await apart();
    const last = await scan(b.node, venue.entry, 'T-11');
    expect([first.access_granted, late.access_granted, last.access_granted]).toEqual([true, true, true]);

    b.proxy.set('pass'); // the last entry arrives first and repeats the first
    await drained(b);
    expect((await onCloud(last.event_id))!.duplicate_of).toBe(first.event_id);
    const [old] = (await doubles()).filter((d) => d.event_id === last.event_id);

    c.proxy.set('pass'); // the late one lands between them
    a.proxy.set('pass');
    await drained(c);
    await until(
      'the flag moved',
      () => cloudEvent(last.event_id),
      (e) => e?.duplicate_of === late.event_id,
    );
    expect((await cloudEvent(late.event_id))!.duplicate_of).toBe(first.event_id);
    expect((await cloudEvent(first.event_id))!.duplicate_of).toBeNull();
    const now = (await doubles()).filter((d) => [last.event_id, late.event_id].includes(d.event_id));
    expect(now).toEqual([
      expect.objectContaining({
        id: old!.id,
        event_id: last.event_id,
        duplicate_of: first.event_id,
        edge_id: b.id,
        cleared_at: expect.any(String),
      }),
      expect.objectContaining({
        event_id: late.event_id,
        duplicate_of: first.event_id,
        edge_id: c.id,
        cleared_at: null,
      }),
      expect.objectContaining({
        event_id: last.event_id,
        duplicate_of: late.event_id,
        edge_id: b.id,
        cleared_at: null,
      }),
    ]);
    await until('every change announced', announced, (list) =>
      now.every((n) => list.some((d) => d.id === n.id && d.cleared_at === n.cleared_at)),
    );
    expect(await inside()).toBe(before + 1);
  }, 120_000);
});
