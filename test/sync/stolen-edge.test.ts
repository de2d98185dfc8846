import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authString } from '../../src/realtime/protocol.js';
import { requester } from '../helpers/appliance.js';
import { type Frame, rawClient } from '../helpers/pusher.js';
import { type Receiver, startReceiver } from '../helpers/receiver.js';
import { P, seedCloud, SyncWorld, until } from '../helpers/sync-world.js';

// The cloud as a stolen (or buggy) edge meets it (docs/security.md: a stolen edge): two
// projects on one cloud process, A (default/default) and B in another team, and uploads made
// straight to the cloud with A's sync token, as the documented protocol allows anyone holding
// it. What A's edge uploads may touch A's rows only: an id of B's is refused as if it did not
// exist (and recorded); a row it creates lies in its own id block; an access event naming B's
// things moves no count of B's, shows no name of B's and flags nothing of B's.

const B = '/api/v1/projects/team-b/venue-b';
const KEY = 'stolen-edge-key';
const SECRET = 'stolen-edge-secret';
const BLOCK = 2 ** 32;

describe('an edge uploading what is not its own (processes)', () => {
  const world = new SyncWorld();
  let receiver: Receiver;
  let a: { zone: number; entry: number; exit: number };
  let b: {
    zone: number;
    entry: number;
    type: number;
    guest: number;
    guestTicket: number;
    blocked: number;
    blockedTicket: number;
    block: number;
    spare: number;
    spareTicket: number;
  };
  let edgeA: { id: number; token: string };
  let edgeB: { id: number; token: string };

  const cloud = () => requester(world.cloud.url);
  const upload = (project: string, token: string, items: unknown[]) =>
    cloud()('POST', `${project}/sync/upload`, {
      token,
      headers: { 'Gatehouse-Sync-Protocol': '1' },
      body: { clock: { offset_ms: 0, synchronised: true }, backlog: 0, items },
    });
  const change = (event: string, data: Record<string, unknown>) => ({
    kind: 'change',
    uuid: randomUUID(),
    event,
    data,
    created_at: new Date().toISOString(),
  });
  const access = (
    refs: {
      access_point_id: number;
      access_zone_id: number;
      attendee_id: number;
      credential_id: number;
      reader_id?: number | null;
    },
    at: Date,
    movement: 'in' | 'out' = 'in',
  ) => ({
    kind: 'access',
    uuid: randomUUID(),
    reader_id: null,
    ...refs,
    credential_value: `V-${refs.credential_id}`,
    granted: true,
    reason: null,
    movement,
    scanned_at: at.toISOString(),
    decided_at: at.toISOString(),
    source: 'api',
  });
  const conflictsOf = async (project: string, kind: string) =>
    (await world.cloud.api('GET', `${project}/sync/conflicts?kind=${kind}&per_page=100`)).body.data as Record<
      string,
      any
    >[];
  const bZoneCount = async () =>
    (await world.cloud.api('GET', `${B}/access-zones/${b.zone}`)).body.data.current_count as number;
  const bAttendee = async (id: number) =>
    (await world.cloud.api('GET', `${B}/attendees/${id}`)).body.data as Record<string, any>;
  const bCredentials = async (id: number) =>
    ((await world.cloud.api('GET', `${B}/attendees/${id}/credentials`)).body.data ?? []) as Record<string, any>[];

  beforeAll(async () => {
    receiver = await startReceiver();
    await world.startCloud({
      GATEHOUSE_WEBHOOK_ALLOW_INSECURE: '1',
      GATEHOUSE_PUSHER_KEY: KEY,
      GATEHOUSE_PUSHER_SECRET: SECRET,
    });
    a = await seedCloud(world.cloud, 3);
    expect((await world.cloud.api('POST', '/api/v1/teams', { name: 'Team B', slug: 'team-b' })).status).toBe(201);
    expect(
      (await world.cloud.api('POST', '/api/v1/projects', { name: 'Venue B', slug: 'venue-b', team_slug: 'team-b' }))
        .status,
    ).toBe(201);
    const zone = (await world.cloud.api('POST', `${B}/access-zones`, { name: 'B hall', capacity: 3 })).body.data
      .id as number;
    const entry = (
      await world.cloud.api('POST', `${B}/access-points`, { name: 'B entry', access_zone_id: zone, direction: 'in' })
    ).body.data.id as number;
    const type = (await world.cloud.api('POST', `${B}/attendee-types`, { name: 'B guest', zone_ids: [zone] })).body.data
      .id as number;
    const person = async (name: string, value: string) => {
      const made = await world.cloud.api('POST', `${B}/attendees`, {
        first_name: name,
        last_name: 'Bsecret',
        email: `${name.toLowerCase()}@b.example`,
        attendee_type: 'b-guest',
      });
      expect(made.status, made.text).toBe(201);
      const ticket = await world.cloud.api('POST', `${B}/attendees/${made.body.data.id}/credentials`, {
        value,
        kind: 'barcode',
      });
      expect(ticket.status, ticket.text).toBe(201);
      return [made.body.data.id as number, ticket.body.data.id as number] as const;
    };
    const [guest, guestTicket] = await person('Beatrice', 'B-1');
    const [blocked, blockedTicket] = await person('Bruno', 'B-2');
    const [spare, spareTicket] = await person('Bianca', 'B-3');
    const listed = await world.cloud.api('POST', `${B}/blocklist`, { attendee_id: blocked, reason: 'B staff decided' });
    expect(listed.status, listed.text).toBe(201);
    b = {
      zone,
      entry,
      type,
      guest,
      guestTicket,
      blocked,
      blockedTicket,
      block: listed.body.data.id as number,
      spare,
      spareTicket,
    };
    const issue = async (project: string, name: string) => {
      const issued = await world.cloud.api('POST', `${project}/sync/edges`, { name });
      expect(issued.status, issued.text).toBe(201);
      return { id: issued.body.data.id as number, token: issued.body.data.token as string };
    };
    edgeA = await issue(P, 'stolen');
    edgeB = await issue(B, 'victim');
    const projectA = (await world.cloud.api('GET', P)).body.data.id as number;
    const hooked = await world.cloud.api('POST', '/api/v1/webhook/subscribe', {
      url: receiver.url,
      events: ['access.granted'],
      project_id: projectA,
    });
    expect(hooked.status, hooked.text).toBe(201);
  }, 120_000);
  afterAll(async () => {
    await world.destroy();
    await receiver?.close();
  });

  it("refuses a deletion, an edit and a revocation of another project's rows as if they did not exist, and records each", async () => {
    const items = [
      change('attendee.deleted', { id: b.blocked, attendee_id: b.blocked }),
      change('attendee.updated', {
        id: b.guest,
        attendee_id: b.guest,
        first_name: 'Mallory',
        previous_attributes: { first_name: 'Beatrice' },
      }),
      change('credential.revoked', { id: b.guestTicket, revoked_at: new Date().toISOString() }),
      change('attendee.deleted', { id: 987_654, attendee_id: 987_654 }), // held by no project
      change('credential.revoked', { id: 987_655 }),
    ];
    const res = await upload(P, edgeA.token, items);
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toMatchObject({ accepted: 5, refused: 5 });

    // B's rows as they were: the blocked attendee with their ticket and blocklist entry, the guest's name and ticket.
    expect(await bAttendee(b.blocked)).toMatchObject({ id: b.blocked, first_name: 'Bruno' });
    expect((await bCredentials(b.blocked)).map((c) => c.id)).toEqual([b.blockedTicket]);
    expect(((await world.cloud.api('GET', `${B}/blocklist`)).body.data as { id: number }[]).map((e) => e.id)).toContain(
      b.block,
    );
    expect(await bAttendee(b.guest)).toMatchObject({ first_name: 'Beatrice' });
    expect((await bCredentials(b.guest))[0]).toMatchObject({ id: b.guestTicket, status: 'active' });
    const scanned = await world.cloud.api('POST', `${B}/access-points/${b.entry}/scan`, { credential_value: 'B-2' });
    expect((scanned.body.data ?? scanned.body).reason).toBe('blocklisted');

    // Recorded on A, each as a refused change worded as for an id no project holds.
    const refused = (await conflictsOf(P, 'refused_change')).filter((c) => c.edge_id === edgeA.id);
    const about = (entity: string, id: number) => refused.find((c) => c.entity === entity && c.entity_id === id);
    for (const id of [b.blocked, b.guest, 987_654])
      expect(about('attendee', id), `refused attendee ${id}`).toBeDefined();
    for (const id of [b.guestTicket, 987_655])
      expect(about('credential', id), `refused credential ${id}`).toBeDefined();
    const wording = (c: Record<string, any>) => String(c.detail).replaceAll(String(c.entity_id), '#');
    expect(wording(about('attendee', b.blocked)!)).toBe(wording(about('attendee', 987_654)!));
    expect(wording(about('credential', b.guestTicket)!)).toBe(wording(about('credential', 987_655)!));
    for (const c of refused) expect(JSON.stringify(c)).not.toMatch(/another project|Bsecret|b\.example/);
    expect(await conflictsOf(B, 'refused_change')).toEqual([]);
  }, 60_000);

  it("lets an edge create rows only in its own id block: no upload moves the cloud's counter or takes another edge's ids", async () => {
    const top = BLOCK - 1;
    const inBlockOfB = edgeB.id * BLOCK + 7;
    const items = [
      change('attendee.created', {
        id: top,
        attendee_id: top,
        first_name: 'Top',
        last_name: 'Id',
        email: null,
        status: 'active',
        extra: {},
      }),
      change('attendee.created', {
        id: 12_345,
        attendee_id: 12_345,
        first_name: 'Low',
        last_name: 'Id',
        email: null,
        status: 'active',
        extra: {},
      }),
      change('attendee.created', {
        id: inBlockOfB,
        attendee_id: inBlockOfB,
        first_name: 'Squatter',
        last_name: 'Id',
        email: null,
        status: 'active',
        extra: {},
      }),
      change('credential.created', { id: top, attendee_id: top, value: 'TOP-1', kind: 'barcode', status: 'active' }),
      change('credential.created', {
        id: inBlockOfB + 1,
        attendee_id: inBlockOfB,
        value: 'SQUAT-1',
        kind: 'barcode',
        status: 'active',
      }),
    ];
    const res = await upload(P, edgeA.token, items);
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toMatchObject({ accepted: 5, refused: 5 });
    const refused = (await conflictsOf(P, 'refused_change')).filter((c) =>
      [top, 12_345, inBlockOfB, inBlockOfB + 1].includes(c.entity_id),
    );
    expect(refused.map((c) => c.entity_id).sort()).toEqual([12_345, top, top, inBlockOfB, inBlockOfB + 1].sort());
    for (const c of refused) expect(c.detail).toMatch(/block/);

    // Every project's creates go on under the cloud's own ids.
    for (const project of [P, B]) {
      for (let i = 0; i < 2; i++) {
        const made = await world.cloud.api('POST', `${project}/attendees`, {
          first_name: `After${i}`,
          last_name: 'Upload',
        });
        expect(made.status, made.text).toBe(201);
        expect(made.body.data.id).toBeLessThan(BLOCK);
        const ticket = await world.cloud.api('POST', `${project}/attendees/${made.body.data.id}/credentials`, {
          value: `AFTER-${project.length}-${i}`,
          kind: 'barcode',
        });
        expect(ticket.status, ticket.text).toBe(201);
        expect(ticket.body.data.id).toBeLessThan(BLOCK);
      }
    }

    // The victim's view: B's edge uploads its walk-in under the ids A's edge tried to take; it lands, with no conflict.
    const walkIn = await upload(B, edgeB.token, [
      change('attendee.created', {
        id: inBlockOfB,
        attendee_id: inBlockOfB,
        first_name: 'Walk',
        last_name: 'In',
        email: null,
        attendee_type_id: b.type,
        status: 'active',
        extra: {},
      }),
      change('credential.created', {
        id: inBlockOfB + 1,
        attendee_id: inBlockOfB,
        value: 'B-WALK',
        kind: 'barcode',
        status: 'active',
      }),
    ]);
    expect(walkIn.status, walkIn.text).toBe(200);
    expect(walkIn.body.data).toMatchObject({ accepted: 2, refused: 0 });
    expect(await bAttendee(inBlockOfB)).toMatchObject({ first_name: 'Walk' });
    expect((await bCredentials(inBlockOfB)).map((c) => c.value)).toEqual(['B-WALK']);
    expect(await conflictsOf(B, 'id_conflict')).toEqual([]);
    const door = await world.cloud.api('POST', `${B}/access-points/${b.entry}/scan`, { credential_value: 'B-WALK' });
    expect((door.body.data ?? door.body).access_granted).toBe(true);
  }, 60_000);

  it("keeps an access event naming another project's zone, holder or ticket flagged for review: it counts nothing, names no one and flags nothing of theirs", async () => {
    const ws = await rawClient(
      `${world.cloud.url.replace('http', 'ws')}/app/${KEY}?protocol=7&client=js&version=8.4.0&flash=false`,
    );
    const channel = 'private-dashboard.project.default.default.access';
    await ws.subscribe(channel, authString(KEY, SECRET, ws.socketId, channel));
    try {
      // B's genuine entry, from B's own edge.
      const genuine = access(
        { access_point_id: b.entry, access_zone_id: b.zone, attendee_id: b.spare, credential_id: b.spareTicket },
        new Date(Date.now() - 60_000),
      );
      expect((await upload(B, edgeB.token, [genuine])).body.data).toMatchObject({ accepted: 1 });
      const before = await bZoneCount();

      // A's edge: two entries into B's zone by B's guests, and one dated before B's genuine entry naming its holder.
      const forged = [
        access(
          { access_point_id: b.entry, access_zone_id: b.zone, attendee_id: b.guest, credential_id: b.guestTicket },
          new Date(),
        ),
        access(
          { access_point_id: b.entry, access_zone_id: b.zone, attendee_id: b.blocked, credential_id: b.blockedTicket },
          new Date(),
        ),
        access(
          { access_point_id: a.entry, access_zone_id: a.zone, attendee_id: b.spare, credential_id: b.spareTicket },
          new Date(Date.now() - 120_000),
        ),
      ];
      const res = await upload(P, edgeA.token, forged);
      expect(res.status, res.text).toBe(200);
      expect(res.body.data).toMatchObject({ accepted: 3 });

      // Kept on A, flagged for review with the reason; the conflict lists what was not A's.
      const onA = await world.cloud.events();
      for (const e of forged)
        expect(
          onA.find((s) => s.uuid === e.uuid),
          e.uuid,
        ).toMatchObject({ review: 'unknown_reference', granted: true });
      const flagged = (await conflictsOf(P, 'unknown_reference')).filter((c) =>
        forged.some((e) => e.uuid === c.event_id),
      );
      expect(flagged.length).toBe(3);
      expect(flagged.find((c) => c.event_id === forged[2]!.uuid)!.cloud_value).toEqual([
        { entity: 'attendee', id: b.spare },
        { entity: 'credential', id: b.spareTicket },
      ]);
      for (const c of flagged) expect(JSON.stringify(c)).not.toMatch(/Beatrice|Bruno|Bianca|Bsecret/);

      // B's zone moved by nothing, B's guest let in, B's genuine event not made a duplicate.
      expect(await bZoneCount()).toBe(before);
      const door = await world.cloud.api('POST', `${B}/access-points/${b.entry}/scan`, { credential_value: 'B-1' });
      expect((door.body.data ?? door.body).access_granted, door.text).toBe(true);
      const onB = (await world.cloud.api('GET', `${B}/access-events?per_page=100`)).body.data as Record<string, any>[];
      expect(onB.find((e) => e.uuid === genuine.uuid)).toMatchObject({ duplicate_of: null, review: null });
      expect(onB.some((e) => forged.some((f) => f.uuid === e.uuid))).toBe(false);

      // No name of B's on A's channel or A's webhooks.
      const frames: Frame[] = [];
      for (let i = 0; i < 3; i++) frames.push(await ws.next('AccessGranted', 10_000));
      for (const f of frames) expect(JSON.stringify(f.data)).not.toMatch(/Beatrice|Bruno|Bianca|Bsecret/);
      await until(
        "A's webhooks hear the three entries",
        () =>
          receiver.received.filter((r) => forged.some((f) => f.uuid === (r.body.data?.uuid ?? r.body.data?.event_id)))
            .length,
        (n) => n === 3,
      );
      for (const r of receiver.received) expect(JSON.stringify(r.body)).not.toMatch(/Beatrice|Bruno|Bianca|Bsecret/);
    } finally {
      ws.ws.close();
    }
  }, 60_000);

  it('answers creates with the next free id of its own, never 500, when an id it would take is held', async () => {
    // A cloud whose block an upload filled before edges were held to theirs: a row at its last id.
    await world.cloud.stop();
    world.cloud.withStore(
      (db) => {
        const projectA = db
          .prepare(
            "SELECT p.id FROM projects p JOIN teams t ON t.id = p.team_id WHERE t.slug = 'default' AND p.slug = 'default'",
          )
          .pluck()
          .get() as number;
        db.prepare(
          "INSERT INTO attendees (id, project_id, first_name, last_name, status, extra, version, created_at, updated_at) VALUES (?, ?, 'Seeded', 'Clash', 'active', '{}', 0, 'now', 'now')",
        ).run(BLOCK - 1, projectA);
        db.prepare(
          "INSERT INTO credentials (id, project_id, attendee_id, value, kind, status, version, created_at, updated_at) VALUES (?, ?, ?, 'SEEDED', 'barcode', 'active', 0, 'now', 'now')",
        ).run(BLOCK - 1, projectA, BLOCK - 1);
      },
      { readonly: false },
    );
    await world.restartCloud();
    const ids = { attendees: new Set<number>(), credentials: new Set<number>() };
    for (const project of [P, B]) {
      for (let i = 0; i < 3; i++) {
        const made = await world.cloud.api('POST', `${project}/attendees`, {
          first_name: `Late${i}`,
          last_name: 'Create',
        });
        expect(made.status, made.text).toBe(201);
        const ticket = await world.cloud.api('POST', `${project}/attendees/${made.body.data.id}/credentials`, {
          value: `LATE-${project.length}-${i}`,
          kind: 'barcode',
        });
        expect(ticket.status, ticket.text).toBe(201);
        expect(made.body.data.id).toBeLessThan(BLOCK - 1);
        expect(ticket.body.data.id).toBeLessThan(BLOCK - 1);
        ids.attendees.add(made.body.data.id);
        ids.credentials.add(ticket.body.data.id);
      }
    }
    expect([ids.attendees.size, ids.credentials.size]).toEqual([6, 6]);
  }, 60_000);
});
