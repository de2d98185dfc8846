import { textFrame } from './fan-out.js';

// Who is subscribed to what (Pusher protocol: channels). A channel exists while it has a
// subscriber. Presence channels also keep their members by user id, each with the number of
// that user's connections in the channel, so member_added goes out on a user's first
// connection only and member_removed on their last (two tabs of one user are one member).

export interface Subscriber {
  readonly socketId: string;
  /** Writes `count` complete, pre-built WebSocket frames joined in one buffer (fan-out.ts). */
  sendFrames(frames: Buffer, count: number): void;
}

export interface Member {
  user_id: string;
  user_info?: unknown;
}

interface Channel {
  subscribers: Map<string, Subscriber>;
  /** Presence only: user id -> member and how many of this user's connections are in. */
  members?: Map<string, { member: Member; connections: number }>;
  /** Presence only: which user each socket joined as. */
  userOf?: Map<string, string>;
  /** Broadcast frames of this turn of the event loop, written to every subscriber together (setImmediate). */
  pending?: Buffer[];
}

export interface JoinResult {
  /** Presence: the user had no other connection in the channel. */
  firstConnection: boolean;
}

export class ChannelRegistry {
  readonly #channels = new Map<string, Channel>();
  #subscriptions = 0;
  #pending: Channel[] = [];
  readonly #flushAll = () => {
    const channels = this.#pending;
    this.#pending = [];
    for (const channel of channels) this.#flush(channel);
  };

  get subscriptionCount(): number {
    return this.#subscriptions;
  }

  get channelCount(): number {
    return this.#channels.size;
  }

  has(channel: string, socketId: string): boolean {
    return this.#channels.get(channel)?.subscribers.has(socketId) ?? false;
  }

  subscribe(name: string, subscriber: Subscriber, member?: Member): JoinResult {
    let channel = this.#channels.get(name);
    if (channel) this.#flush(channel); // what was published before this subscription is not for it
    if (!channel) {
      channel = { subscribers: new Map() };
      if (member) Object.assign(channel, { members: new Map(), userOf: new Map() });
      this.#channels.set(name, channel);
    }
    if (!channel.subscribers.has(subscriber.socketId)) this.#subscriptions++;
    channel.subscribers.set(subscriber.socketId, subscriber);
    if (!member || !channel.members || !channel.userOf) return { firstConnection: false };
    if (channel.userOf.has(subscriber.socketId)) return { firstConnection: false };
    channel.userOf.set(subscriber.socketId, member.user_id);
    const entry = channel.members.get(member.user_id);
    if (entry) {
      entry.connections++;
      return { firstConnection: false };
    }
    channel.members.set(member.user_id, { member, connections: 1 });
    return { firstConnection: true };
  }

  /** Removes the socket; for presence, the member who left with their last connection. */
  unsubscribe(name: string, socketId: string): { left: Member | null } {
    const channel = this.#channels.get(name);
    if (channel) this.#flush(channel); // what was published while subscribed still reaches it
    if (!channel || !channel.subscribers.delete(socketId)) return { left: null };
    this.#subscriptions--;
    let left: Member | null = null;
    const userId = channel.userOf?.get(socketId);
    if (userId !== undefined && channel.members && channel.userOf) {
      channel.userOf.delete(socketId);
      const entry = channel.members.get(userId)!;
      if (--entry.connections === 0) {
        channel.members.delete(userId);
        left = entry.member;
      }
    }
    if (channel.subscribers.size === 0) this.#channels.delete(name);
    return { left };
  }

  /**
   * Sends one prepared text to every subscriber but `except` (the sender of a client event, or a
   * socket_id the publisher excluded). Framed once; without `except`, the frame waits for the end
   * of this turn of the event loop (setImmediate: whatever the poll phase read in this turn, e.g.
   * several publish requests or scans) and leaves with the channel's other frames in one write per
   * socket. The busier the server, the more each write carries; an idle one adds no delay.
   * Returns the number of subscribers it goes to.
   */
  broadcast(name: string, text: string, except?: string): number {
    const channel = this.#channels.get(name);
    if (!channel) return 0;
    const data = textFrame(Buffer.from(text));
    if (except === undefined) {
      if (!channel.pending) {
        channel.pending = [];
        if (this.#pending.push(channel) === 1) setImmediate(this.#flushAll);
      }
      channel.pending.push(data);
      return channel.subscribers.size;
    }
    this.#flush(channel); // keep the channel's order
    let sent = 0;
    for (const [socketId, subscriber] of channel.subscribers) {
      if (socketId === except) continue;
      subscriber.sendFrames(data, 1);
      sent++;
    }
    return sent;
  }

  #flush(channel: Channel): void {
    const frames = channel.pending;
    if (!frames) return;
    channel.pending = undefined;
    const joined = frames.length === 1 ? frames[0]! : Buffer.concat(frames);
    for (const subscriber of channel.subscribers.values()) subscriber.sendFrames(joined, frames.length);
  }

  /** Presence: the members now in the channel. */
  members(name: string): Member[] {
    return [...(this.#channels.get(name)?.members?.values() ?? [])].map((m) => m.member);
  }

  /** Presence: the user id this socket joined as. */
  userOf(name: string, socketId: string): string | undefined {
    return this.#channels.get(name)?.userOf?.get(socketId);
  }

  subscriberCount(name: string): number {
    return this.#channels.get(name)?.subscribers.size ?? 0;
  }

  names(): string[] {
    return [...this.#channels.keys()];
  }
}
