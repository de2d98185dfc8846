import Pusher from 'pusher-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, client, createUser, startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { rawClient, subscribeAs, wsUrl, type Frame, type RawClient } from '../helpers/pusher.js';

// Access is re-checked when it changes, not only at subscribe (docs/realtime.md:
// "When access ends"). A user deactivated or deleted, a token revoked or expired, a cookie session
// ended: every subscription admitted with it ends before the answer that ended it, with
// pusher:error and close 4009. A membership removed: the subscriptions of that project end with
// 4210 (pusher-js reconnects and is refused the channel). The periodic re-check is only a
// backstop, so it is turned off here (an hour): what these tests see is event-driven.

const A = '/api/v1/projects/default/default';
const ACCESS = 'private-dashboard.project.default.access';
const BACKSTOP_OFF = { GATEHOUSE_PUSHER_ACCESS_RECHECK_INTERVAL_MS: '3600000' };

/** What these tests use of a pusher-js client (its default export types as a namespace here). */
type PusherClient = {
  connection: { bind(event: string, callback: (e: any) => void): void; state: string };
  subscribe(name: string): { bind(event: string, callback: (data: any) => void): void };
  disconnect(): void;
};

/** Rejects when the promise has not settled within `ms` (the test then fails saying what it waited for). */
const within = <T>(promise: Promise<T>, ms: number, what: string) =>
  Promise.race([
    promise,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms)),
  ]);

const granted = (frames: Frame[]) =>
  frames.filter((f) => f.event === 'AccessGranted').map((f) => f.data.attendee.last_name as string);

describe('access re-checked when it changes (WebSocket)', () => {
  let gh: TestAppliance;
  let admin: string;
  let api: ReturnType<typeof client>;
  let gate: number;
  let control: RawClient;
  let ticket = 0;
  const sockets: { close(): void }[] = [];

  /** A non-admin user who reaches the default team, with a token of theirs. */
  const member = async (email: string) => {
    const user = await createUser(gh, admin, email);
    expect((await api.post(`/api/v1/users/${user.id}/teams`, { team_slug: 'default' })).status).toBe(200);
    return user;
  };
  /** A granted scan; resolves once the administrator's socket has its AccessGranted (so it was published to every subscriber). */
  const scan = async () => {
    const n = ++ticket;
    expect(
      (await api.post(`${A}/access-points/${gate}/scan`, { credential_value: `TICKET-${n}`, scan_type: 'qr' })).body
        .access_granted,
    ).toBe(true);
    for (;;) if ((await control.next('AccessGranted')).data.attendee.last_name === `N${n}`) return `N${n}`;
  };
  const socket = async () => {
    const c = await rawClient(wsUrl(gh));
    sockets.push({ close: () => c.ws.close() });
    return c;
  };
  const sessionOf = async (email: string, password = 'a long enough password') => {
    const cookies = new Map<string, string>();
    const take = (h: Headers) =>
      h.getSetCookie().forEach((line) => {
        const [pair] = line.split(';');
        const i = pair!.indexOf('=');
        cookies.set(pair!.slice(0, i), pair!.slice(i + 1));
      });
    take((await fetch(`${gh.url}/sanctum/csrf-cookie`)).headers);
    const headers = () => ({
      cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; '),
      'x-xsrf-token': decodeURIComponent(cookies.get('XSRF-TOKEN')!),
    });
    const login = await gh.request('POST', '/api/v1/auth/session', { body: { email, password }, headers: headers() });
    expect(login.status).toBe(200);
    take(login.headers);
    return headers();
  };

  beforeAll(async () => {
    gh = await startAppliance(BACKSTOP_OFF);
    admin = await gh.token();
    api = client(gh, admin);
    const zone = (await api.post(`${A}/access-zones`, { name: 'Arena' })).body.data.id;
    gate = (await api.post(`${A}/access-points`, { name: 'North gate', access_zone_id: zone })).body.data.id;
    const people = Array.from({ length: 30 }, (_, i) => ({
      first_name: 'Guest',
      last_name: `N${i + 1}`,
      credential_value: `TICKET-${i + 1}`,
    }));
    expect((await api.post(`${A}/attendees/import`, people)).status).toBeLessThan(300);
    control = await socket();
    expect((await subscribeAs(gh, control, { token: admin }, ACCESS)).event).toBe(
      'pusher_internal:subscription_succeeded',
    );
  });
  afterAll(async () => {
    for (const s of sockets) s.close();
    await gh.destroy();
  });

  it("ends a deactivated user's pusher-js subscription before the deactivation answer: no later scan reaches it, and pusher-js is told 4009", async () => {
    const user = await member('deactivated@example.test');
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
        auth: { headers: { Authorization: `Bearer ${user.token}` } },
      },
    );
    sockets.push({ close: () => pusher.disconnect() });
    const received: string[] = [];
    const errors: any[] = [];
    const states: string[] = [];
    pusher.connection.bind('error', (e) => errors.push(e));
    pusher.connection.bind('state_change', (s) => states.push(s.current));
    const channel = pusher.subscribe(ACCESS);
    channel.bind('AccessGranted', (e) => received.push(e.attendee.last_name));
    await new Promise<void>((resolve, reject) => {
      channel.bind('pusher:subscription_succeeded', () => resolve());
      channel.bind('pusher:subscription_error', (e) => reject(new Error(JSON.stringify(e))));
    });
    const before = await scan();
    await expect.poll(() => received).toEqual([before]);

    expect((await api.put(`/api/v1/users/${user.id}`, { is_active: false })).status).toBe(200);
    await scan();
    // 4009 is in the range pusher-js does not reconnect from: it ends disconnected.
    await within(
      expect.poll(() => states, { timeout: 5000 }).toContain('disconnected'),
      6000,
      'pusher-js disconnected',
    );
    expect(received).toEqual([before]);
    const codes = errors.map((e) => (e.data ?? e.error?.data)?.code);
    expect(codes).toContain(4009);
  });

  it("ends the subscriptions of a revoked token with pusher:error and close 4009, and keeps those of the same user's other token", async () => {
    const user = await member('revoked@example.test');
    const second = await gh.token(undefined, 'revoked@example.test', 'a long enough password');
    const doomed = await socket();
    const kept = await socket();
    await subscribeAs(gh, doomed, { token: user.token }, ACCESS);
    await subscribeAs(gh, kept, { token: second }, ACCESS);

    expect((await gh.request('DELETE', '/api/v1/auth/token', { token: user.token })).status).toBe(200);
    const after = await scan();
    const closed = await within(doomed.closed, 5000, "the revoked token's socket closed");
    expect(closed.code).toBe(4009);
    expect(doomed.frames.find((f) => f.event === 'pusher:error')?.data).toMatchObject({
      code: 4009,
      message: expect.stringMatching(/token/i),
    });
    expect(granted(doomed.frames)).not.toContain(after);
    // The user's other token is untouched: its socket gets the scan.
    expect((await kept.next('AccessGranted')).data.attendee.last_name).toBe(after);
    expect(kept.ws.readyState).toBe(kept.ws.OPEN);
  });

  it('ends the subscriptions of a project a user was removed from with 4210, and refuses the channel when they ask again', async () => {
    const user = await member('removed@example.test');
    const c = await socket();
    await subscribeAs(gh, c, { token: user.token }, ACCESS);
    await subscribeAs(gh, c, { token: user.token }, 'private-console.project.default.default.devices');

    expect((await api.del(`/api/v1/users/${user.id}/teams/default`)).status).toBe(200);
    const after = await scan();
    const closed = await within(c.closed, 5000, "the removed member's socket closed");
    expect(closed.code).toBe(4210);
    expect(c.frames.find((f) => f.event === 'pusher:error')?.data).toMatchObject({ code: 4210 });
    expect(granted(c.frames)).not.toContain(after);
    // What pusher-js does on 4210: reconnect and ask again, which is refused.
    const again = await socket();
    const auth = await gh.request('POST', '/broadcasting/auth', {
      token: user.token,
      rawBody: new URLSearchParams({ socket_id: again.socketId, channel_name: ACCESS }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(auth.status).toBe(403);
  });

  it('ends the subscriptions of a deleted user', async () => {
    const user = await member('deleted@example.test');
    const c = await socket();
    await subscribeAs(gh, c, { token: user.token }, ACCESS);
    expect((await api.del(`/api/v1/users/${user.id}`)).status).toBe(204);
    const after = await scan();
    expect((await within(c.closed, 5000, "the deleted user's socket closed")).code).toBe(4009);
    expect(granted(c.frames)).not.toContain(after);
  });

  it('ends cookie-session subscriptions when the session logs out and when its user is deactivated', async () => {
    await member('session-out@example.test');
    const loggedOut = await socket();
    const outHeaders = await sessionOf('session-out@example.test');
    await subscribeAs(gh, loggedOut, { headers: outHeaders }, ACCESS);
    const deactivatedUser = await member('session-off@example.test');
    const deactivated = await socket();
    await subscribeAs(gh, deactivated, { headers: await sessionOf('session-off@example.test') }, ACCESS);

    expect((await gh.request('DELETE', '/api/v1/auth/session', { headers: outHeaders })).status).toBe(204);
    expect((await api.put(`/api/v1/users/${deactivatedUser.id}`, { is_active: false })).status).toBe(200);
    const after = await scan();
    for (const c of [loggedOut, deactivated]) {
      expect((await within(c.closed, 5000, 'the session socket closed')).code).toBe(4009);
      expect(granted(c.frames)).not.toContain(after);
    }
  });

  it("keeps everyone else's subscriptions", async () => {
    await scan();
    expect(control.ws.readyState).toBe(control.ws.OPEN);
  });
});

describe('the periodic access re-check (the backstop)', () => {
  it('ends the subscriptions of a token that expires while its socket is open', async () => {
    const clock = new ManualClock();
    const gh = await startAppliance({ GATEHOUSE_PUSHER_ACCESS_RECHECK_INTERVAL_MS: '200' }, { clock });
    try {
      const admin = await gh.token();
      expect((await client(gh, admin).put('/api/v1/settings', { token_expiry_minutes: 60 })).status).toBe(200);
      const c = await rawClient(wsUrl(gh));
      await subscribeAs(gh, c, { token: admin }, ACCESS);
      // Nothing announces an expiry: the re-check finds it.
      clock.advance(61 * 60_000);
      expect((await within(c.closed, 5000, "the expired token's socket closed")).code).toBe(4009);
    } finally {
      await gh.destroy();
    }
  });
});
