import type { WebSocket } from 'ws';
import { JsonDepthError, MAX_JSON_DEPTH, parseJson } from '../json-depth.js';
import { whenReady, type ChannelAdapter } from './adapter.js';
import type { ChannelRegistry, Member } from './channels.js';
import type { Admission } from './grants.js';
import { writeFrames } from './fan-out.js';
import { channelKind, CloseCode, errorFrame, frame, safeEqual, sign, validChannelName } from './protocol.js';

// One client connection speaking Pusher protocol 7: each client message type has its own small
// handler (subscribe, unsubscribe, ping, pong, client events), in the order the protocol lists
// them. The connection proves nothing about who the user is: private and presence channels are
// admitted by the auth signature /broadcasting/auth issued for this socket id (routes/broadcasting.ts).

export interface ConnectionOptions {
  key: string;
  secret: string;
  clientEvents: boolean;
  clientEventsPerSecond: number;
  maxBufferedBytes: number;
  /** Failed private/presence subscriptions tolerated before the connection is closed with 4009. */
  maxFailedSubscriptions: number;
}

export interface ConnectionHooks {
  messageIn(): void;
  messagesOut(n: number): void;
  log(fields: Record<string, unknown>, message: string): void;
  /** Whether the authorization behind a signed subscription still
   * holds, and the project it binds the subscription to (grants.ts). */
  admit(channel: string): Admission;
  /** The connection left a channel. */
  left(channel: string): void;
}

type ClientMessage = { event?: unknown; channel?: unknown; data?: unknown };

export class Connection {
  readonly channels = new Set<string>();
  lastActivity = Date.now();
  pingSentAt: number | null = null;
  #failedSubscriptions = 0;
  #clientEventWindow = { start: 0, count: 0 };
  #closing = false;

  constructor(
    readonly socketId: string,
    private readonly ws: WebSocket,
    private readonly registry: ChannelRegistry,
    /** The channels' subscribers on other instances too (adapter.ts). */
    private readonly adapter: ChannelAdapter,
    private readonly options: ConnectionOptions,
    private readonly hooks: ConnectionHooks,
  ) {}

  /** Sends a frame unless the client has stopped reading; then closes it with 4100 instead of buffering more. */
  send(data: string | Buffer): void {
    if (!this.#writable()) return;
    this.ws.send(data, { binary: false });
    this.hooks.messagesOut(1);
  }

  /** Broadcast frames, built once for all subscribers (channels.ts): the same bound, one write. */
  sendFrames(frames: Buffer, count: number): void {
    if (!this.#writable()) return;
    if (this.ws.readyState === this.ws.OPEN && writeFrames(this.ws, frames)) this.hooks.messagesOut(count);
  }

  /** False once closing; a client over the buffer bound is closed with 4100 here. */
  #writable(): boolean {
    if (this.#closing) return false;
    if (this.ws.bufferedAmount <= this.options.maxBufferedBytes) return true;
    this.hooks.log(
      { socketId: this.socketId, buffered: this.ws.bufferedAmount },
      'websocket client not reading, closing',
    );
    this.close(CloseCode.overCapacity, 'Over capacity: the client is not reading', true);
    return false;
  }

  /** Closes with a protocol code; `force` also ends the socket soon if the close frame cannot get through. */
  close(code: number, reason: string, force = false): void {
    if (this.#closing) return;
    this.#closing = true;
    this.leaveAll(); // a closing connection gets nothing more; presence members leave now
    this.ws.close(code, reason);
    if (force) setTimeout(() => this.ws.terminate(), 1000).unref();
  }

  touch(): void {
    this.lastActivity = Date.now();
    this.pingSentAt = null;
  }

  onMessage(text: string): void {
    this.touch();
    this.hooks.messageIn();
    let message: ClientMessage;
    let data: Record<string, unknown> | undefined;
    try {
      message = parseJson(text) as ClientMessage;
      if (typeof message !== 'object' || message === null || typeof message.event !== 'string') {
        this.send(errorFrame(null, 'Messages must be JSON objects with an event'));
        return;
      }
      data = (typeof message.data === 'string' ? dataJson(message.data) : message.data) as
        | Record<string, unknown>
        | undefined;
    } catch (err) {
      // src/json-depth.ts: the message, or JSON in its data string, nests too deep to be walked.
      this.send(
        errorFrame(
          null,
          err instanceof JsonDepthError
            ? `Messages must not nest arrays and objects deeper than ${MAX_JSON_DEPTH} levels`
            : 'Messages must be JSON',
        ),
      );
      return;
    }
    switch (message.event) {
      case 'pusher:ping':
        this.send(frame('pusher:pong', {}));
        return;
      case 'pusher:pong':
        return;
      case 'pusher:subscribe':
        this.#subscribe(data ?? {});
        return;
      case 'pusher:unsubscribe':
        this.#unsubscribe(data ?? {});
        return;
      default:
        if (message.event.startsWith('client-')) this.#clientEvent(message.event, message.channel, message.data);
        else this.send(errorFrame(null, `Unknown event ${message.event.slice(0, 64)}`));
    }
  }

  /** Leaves every channel (the socket closed). */
  leaveAll(): void {
    for (const channel of [...this.channels]) this.#leave(channel);
  }

  #subscribe(data: Record<string, unknown>): void {
    const channel = data.channel;
    if (!validChannelName(channel)) {
      this.send(errorFrame(null, 'Invalid channel name: at most 164 characters of A-Z a-z 0-9 _ - = @ , . ;'));
      return;
    }
    // Encrypted channels are admitted as private ones are: the server never holds their keys.
    const kind = channelKind(channel);
    let member: Member | undefined;
    let projectId: number | undefined;
    if (kind !== 'public') {
      const channelData = kind === 'presence' ? data.channel_data : undefined;
      if (kind === 'presence' && typeof channelData !== 'string') {
        this.#refuse(channel, 'Presence channels need channel_data', 401);
        return;
      }
      if (!this.#authentic(channel, data.auth, channelData as string | undefined)) {
        this.#refuse(channel, 'Invalid signature', 401);
        return;
      }
      if (kind === 'presence') {
        const parsed = safeJson(channelData as string) as { user_id?: unknown; user_info?: unknown } | undefined;
        if (
          !parsed ||
          (typeof parsed.user_id !== 'string' && typeof parsed.user_id !== 'number') ||
          String(parsed.user_id) === ''
        ) {
          this.#refuse(channel, 'channel_data must be JSON with a user_id (a string or a number)', 400);
          return;
        }
        // The id keeps its JSON type (Laravel gives integers), as Soketi and Reverb keep it.
        member = {
          user_id: parsed.user_id,
          ...(parsed.user_info !== undefined ? { user_info: parsed.user_info } : {}),
        };
      }
      // A valid signature is not enough for the appliance's channels: the access it was issued
      // for must still hold, and binds the subscription to one project (docs/security.md, attacks 1 and 3).
      const admission = this.hooks.admit(channel);
      if (!admission.ok) {
        this.#refuse(channel, admission.reason, admission.status);
        return;
      }
      projectId = admission.projectId;
      if (!this.registry.mayBind(channel, projectId)) {
        this.#refuse(channel, 'The channel is bound to another project: use the team-qualified name', 403);
        return;
      }
    }
    const { firstConnection } = this.registry.subscribe(channel, this, member, projectId);
    this.channels.add(channel);
    // The local adapter answers at once; with several instances presence asks Redis first (adapter.ts).
    whenReady(
      this.adapter.joined(channel, member, firstConnection),
      ({ members, announce }) => {
        if (!this.channels.has(channel)) return; // left meanwhile
        if (kind !== 'presence') {
          this.send(frame('pusher_internal:subscription_succeeded', {}, channel));
          return;
        }
        // ids keep each id's type; hash keys are strings, as JSON object keys must be.
        const presence = {
          ids: members.map((m) => m.user_id),
          hash: Object.fromEntries(members.map((m) => [String(m.user_id), m.user_info ?? null])),
          count: members.length,
        };
        this.send(frame('pusher_internal:subscription_succeeded', { presence }, channel));
        if (announce)
          this.adapter.send(channel, frame('pusher_internal:member_added', member!, channel), this.socketId);
      },
      (err) => this.hooks.log({ socketId: this.socketId, channel, err }, 'websocket subscription not completed'),
    );
  }

  #authentic(channel: string, auth: unknown, channelData: string | undefined): boolean {
    if (typeof auth !== 'string') return false;
    const colon = auth.indexOf(':');
    if (colon < 0 || !safeEqual(auth.slice(0, colon), this.options.key)) return false;
    return safeEqual(auth.slice(colon + 1), sign(this.options.secret, this.socketId, channel, channelData));
  }

  /** Pusher protocol: pusher:subscription_error, which Echo's .error() reports. */
  #refuse(channel: string, error: string, status: number): void {
    this.send(frame('pusher:subscription_error', { type: 'AuthError', error, status }, channel));
    this.hooks.log({ socketId: this.socketId, channel, error }, 'websocket subscription refused');
    if (++this.#failedSubscriptions > this.options.maxFailedSubscriptions)
      this.close(CloseCode.unauthorized, 'Too many refused subscriptions');
  }

  #unsubscribe(data: Record<string, unknown>): void {
    if (typeof data.channel === 'string' && this.channels.has(data.channel)) this.#leave(data.channel);
  }

  #leave(channel: string): void {
    this.channels.delete(channel);
    this.hooks.left(channel);
    const { left } = this.registry.unsubscribe(channel, this.socketId);
    whenReady(
      this.adapter.left(channel, left),
      (announce) => {
        if (announce && left)
          this.adapter.send(channel, frame('pusher_internal:member_removed', { user_id: left.user_id }, channel));
      },
      (err) => this.hooks.log({ socketId: this.socketId, channel, err }, 'websocket member_removed not announced'),
    );
  }

  #clientEvent(event: string, channel: unknown, data: unknown): void {
    if (!this.options.clientEvents) {
      this.send(errorFrame(null, 'Client events are not enabled on this server (pusher.clientEvents)'));
      return;
    }
    if (typeof channel !== 'string' || channelKind(channel) === 'public' || !this.channels.has(channel)) {
      this.send(
        errorFrame(null, 'Client events go to a private or presence channel this connection has subscribed to'),
      );
      return;
    }
    // Pusher: client events are not supported on encrypted channels (pusher-js refuses to send
    // them; a client could only send them in clear, which the channel exists to prevent).
    if (channelKind(channel) === 'encrypted') {
      this.send(errorFrame(null, 'Client events are not supported on encrypted channels'));
      return;
    }
    const now = Date.now();
    const window = this.#clientEventWindow;
    if (now - window.start >= 1000) Object.assign(window, { start: now, count: 0 });
    if (++window.count > this.options.clientEventsPerSecond) {
      this.close(CloseCode.clientEventRateLimit, 'Client event rate limit exceeded');
      return;
    }
    const userId = channelKind(channel) === 'presence' ? this.registry.userOf(channel, this.socketId) : undefined;
    const text = frame(event, data ?? {}, channel, userId);
    this.adapter.send(channel, text, this.socketId);
  }
}

/** A message's data sent as JSON text (pusher-js does), or undefined
 * when it is not JSON; throws JsonDepthError when it nests too deep. */
function dataJson(text: string): unknown {
  try {
    return parseJson(text);
  } catch (err) {
    if (err instanceof JsonDepthError) throw err;
    return undefined;
  }
}

/** JSON text, or undefined when it is not JSON or nests too deep (src/json-depth.ts). */
function safeJson(text: string): unknown {
  try {
    return parseJson(text);
  } catch {
    return undefined;
  }
}
