import type { Redis } from 'ioredis';
import type { Member } from './channels.js';

// The channel state the instances of a cloud share in Redis (docs/realtime.md, "Several
// instances"). Each instance writes only its own part, from its own registry, so no write needs
// to read first:
//   {prefix}channel:{name}    hash: instance id -> what it has of the channel (Entry, JSON)
//   {prefix}channels:{id}     set: the channels the instance has an entry in (to clear it when it is gone)
//   {prefix}instances         set: the instances that have announced themselves
//   {prefix}alive:{id}        the instance's heartbeat, expiring after redis.instanceTimeoutMs
// An instance whose heartbeat has expired (killed, cut off) is cleared by the first other
// instance to take it out of the instances set (SREM answers 1 to one of them only).

/** What one instance has of a channel. */
export interface Entry {
  /** Subscriptions (sockets). */
  s: number;
  /** The project the channel is bound to there (channels.ts), null when none. */
  p: number | null;
  /** Presence: the members connected there, by member key (String(user_id)). */
  m?: Record<string, Member>;
}

export class ClusterState {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    readonly instanceId: string,
  ) {}

  #channel = (name: string) => `${this.prefix}channel:${name}`;
  #channelsOf = (id: string) => `${this.prefix}channels:${id}`;
  #alive = (id: string) => `${this.prefix}alive:${id}`;
  get #instances() {
    return `${this.prefix}instances`;
  }

  /** This instance's entry for a channel; null: it has no subscriber there any more. */
  async put(name: string, entry: Entry | null): Promise<void> {
    const id = this.instanceId;
    const multi = this.redis.multi();
    if (entry) multi.hset(this.#channel(name), id, JSON.stringify(entry)).sadd(this.#channelsOf(id), name);
    else multi.hdel(this.#channel(name), id).srem(this.#channelsOf(id), name);
    await multi.exec();
  }

  /** Every instance's entry for a channel. */
  async entries(name: string): Promise<Map<string, Entry>> {
    const raw = await this.redis.hgetall(this.#channel(name));
    return new Map(Object.entries(raw).map(([id, json]) => [id, JSON.parse(json) as Entry]));
  }

  /** The channels another instance has entries in, each with the project it is bound to there. */
  async channelsOf(id: string): Promise<Map<string, number | null>> {
    const names = await this.redis.smembers(this.#channelsOf(id));
    if (names.length === 0) return new Map();
    const pipeline = this.redis.pipeline();
    for (const name of names) pipeline.hget(this.#channel(name), id);
    const found = (await pipeline.exec()) ?? [];
    const out = new Map<string, number | null>();
    for (const [i, name] of names.entries()) {
      const json = found[i]?.[1];
      if (typeof json === 'string') out.set(name, (JSON.parse(json) as Entry).p);
    }
    return out;
  }

  /** Refreshes this instance's heartbeat; true when it was not among the instances (first beat, or cleared as gone). */
  async beat(timeoutMs: number): Promise<boolean> {
    const [, added] =
      (await this.redis
        .multi()
        .set(this.#alive(this.instanceId), '1', 'PX', timeoutMs)
        .sadd(this.#instances, this.instanceId)
        .exec()) ?? [];
    return added?.[1] === 1;
  }

  /** The other instances, split by whether their heartbeat is still there. */
  async others(): Promise<{ alive: string[]; expired: string[] }> {
    const ids = (await this.redis.smembers(this.#instances)).filter((id) => id !== this.instanceId);
    if (ids.length === 0) return { alive: [], expired: [] };
    const exists = await this.redis.mget(ids.map(this.#alive));
    return { alive: ids.filter((_, i) => exists[i] !== null), expired: ids.filter((_, i) => exists[i] === null) };
  }

  /** Takes a gone instance's entries out; null when another instance is clearing it. Answers
   * its entries (the members it had connected, to announce as removed). */
  async clear(id: string): Promise<Map<string, Entry> | null> {
    if ((await this.redis.srem(this.#instances, id)) !== 1) return null;
    const names = await this.redis.smembers(this.#channelsOf(id));
    const entries = new Map<string, Entry>();
    for (const name of names) {
      const [[, json] = []] =
        (await this.redis.multi().hget(this.#channel(name), id).hdel(this.#channel(name), id).exec()) ?? [];
      if (typeof json === 'string') entries.set(name, JSON.parse(json) as Entry);
    }
    await this.redis.del(this.#channelsOf(id), this.#alive(id));
    return entries;
  }

  /** This instance leaves (a clean stop): its entries and heartbeat go. */
  async leave(): Promise<void> {
    const id = this.instanceId;
    const names = await this.redis.smembers(this.#channelsOf(id));
    const multi = this.redis.multi();
    for (const name of names) multi.hdel(this.#channel(name), id);
    await multi.del(this.#channelsOf(id), this.#alive(id)).srem(this.#instances, id).exec();
  }
}
