// Who is subscribed to what (Pusher protocol: channels). A channel exists while it has a
// subscriber. Presence channels also keep their members by user id, each with the number of
// that user's connections in the channel, so member_added goes out on a user's first
// connection only and member_removed on their last (two tabs of one user are one member).

export interface Subscriber {
  readonly socketId: string;
  send(data: string | Buffer): void;
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
}

export interface JoinResult {
  /** Presence: the user had no other connection in the channel. */
  firstConnection: boolean;
}

export class ChannelRegistry {
  readonly #channels = new Map<string, Channel>();
  #subscriptions = 0;

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

  /** Sends one prepared text to every subscriber but `except` (the sender of a client event, or a socket_id the publisher excluded). */
  broadcast(name: string, text: string, except?: string): number {
    const channel = this.#channels.get(name);
    if (!channel) return 0;
    const data = Buffer.from(text); // encoded once for every subscriber
    let sent = 0;
    for (const [socketId, subscriber] of channel.subscribers) {
      if (socketId === except) continue;
      subscriber.send(data);
      sent++;
    }
    return sent;
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
