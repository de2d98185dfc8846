// Socket events for plugins (spec: "Dependency object" `events`; docs/plugins.md "Socket events"): the events the
// manifest's dependencies list arrive over the appliance's Pusher-protocol WebSocket (real
// pusher-js: its node build under Node, its web build in a browser bundle) and are handed to the
// plugin. A dependency's `events` maps the event the socket sends (bare, or under
// pusher.eventNamespace) to the name the plugin receives it under. Each channel is subscribed
// once for every dependency that needs it; an event no dependency lists is not handed over. Every
// failure (config, authorization, the connection) is reported in the connection status, never
// thrown: a door display keeps running with its REST picture. The store (store.ts) makes it reactive.
import PusherModule from 'pusher-js';
import type { Options as PusherOptions } from 'pusher-js';
import { type PluginContext, PluginApiError } from './call-api.js';
import {
  type BroadcastingConfig,
  channelAuthorizer,
  fetchBroadcastingConfig,
  type PageLocation,
  socketOptions,
} from './socket-config.js';
import { bareEventName, type Plan, planSubscriptions } from './event-channels.js';
import type { PluginDependency } from './types.js';

/** pusher-js's connection states, `idle` before connecting and `configuring` while the broadcasting config is read. */
export type SocketState =
  | 'idle'
  | 'configuring'
  | 'initialized'
  | 'connecting'
  | 'connected'
  | 'unavailable'
  | 'failed'
  | 'disconnected';

export interface ChannelStatus {
  /** `pending`: waiting for the connection or for authorization (again after a reconnect). */
  state: 'pending' | 'subscribed' | 'refused';
  /** A refusal's status: 401/403 from /broadcasting/auth, 401 a signature the socket refused, 403 access ended. */
  status: number | null;
  message: string | null;
  /** The socket events (bare names) wanted from it. */
  events: string[];
}

export interface SocketProblem {
  kind: 'config' | 'subscription' | 'connection';
  message: string;
  /** The HTTP status (config, subscription), or the Pusher
   * error or close code (connection: 4009 ...); null when none. */
  status: number | null;
  channel: string | null;
}

/** What the plugin can show of its socket; a fresh object on every change. */
export interface EventConnection {
  state: SocketState;
  socketId: string | null;
  /** Channel name to its subscription. */
  channels: Record<string, ChannelStatus>;
  /** What the manifest lists but is not subscribed, and why: an event the appliance does not publish. A channel the
   * token may not join is `refused` in `channels`. */
  skipped: string[];
  /** The latest problem, kept until the next connect. */
  error: SocketProblem | null;
}

export interface PluginEvent<T = unknown> {
  /** The name the plugin receives it under: the value of the dependency's `events` entry. */
  name: string;
  /** The socket event, bare: `AccessPointUpdated`. */
  event: string;
  /** Identifiers of the dependencies that list the event under this name. */
  dependencies: string[];
  channel: string;
  data: T;
  /** Date.now() on arrival. */
  receivedAt: number;
}

export const idleConnection = (): EventConnection => ({
  state: 'idle',
  socketId: null,
  channels: {},
  skipped: [],
  error: null,
});

/** What the toolkit uses of a pusher-js client: its default export
 * types as a namespace under NodeNext, as test/realtime's clients say. */
interface PusherChannel {
  bind(event: string, callback: (data: never) => void): unknown;
  bind_global(callback: (event: string, data: unknown) => void): unknown;
  unbind_all(): unknown;
}
interface PusherClient {
  connection: { socket_id: string; bind(event: string, callback: (data: never) => void): unknown };
  subscribe(channel: string): PusherChannel;
  unsubscribe(channel: string): void;
  disconnect(): void;
}
export type PusherConstructor = new (key: string, options: PusherOptions) => PusherClient;
const Pusher = PusherModule as unknown as PusherConstructor;

export interface EventSocketOptions {
  context: PluginContext;
  dependencies: readonly PluginDependency[];
  /** Each listed event, once per name the dependencies hand it over under. */
  deliver(event: PluginEvent): void;
  /** Every change of the connection's status. */
  status(connection: EventConnection): void;
  /** The page's location for baseUrl ''; defaults to globalThis.location. */
  page?: PageLocation | null;
}

/**
 * One connection to the appliance's socket for one plugin (module lifecycle: start() connects and
 * never rejects, stop() disconnects). The plan is read when events arrive, so setDependencies
 * (a reloaded manifest) applies at once: new channels are joined, unneeded ones left.
 */
export class EventSocket {
  #pusher: PusherClient | null = null;
  #plan: Plan = new Map();
  #status: EventConnection = idleConnection();
  #stopped = false;
  #dependencies: readonly PluginDependency[];
  readonly #subscribed = new Set<string>();
  readonly #authFailures = new Map<string, { status: number | null; message: string }>();

  constructor(private readonly options: EventSocketOptions) {
    this.#dependencies = options.dependencies;
  }

  async start(): Promise<void> {
    const { context } = this.options;
    this.#update({ state: 'configuring', error: null });
    let config: BroadcastingConfig;
    let options: PusherOptions;
    try {
      config = await fetchBroadcastingConfig(context);
      options = socketOptions(
        config,
        context,
        this.options.page === undefined ? (globalThis.location ?? null) : this.options.page,
      );
    } catch (err) {
      if (!this.#stopped)
        this.#update({
          state: 'failed',
          error: {
            kind: 'config',
            message: (err as Error).message,
            // 0: no answer (`network`), said as null.
            status: err instanceof PluginApiError && err.status > 0 ? err.status : null,
            channel: null,
          },
        });
      return;
    }
    if (this.#stopped) return;
    const pusher = new Pusher(config.key, {
      ...options,
      channelAuthorization: {
        customHandler: channelAuthorizer(context, (c, status, message) =>
          this.#authFailures.set(c, { status, message }),
        ),
      },
    });
    this.#pusher = pusher;
    pusher.connection.bind('state_change', ({ current }: { current: SocketState }) => this.#stateChanged(current));
    pusher.connection.bind(
      'error',
      (e: {
        type?: string;
        data?: { code?: number; message?: string };
        error?: { data?: { code?: number; message?: string }; message?: string };
      }) => {
        const said = e.data ?? e.error?.data;
        const message = said?.message ?? e.error?.message ?? e.type ?? 'connection error';
        this.#update({ error: { kind: 'connection', message, status: said?.code ?? null, channel: null } });
      },
    );
    this.setDependencies(this.#dependencies);
  }

  /** Subscribes the channels the dependencies' events need (each once) and leaves the ones no longer needed. */
  setDependencies(dependencies: readonly PluginDependency[]): void {
    this.#dependencies = dependencies;
    const { context } = this.options;
    const { plan, skipped } = planSubscriptions(dependencies, context.teamSlug, context.projectSlug);
    this.#plan = plan;
    const channels: Record<string, ChannelStatus> = {};
    for (const [name, events] of plan)
      channels[name] = {
        ...(this.#status.channels[name] ?? { state: 'pending', status: null, message: null }),
        events: [...events.keys()],
      };
    this.#update({ channels, skipped });
    const pusher = this.#pusher;
    if (!pusher) return;
    for (const name of this.#subscribed) {
      if (plan.has(name)) continue;
      this.#subscribed.delete(name);
      pusher.unsubscribe(name);
    }
    for (const name of plan.keys()) if (!this.#subscribed.has(name)) this.#subscribe(pusher, name);
  }

  /** Disconnects; nothing is delivered after it. */
  stop(): void {
    this.#stopped = true;
    const pusher = this.#pusher;
    this.#pusher = null;
    pusher?.disconnect(); // its state_change and anything still in flight meet #stopped
    this.#update({ state: 'disconnected', socketId: null, channels: {} });
  }

  #subscribe(pusher: PusherClient, name: string): void {
    this.#subscribed.add(name);
    const channel = pusher.subscribe(name);
    channel.unbind_all(); // a channel left and joined again is the same pusher-js object
    channel.bind('pusher:subscription_succeeded', () =>
      this.#channel(name, { state: 'subscribed', status: null, message: null }),
    );
    channel.bind('pusher:subscription_error', (e: { error?: string; status?: number }) => {
      // pusher-js reports an authorizer's refusal without its status: the authorizer recorded it.
      const failure = this.#authFailures.get(name);
      this.#authFailures.delete(name);
      const status = failure?.status ?? e.status ?? null;
      const message = failure?.message ?? e.error ?? 'subscription refused';
      this.#channel(name, { state: 'refused', status, message });
      this.#update({ error: { kind: 'subscription', message, status, channel: name } });
    });
    channel.bind_global((event, data) => this.#receive(name, event, data));
  }

  #receive(channel: string, event: string, data: unknown): void {
    if (this.#stopped || event.startsWith('pusher:') || event.startsWith('pusher_internal:')) return;
    const bare = bareEventName(event);
    const routes = this.#plan.get(channel)?.get(bare);
    if (!routes) return; // not listed by any dependency: not handed over
    const receivedAt = Date.now();
    for (const { name, dependencies } of routes)
      this.options.deliver({ name, event: bare, dependencies: [...dependencies], channel, data, receivedAt });
  }

  #stateChanged(state: SocketState): void {
    if (this.#stopped) return;
    const socketId = state === 'connected' ? (this.#pusher?.connection.socket_id ?? null) : null;
    // Off the socket every subscription is gone; pusher-js joins them all again when it reconnects.
    const channels =
      state === 'connected'
        ? this.#status.channels
        : Object.fromEntries(
            Object.entries(this.#status.channels).map(([n, c]) => [n, { ...c, state: 'pending' as const }]),
          );
    this.#update({ state, socketId, channels });
  }

  #channel(name: string, change: Omit<ChannelStatus, 'events'>): void {
    const current = this.#status.channels[name];
    if (!current || this.#stopped) return;
    this.#update({ channels: { ...this.#status.channels, [name]: { ...current, ...change } } });
  }

  #update(change: Partial<EventConnection>): void {
    this.#status = { ...this.#status, ...change };
    this.options.status(this.#status);
  }
}

export {
  type BroadcastingConfig,
  fetchBroadcastingConfig,
  type PageLocation,
  socketOptions,
} from './socket-config.js';
