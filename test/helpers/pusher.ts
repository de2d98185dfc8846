import WebSocket from 'ws';
import { authString } from '../../src/realtime/protocol.js';
import type { TestAppliance } from './appliance.js';

// A raw protocol-7 client for tests that need to see frames and close codes exactly
// (pusher-js and laravel-echo are used where interoperability is the point).

export interface Frame {
  event: string;
  channel?: string;
  data?: any;
  user_id?: string | number;
}

export interface RawClient {
  ws: WebSocket;
  socketId: string;
  activityTimeout: number;
  frames: Frame[];
  /** The next frame with this event (already received or still to come). */
  next(event: string | string[], timeoutMs?: number): Promise<Frame>;
  send(event: string, data: unknown, channel?: string): void;
  subscribe(channel: string, auth?: string, channelData?: string): Promise<Frame>;
  closed: Promise<{ code: number; reason: string }>;
}

export const credentialsOf = (gh: TestAppliance) => gh.app.deps.realtime.credentials;

export function signChannel(gh: TestAppliance, socketId: string, channel: string, channelData?: string): string {
  const { key, secret } = credentialsOf(gh);
  return authString(key, secret, socketId, channel, channelData);
}

export function wsUrl(
  gh: TestAppliance,
  key = credentialsOf(gh).key,
  query = '?protocol=7&client=js&version=8.4.0&flash=false',
): string {
  return `${gh.url.replace('http', 'ws')}/app/${key}${query}`;
}

/** Opens a socket and collects frames; resolves once connection_established arrived (or the socket closed). */
export async function rawClient(url: string): Promise<RawClient> {
  const ws = new WebSocket(url);
  const frames: Frame[] = [];
  const waiters: { events: string[]; resolve: (f: Frame) => void }[] = [];
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  ws.on('message', (raw) => {
    const frame = JSON.parse(raw.toString()) as Frame;
    if (typeof frame.data === 'string') {
      try {
        frame.data = JSON.parse(frame.data);
      } catch {
        /* keep the string */
      }
    }
    const i = waiters.findIndex((w) => w.events.includes(frame.event));
    if (i >= 0) waiters.splice(i, 1)[0]!.resolve(frame);
    else frames.push(frame);
  });
  ws.on('error', () => {});
  const next = (event: string | string[], timeoutMs = 3000) => {
    const events = typeof event === 'string' ? [event] : event;
    const i = frames.findIndex((f) => events.includes(f.event));
    if (i >= 0) return Promise.resolve(frames.splice(i, 1)[0]!);
    return new Promise<Frame>((resolve, reject) => {
      const waiter = { events, resolve: (f: Frame) => (clearTimeout(timer), resolve(f)) };
      const timer = setTimeout(() => {
        waiters.splice(waiters.indexOf(waiter), 1);
        reject(new Error(`no ${events.join('/')} within ${timeoutMs} ms; got ${JSON.stringify(frames)}`));
      }, timeoutMs);
      waiters.push(waiter);
    });
  };
  const established = await Promise.race([
    next('pusher:connection_established').catch(() => null),
    closed.then(() => null),
  ]);
  const send = (event: string, data: unknown, channel?: string) =>
    ws.send(JSON.stringify({ event, data, ...(channel ? { channel } : {}) }));
  const client: RawClient = {
    ws,
    socketId: (established?.data?.socket_id as string) ?? '',
    activityTimeout: (established?.data?.activity_timeout as number) ?? 0,
    frames,
    next,
    send,
    closed,
    subscribe: async (channel, auth, channelData) => {
      send('pusher:subscribe', {
        channel,
        ...(auth ? { auth } : {}),
        ...(channelData ? { channel_data: channelData } : {}),
      });
      return next(['pusher_internal:subscription_succeeded', 'pusher:subscription_error', 'pusher:error']);
    },
  };
  return client;
}

/** Asks the appliance's /broadcasting/auth for a channel, as pusher-js does (form-encoded):
 * the status and the answer. `headers` carry a cookie session instead of the token. */
export async function authorizeChannel(
  gh: TestAppliance,
  credentials: { token?: string; headers?: Record<string, string> },
  socketId: string,
  channel: string,
) {
  const res = await gh.request('POST', '/broadcasting/auth', {
    ...(credentials.token ? { token: credentials.token } : {}),
    rawBody: new URLSearchParams({ socket_id: socketId, channel_name: channel }).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...credentials.headers },
  });
  return {
    status: res.status,
    body: res.body as { auth?: string; channel_data?: string; shared_secret?: string; reason?: string },
  };
}

/** Subscribes a raw client with an auth string from /broadcasting/auth (fails the test if refused there). */
export async function subscribeAs(
  gh: TestAppliance,
  c: RawClient,
  credentials: { token?: string; headers?: Record<string, string> },
  channel: string,
): Promise<Frame> {
  const { status, body } = await authorizeChannel(gh, credentials, c.socketId, channel);
  if (status !== 200) throw new Error(`/broadcasting/auth answered ${status} for ${channel}: ${JSON.stringify(body)}`);
  return c.subscribe(channel, body.auth, body.channel_data);
}
