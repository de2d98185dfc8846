import Pusher from 'pusher-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, createUser, startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { authorizeChannel, rawClient, signChannel, subscribeAs, wsUrl, type RawClient } from '../helpers/pusher.js';

// Channel names bind to one project (docs/realtime.md: "Channels and events").
// A bare-slug channel (`dashboard.project.summer.access`) authorized while only default/summer
// exists is bound to that project's id: when team-b/summer is created later, its events never
// reach the existing subscriber, plain or encrypted, while default/summer's still do. Once the
// slug is ambiguous the bare form is refused to everyone, administrators included.

const BARE = 'dashboard.project.summer.access';
const DEFAULT_SUMMER = '/api/v1/projects/default/summer';
const TEAM_B_SUMMER = '/api/v1/projects/team-b/summer';

type PusherClient = {
  connection: { bind(event: string, callback: (e: any) => void): void };
  subscribe(name: string): { bind(event: string, callback: (data: any) => void): void };
  disconnect(): void;
};

describe('channel names bound to one project', () => {
  let gh: TestAppliance;
  let admin: string;
  let api: ReturnType<typeof client>;
  let member: { id: number; token: string };
  const closers: (() => void)[] = [];

  /** A zone, a gate and one attendee per name in the project; answers the gate. */
  const venue = async (path: string, names: string[]) => {
    const zone = (await api.post(`${path}/access-zones`, { name: 'Arena' })).body.data.id;
    const gate = (await api.post(`${path}/access-points`, { name: 'Gate', access_zone_id: zone })).body.data.id;
    expect(
      (
        await api.post(
          `${path}/attendees/import`,
          names.map((n) => ({ first_name: 'Guest', last_name: n, credential_value: `T-${n}` })),
        )
      ).status,
    ).toBeLessThan(300);
    return gate as number;
  };
  const scan = async (path: string, gate: number, name: string) =>
    expect(
      (await api.post(`${path}/access-points/${gate}/scan`, { credential_value: `T-${name}`, scan_type: 'qr' })).body
        .access_granted,
    ).toBe(true);
  const openPusher = async (token: string) => {
    const port = Number(new URL(gh.url).port);
    const pusher = new (Pusher as unknown as new (key: string, options: unknown) => PusherClient)(
      gh.app.deps.realtime.credentials.key,
      {
        cluster: 'local',
        wsHost: '127.0.0.1',
        wsPort: port,
        forceTLS: false,
        enabledTransports: ['ws'],
        disableStats: true,
        authEndpoint: `${gh.url}/broadcasting/auth`,
        auth: { headers: { Authorization: `Bearer ${token}` } },
      },
    );
    closers.push(() => pusher.disconnect());
    await new Promise<void>((resolve) => pusher.connection.bind('connected', () => resolve()));
    return pusher;
  };
  /** Subscribes and collects the last names of AccessGranted events. */
  const follow = async (pusher: PusherClient, channel: string) => {
    const names: string[] = [];
    const c = pusher.subscribe(channel);
    c.bind('AccessGranted', (e) => names.push(e.attendee.last_name));
    await new Promise<void>((resolve, reject) => {
      c.bind('pusher:subscription_succeeded', () => resolve());
      c.bind('pusher:subscription_error', (e) => reject(new Error(JSON.stringify(e))));
    });
    return names;
  };
  const socket = async () => {
    const c = await rawClient(wsUrl(gh));
    closers.push(() => c.ws.close());
    return c;
  };

  beforeAll(async () => {
    gh = await startAppliance();
    admin = await gh.token();
    api = client(gh, admin);
    expect((await api.post('/api/v1/projects', { name: 'Summer', slug: 'summer' })).status).toBe(201);
    member = await createUser(gh, admin, 'default-staff@example.test');
    expect((await api.post(`/api/v1/users/${member.id}/teams`, { team_slug: 'default' })).status).toBe(200);
  });
  afterAll(async () => {
    for (const close of closers) close();
    await gh.destroy();
  });

  it("keeps a bare-slug subscription on the project it was authorized for when another team's project takes the slug", async () => {
    const defaultGate = await venue(DEFAULT_SUMMER, ['A1', 'A2']);
    // A member of the default team, and an administrator (who can read both projects), follow the bare name.
    const staff = await openPusher(member.token);
    const staffPlain = await follow(staff, `private-${BARE}`);
    const staffSealed = await follow(staff, `private-encrypted-${BARE}`);
    const boss = await openPusher(admin);
    const bossPlain = await follow(boss, `private-${BARE}`);

    expect((await api.post('/api/v1/teams', { name: 'Team B', slug: 'team-b' })).status).toBe(201);
    expect((await api.post('/api/v1/projects', { name: 'Summer', slug: 'summer', team_slug: 'team-b' })).status).toBe(
      201,
    );
    const teamBGate = await venue(TEAM_B_SUMMER, ['B1']);
    const teamB = await socket();
    await subscribeAs(gh, teamB, { token: admin }, 'private-dashboard.project.team-b.summer.access');

    await scan(TEAM_B_SUMMER, teamBGate, 'B1');
    expect((await teamB.next('AccessGranted')).data.attendee.last_name).toBe('B1'); // it was published
    await scan(DEFAULT_SUMMER, defaultGate, 'A1');
    // Each channel delivers in order: had team-b's event reached the bare name, it would come first.
    await expect.poll(() => staffPlain).toEqual(['A1']);
    await expect.poll(() => staffSealed).toEqual(['A1']);
    await expect.poll(() => bossPlain).toEqual(['A1']);
  });

  it('refuses the bare form once the slug names several projects, to administrators too; the team-qualified names still work', async () => {
    const c = await socket();
    for (const channel of [`private-${BARE}`, `private-encrypted-${BARE}`, 'presence-console.project.summer']) {
      const refused = await authorizeChannel(gh, { token: admin }, c.socketId, channel);
      expect(refused.status, channel).toBe(403);
      expect(refused.body.reason).toMatch(/several teams/);
    }
    for (const channel of [
      'private-dashboard.project.default.summer.access',
      'private-dashboard.project.team-b.summer.access',
    ]) {
      expect((await authorizeChannel(gh, { token: admin }, c.socketId, channel)).status, channel).toBe(200);
    }
  });

  it('authorizes at most 100 channels for one connection (asking again for one is not another), and refuses the 101st', async () => {
    // Every auth answer for a live socket is remembered with the socket, so there is a bound.
    for (let i = 1; i <= 11; i++)
      expect((await api.post('/api/v1/projects', { name: `Cap ${i}`, slug: `cap-${i}` })).status).toBe(201);
    const channels = Array.from({ length: 12 }, (_, i) => `default.${i === 0 ? 'default' : `cap-${i}`}`).flatMap(
      (p) => [
        ...['private-', 'private-encrypted-'].flatMap((k) => [
          `${k}dashboard.project.${p}.access`,
          `${k}dashboard.project.${p}.access-points`,
          `${k}console.project.${p}.occupancy`,
          `${k}console.project.${p}.devices`,
        ]),
        `presence-console.project.${p}`,
      ],
    );
    const c = await socket();
    const ask = (channel: string) => authorizeChannel(gh, { token: admin }, c.socketId, channel);
    for (const channel of channels.slice(0, 100)) expect((await ask(channel)).status, channel).toBe(200);
    expect((await ask(channels[0]!)).status).toBe(200);
    const refused = await ask(channels[100]!);
    expect(refused.status).toBe(403);
    expect(refused.body.reason).toMatch(/Too many channels/);
    // The socket subscribes with what it was given.
    expect((await c.subscribe(channels[0]!, (await ask(channels[0]!)).body.auth)).event).toBe(
      'pusher_internal:subscription_succeeded',
    );
  });

  it('refuses a bare-slug subscription signed elsewhere with the app secret while the slug is ambiguous', async () => {
    // A Laravel app holding the secret may authorize its own users; the server still binds what
    // it admits to one project, and an ambiguous name names none.
    const c: RawClient = await socket();
    const refused = await c.subscribe(`private-${BARE}`, signChannel(gh, c.socketId, `private-${BARE}`));
    expect(refused).toMatchObject({ event: 'pusher:subscription_error', data: { type: 'AuthError', status: 403 } });
    const qualified = 'private-dashboard.project.team-b.summer.access';
    expect((await c.subscribe(qualified, signChannel(gh, c.socketId, qualified))).event).toBe(
      'pusher_internal:subscription_succeeded',
    );
  });
});
