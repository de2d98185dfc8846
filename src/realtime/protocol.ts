import { createHmac, randomInt, timingSafeEqual } from 'node:crypto';

// The Pusher Channels protocol, version 7
// (https://pusher.com/docs/channels/library_auth_reference/pusher-websockets-protocol/): close codes, frames, socket
// ids, channel names and the auth signatures. docs/realtime.md.

/** Close codes in the protocol's ranges: 4000-4099 do not reconnect, 4100-4199 reconnect
 * after a back-off, 4200-4299 reconnect at once, 4300-4399 reconnect with back-off. */
export const CloseCode = {
  /** 4001: the app key in /app/{key} is not this server's. */
  unknownAppKey: 4001,
  /** 4004: the server's connection quota (pusher.maxConnections) is full. */
  overQuota: 4004,
  /** 4007: the client speaks a protocol older than 7. */
  unsupportedProtocol: 4007,
  /** 4009: the connection kept sending forged or refused subscriptions. */
  unauthorized: 4009,
  /** 4009 too ("connection is unauthorized"): the credential a subscription was admitted with
   * ended (user deactivated or deleted, token revoked or expired, session ended); pusher-js does
   * not reconnect, the user signs in again (docs/security.md, attack 1). */
  accessEnded: 4009,
  /** 4100: the client does not read what it is sent (send buffer over pusher.maxBufferedBytes). */
  overCapacity: 4100,
  /** 4200: the server is shutting down; reconnect. */
  shuttingDown: 4200,
  /** 4201: no activity and no answer to pusher:ping. */
  pongTimeout: 4201,
  /** 4210: what the user may read changed (a membership removed, administrator rights taken, the
   * project renamed): reconnect at once and authorize again; channels no longer allowed are
   * refused then, with 403, which Echo's .error() reports (docs/security.md, attack 1). */
  accessChanged: 4210,
  /** 4301: client events over pusher.clientEventsPerSecond. */
  clientEventRateLimit: 4301,
} as const;

export interface ServerFrame {
  event: string;
  channel?: string;
  /** Server to client data is always a JSON-encoded string (protocol 7). */
  data?: string;
  /** Client events on presence channels: the sender's id, with the type its channel_data gave. */
  user_id?: string | number;
}

/** One frame as the text a client receives. */
export function frame(event: string, data: unknown, channel?: string, userId?: string | number): string {
  const message: ServerFrame = { event };
  if (channel !== undefined) message.channel = channel;
  message.data = typeof data === 'string' ? data : JSON.stringify(data);
  if (userId !== undefined) message.user_id = userId;
  return JSON.stringify(message);
}

/** `pusher:error`: the client logs it; with a 4xxx code it also decides about reconnecting. */
export const errorFrame = (code: number | null, message: string) =>
  JSON.stringify({ event: 'pusher:error', data: { code, message } });

/** Socket ids look like `1234.5678`: pusher-js and the auth signature expect digits.digits. */
export function newSocketId(): string {
  return `${randomInt(1, 2 ** 31)}.${randomInt(1, 2 ** 31)}`;
}

export const SOCKET_ID = /^\d+\.\d+$/;

// Pusher: channel names at most 164 characters of [A-Za-z0-9_\-=@,.;].
const CHANNEL_NAME = /^[A-Za-z0-9_\-=@,.;]{1,164}$/;

export type ChannelKind = 'public' | 'private' | 'presence' | 'encrypted';

export function channelKind(name: string): ChannelKind {
  if (name.startsWith('private-encrypted-')) return 'encrypted';
  if (name.startsWith('private-')) return 'private';
  if (name.startsWith('presence-')) return 'presence';
  return 'public';
}

export function validChannelName(name: unknown): name is string {
  return typeof name === 'string' && CHANNEL_NAME.test(name) && !name.startsWith('#');
}

/** The string a private subscription proves: HMAC-SHA256(secret, `socket_id:channel[:channel_data]`) in hex. */
export function sign(secret: string, socketId: string, channel: string, channelData?: string): string {
  const subject = channelData === undefined ? `${socketId}:${channel}` : `${socketId}:${channel}:${channelData}`;
  return createHmac('sha256', secret).update(subject).digest('hex');
}

/** `key:signature`, as /broadcasting/auth answers it and pusher:subscribe carries it. */
export const authString = (key: string, secret: string, socketId: string, channel: string, channelData?: string) =>
  `${key}:${sign(secret, socketId, channel, channelData)}`;

/** Constant-time comparison of two strings (lengths checked first: timingSafeEqual throws otherwise). */
export function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
