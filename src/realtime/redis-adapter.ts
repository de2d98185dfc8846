import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { RedisConnections } from '../cluster/redis.js';
import type { Logger } from '../logger.js';
import type { ChannelAdapter, ChannelCounts, JoinAnswer } from './adapter.js';
import type { ChannelRegistry, Member } from './channels.js';
import { ClusterState, type Entry } from './cluster-state.js';
import { frame } from './protocol.js';

// The channels of a cloud of several instances behind a load balancer (docs/realtime.md,
// "Several instances"), through Redis. Events: each instance writes to its own subscribers
// and publishes the frame once on one pub/sub channel, which every other instance writes to
// its own: everyone gets it once. Only when another instance has a subscriber on the channel:
// each instance tells the others when a channel becomes occupied or vacant there (and the
// project it is bound to), so an event nobody elsewhere listens to costs no publish.
// Presence and counts: each instance keeps its part of each channel in Redis (cluster-state.ts);
// subscription_succeeded lists, member_added/removed decisions and the HTTP API's counts read
// every instance's part. A killed instance's part is cleared, and its members announced as
// removed, by the first other instance to see its heartbeat expire.

export interface RedisAdapterSettings {
  keyPrefix: string;
  instanceTimeoutMs: number;
}

/** What goes over the pub/sub channel. */
type Message =
  | { k: 'event'; i: string; c: string; t: string; x?: string; p?: number }
  | { k: 'state'; i: string; c: string; on: boolean; p: number | null }
  | { k: 'gone'; i: string };

export class RedisAdapter implements ChannelAdapter {
  readonly name = 'realtime adapter (redis)';
  readonly instanceId = `${hostname()}-${process.pid}-${randomBytes(4).toString('hex')}`;
  readonly #state: ClusterState;
  readonly #topic: string;
  /** Per channel, the other instances that have a subscriber there and the project it is bound to. */
  readonly #elsewhere = new Map<string, Map<string, number | null>>();
  /** What this instance last told the others of each of its channels (its bound project). */
  readonly #told = new Map<string, number | null>();
  readonly #pending = new Set<Promise<unknown>>();
  #timer: NodeJS.Timeout | null = null;
  #onMessage = (topic: string, text: string) => topic === this.#topic && this.#receive(text);
  #onReady = () => this.#track(this.#resync());

  constructor(
    private readonly registry: ChannelRegistry,
    private readonly redis: RedisConnections,
    private readonly settings: RedisAdapterSettings,
    private readonly log: Logger,
  ) {
    this.#state = new ClusterState(redis.command, settings.keyPrefix, this.instanceId);
    this.#topic = `${settings.keyPrefix}fanout`;
  }

  async start(): Promise<void> {
    this.redis.subscriber.on('message', this.#onMessage);
    await this.redis.subscriber.subscribe(this.#topic);
    await this.#resync();
    const every = Math.max(100, Math.floor(this.settings.instanceTimeoutMs / 3));
    this.#timer = setInterval(() => this.#track(this.#beat()), every).unref();
    this.redis.command.on('ready', this.#onReady); // after a lost connection: what was missed meanwhile
    this.log.info({ instance: this.instanceId }, 'realtime fan-out through Redis');
  }

  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.redis.command.off('ready', this.#onReady);
    this.redis.subscriber.off('message', this.#onMessage);
    await Promise.race([Promise.allSettled(this.#pending), new Promise((r) => setTimeout(r, 2000).unref())]);
    if (!this.redis.ready) return;
    try {
      await this.#state.leave();
      await this.#publish({ k: 'gone', i: this.instanceId });
    } catch (err) {
      this.log.warn({ err }, 'could not take this instance out of the shared channel state');
    }
  }

  send(channel: string, text: string, except?: string, projectId?: number): void {
    if (projectId === undefined || this.registry.boundProject(channel) === projectId)
      this.registry.broadcast(channel, text, except);
    if (!this.occupiedElsewhere(channel, projectId)) return;
    const message: Message = { k: 'event', i: this.instanceId, c: channel, t: text };
    if (except !== undefined) message.x = except;
    if (projectId !== undefined) message.p = projectId;
    this.#track(this.#publish(message));
  }

  occupiedElsewhere(channel: string, projectId?: number): boolean {
    const at = this.#elsewhere.get(channel);
    if (!at) return false;
    if (projectId === undefined) return true;
    for (const bound of at.values()) if (bound === projectId) return true;
    return false;
  }

  joined(channel: string, member: Member | undefined, firstHere: boolean): JoinAnswer | Promise<JoinAnswer> {
    const written = this.#track(this.#write(channel));
    if (!member) return { members: [], announce: false };
    return written
      .then(() => this.#state.entries(channel))
      .then((entries) => {
        const others = this.#othersMembers(entries);
        const members = this.registry.members(channel);
        const here = new Set(members.map((m) => String(m.user_id)));
        for (const [key, m] of others) if (!here.has(key)) members.push(m);
        return { members, announce: firstHere && !others.has(String(member.user_id)) };
      })
      .catch((err) => {
        this.log.warn({ err, channel }, 'presence: Redis not answering; listing this instance’s members only');
        return { members: this.registry.members(channel), announce: firstHere };
      });
  }

  left(channel: string, gone: Member | null): boolean | Promise<boolean> {
    const written = this.#track(this.#write(channel));
    if (!gone) return false;
    return written
      .then(() => this.#state.entries(channel))
      .then((entries) => !this.#othersMembers(entries).has(String(gone.user_id)))
      .catch(() => true);
  }

  async counts(channel: string): Promise<ChannelCounts> {
    const entries = await this.#entries(channel);
    const users = new Set(this.registry.members(channel).map((m) => String(m.user_id)));
    let subscriptions = this.registry.subscriberCount(channel);
    for (const [id, entry] of entries) {
      if (id === this.instanceId) continue;
      subscriptions += entry.s;
      for (const key of Object.keys(entry.m ?? {})) users.add(key);
    }
    return { subscriptions, users: users.size };
  }

  async members(channel: string): Promise<Member[]> {
    const members = this.registry.members(channel);
    const here = new Set(members.map((m) => String(m.user_id)));
    for (const [key, m] of this.#othersMembers(await this.#entries(channel))) if (!here.has(key)) members.push(m);
    return members;
  }

  channelNames(): string[] {
    return [...new Set([...this.registry.names(), ...this.#elsewhere.keys()])];
  }

  /** Every instance's part of a channel; this one's alone when Redis does not answer. */
  async #entries(channel: string): Promise<Map<string, Entry>> {
    try {
      return await this.#state.entries(channel);
    } catch (err) {
      this.log.warn({ err, channel }, 'Redis not answering: counting this instance’s subscribers only');
      return new Map();
    }
  }

  /** The members other instances have in a channel, by member key. */
  #othersMembers(entries: Map<string, Entry>): Map<string, Member> {
    const out = new Map<string, Member>();
    for (const [id, entry] of entries)
      if (id !== this.instanceId) for (const [key, m] of Object.entries(entry.m ?? {})) out.set(key, m);
    return out;
  }

  /** This instance's part of a channel, as the registry has it now, to Redis; the others told when it changed. */
  #write(channel: string): Promise<void> {
    const count = this.registry.subscriberCount(channel);
    const bound = count > 0 ? (this.registry.boundProject(channel) ?? null) : undefined;
    const members = this.registry.members(channel);
    const entry: Entry | null =
      bound === undefined
        ? null
        : {
            s: count,
            p: bound,
            ...(members.length > 0 ? { m: Object.fromEntries(members.map((m) => [String(m.user_id), m])) } : {}),
          };
    // Both sent before either is awaited: a later write of the same channel cannot overtake this one.
    const told: Promise<void>[] = [];
    if (this.#told.get(channel) !== bound) {
      if (bound === undefined) this.#told.delete(channel);
      else this.#told.set(channel, bound);
      told.push(
        this.#publish({ k: 'state', i: this.instanceId, c: channel, on: bound !== undefined, p: bound ?? null }),
      );
    }
    return Promise.all([...told, this.#state.put(channel, entry)]).then(() => {});
  }

  #receive(text: string): void {
    let message: Message;
    try {
      message = JSON.parse(text) as Message;
    } catch {
      return;
    }
    if (message.i === this.instanceId) return;
    if (message.k === 'event') {
      if (message.p !== undefined && this.registry.boundProject(message.c) !== message.p) return;
      this.registry.broadcast(message.c, message.t, message.x);
    } else if (message.k === 'state') {
      this.#mark(message.c, message.i, message.on ? message.p : undefined);
    } else if (message.k === 'gone') {
      this.#forget(message.i);
    }
  }

  #mark(channel: string, id: string, bound: number | null | undefined): void {
    let at = this.#elsewhere.get(channel);
    if (bound === undefined) {
      at?.delete(id);
      if (at?.size === 0) this.#elsewhere.delete(channel);
      return;
    }
    if (!at) this.#elsewhere.set(channel, (at = new Map()));
    at.set(id, bound);
  }

  #forget(id: string): void {
    for (const [channel, at] of this.#elsewhere) if (at.delete(id) && at.size === 0) this.#elsewhere.delete(channel);
  }

  /** The heartbeat, and the clearing of instances whose heartbeat expired. */
  async #beat(): Promise<void> {
    if (!this.redis.ready) return;
    if (await this.#state.beat(this.settings.instanceTimeoutMs)) {
      this.log.warn({ instance: this.instanceId }, 'this instance was taken for gone (no heartbeat); telling again');
      await this.#resync();
      return;
    }
    const { expired } = await this.#state.others();
    for (const id of expired) await this.#clearGone(id);
  }

  /** A gone instance: its part cleared, its members announced as removed where nobody else has them. */
  async #clearGone(id: string): Promise<void> {
    const entries = await this.#state.clear(id);
    this.#forget(id);
    if (!entries) return;
    await this.#publish({ k: 'gone', i: id });
    this.log.warn(
      { instance: id, channels: entries.size },
      'realtime: an instance stopped beating; its subscribers removed',
    );
    for (const [channel, entry] of entries) {
      if (!entry.m) continue;
      const still = this.#othersMembers(await this.#state.entries(channel));
      for (const m of this.registry.members(channel)) still.set(String(m.user_id), m);
      for (const [key, m] of Object.entries(entry.m))
        if (!still.has(key))
          this.send(channel, frame('pusher_internal:member_removed', { user_id: m.user_id }, channel));
    }
  }

  /** Everything told again and read again: at start, and after Redis was lost or took this instance for gone. */
  async #resync(): Promise<void> {
    await this.#state.beat(this.settings.instanceTimeoutMs);
    this.#told.clear();
    for (const channel of this.registry.names()) await this.#write(channel);
    const { alive } = await this.#state.others();
    this.#elsewhere.clear();
    for (const id of alive)
      for (const [channel, bound] of await this.#state.channelsOf(id)) this.#mark(channel, id, bound);
  }

  async #publish(message: Message): Promise<void> {
    await this.redis.command.publish(this.#topic, JSON.stringify(message));
  }

  /** Kept until it settles (stop waits for it); a failure is logged, never thrown at the caller. */
  #track<T>(work: Promise<T>): Promise<T | undefined> {
    const tracked = work.catch((err) => {
      this.log.debug({ err }, 'realtime: a Redis command failed (Redis down?)');
      return undefined;
    });
    this.#pending.add(tracked);
    void tracked.finally(() => this.#pending.delete(tracked));
    return tracked;
  }
}
