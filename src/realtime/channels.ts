import { textFrame } from './fan-out.js';

// Who is subscribed to what (Pusher protocol: channels). A channel exists while it has a
// subscriber. Presence channels also keep their members by user id, each with the number of
// that user's connections in the channel, so member_added goes out on a user's first
// connection only and member_removed on their last (two tabs of one user are one member).
// Identity is by value: user ids 2 and "2" are one member (the presence hash could not hold
// both: JSON object keys are strings), who keeps the id as their first connection gave it.
// A project channel is bound to the project its first bound subscriber was authorized for, and
// admits no subscriber bound to another one: the appliance publishes a project's events only to
// channels bound to it (docs/security.md, attack 3), so one name never carries two projects' events.

export interface Subscriber {
  readonly socketId: string;
  /** Writes `count` complete, pre-built WebSocket frames joined in one buffer (fan-out.ts). */
  sendFrames(frames: Buffer, count: number): void;
}

export interface Member {
  /** As the channel_data gave it: a number stays a number on the wire (docs/realtime.md, "Encrypted channels"). */
  user_id: string | number;
  user_info?: unknown;
}

/** The key a member is known by: ids equal by value are one member. */
const memberKey = (userId: string | number) => String(userId);

interface Channel {
  subscribers: Map<string, Subscriber>;
  /** The project the channel's subscribers were authorized for; undefined: none named (not one of ours). */
  projectId?: number | undefined;
  /** Presence only: member key (memberKey) -> member and how many of this user's connections are in. */
  members?: Map<string, { member: Member; connections: number }>;
  /** Presence only: which member (key) each socket joined as. */
  userOf?: Map<string, string>;
  /** Broadcast frames not yet written to every subscriber: frames[i] is number base + i. */
  frames: Buffer[];
  base: number;
  /** Per subscriber (socket id), the number of the next frame it is to get. */
  next: Map<string, number>;
  /** The pass over the subscribers writing frames out, and the head when it began. */
  pass: Iterator<[string, Subscriber]> | null;
  passFrom: number;
  /** Joined frames from a number to the head, shared by the subscribers at the same place. */
  joined: Map<number, Buffer>;
  joinedHead: number;
}

/** Subscriber writes per step of a pass; between steps the event loop reads what came in (publishes, scans). */
const WRITES_PER_STEP = 128;

export interface JoinResult {
  /** Presence: the user had no other connection in the channel. */
  firstConnection: boolean;
}

export class ChannelRegistry {
  readonly #channels = new Map<string, Channel>();
  #subscriptions = 0;
  /** Channels with frames some subscriber has not been written yet. */
  readonly #active = new Set<Channel>();
  #scheduled = false;
  readonly #step = () => {
    this.#scheduled = false;
    let budget = WRITES_PER_STEP;
    for (const channel of this.#active) {
      budget = this.#advance(channel, budget);
      if (budget <= 0) break;
    }
    if (this.#active.size > 0) this.#schedule();
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

  /** Whether a subscriber bound to this project (or to none) may join: not when the channel is bound to another. */
  mayBind(name: string, projectId: number | undefined): boolean {
    const bound = this.#channels.get(name)?.projectId;
    return projectId === undefined || bound === undefined || bound === projectId;
  }

  /** The project the channel is bound to (undefined: none). */
  boundProject(name: string): number | undefined {
    return this.#channels.get(name)?.projectId;
  }

  subscribe(name: string, subscriber: Subscriber, member?: Member, projectId?: number): JoinResult {
    let channel = this.#channels.get(name);
    if (!channel) {
      channel = {
        subscribers: new Map(),
        frames: [],
        base: 0,
        next: new Map(),
        pass: null,
        passFrom: 0,
        joined: new Map(),
        joinedHead: 0,
      };
      if (member) Object.assign(channel, { members: new Map(), userOf: new Map() });
      this.#channels.set(name, channel);
    }
    channel.projectId ??= projectId;
    if (!channel.subscribers.has(subscriber.socketId)) {
      this.#subscriptions++;
      channel.next.set(subscriber.socketId, channel.base + channel.frames.length); // what was published before is not for it
    }
    channel.subscribers.set(subscriber.socketId, subscriber);
    if (!member || !channel.members || !channel.userOf) return { firstConnection: false };
    if (channel.userOf.has(subscriber.socketId)) return { firstConnection: false };
    const key = memberKey(member.user_id);
    channel.userOf.set(subscriber.socketId, key);
    const entry = channel.members.get(key);
    if (entry) {
      entry.connections++;
      return { firstConnection: false };
    }
    channel.members.set(key, { member, connections: 1 });
    return { firstConnection: true };
  }

  /** Removes the socket; for presence, the member who left with their last connection. */
  unsubscribe(name: string, socketId: string): { left: Member | null } {
    const channel = this.#channels.get(name);
    const subscriber = channel?.subscribers.get(socketId);
    if (!channel || !subscriber) return { left: null };
    this.#catchUp(channel, socketId, subscriber); // what was published while subscribed still reaches it
    channel.subscribers.delete(socketId);
    channel.next.delete(socketId);
    this.#subscriptions--;
    let left: Member | null = null;
    const key = channel.userOf?.get(socketId);
    if (key !== undefined && channel.members && channel.userOf) {
      channel.userOf.delete(socketId);
      const entry = channel.members.get(key)!;
      if (--entry.connections === 0) {
        channel.members.delete(key);
        left = entry.member;
      }
    }
    if (channel.subscribers.size === 0) {
      this.#channels.delete(name);
      this.#active.delete(channel);
    }
    return { left };
  }

  /**
   * Sends one prepared text to every subscriber but `except` (the sender of a client event, or a
   * socket_id the publisher excluded). Framed once. Without `except` it joins the channel's
   * frames, which passes over the subscribers write out, WRITES_PER_STEP subscribers per turn of
   * the event loop (setImmediate): each subscriber gets everything it has not had in one write,
   * so a frame published while a pass is under way reaches the subscribers the pass has not come
   * to yet with what they were about to get, and the others in the next pass, and the event loop
   * reads new publishes (and scans) between steps rather than after a whole fan-out. The busier
   * the server, the more each write carries; an idle one writes at once. With `except`, the
   * channel's frames are written out first (its order kept) and this one straight after.
   * Returns the number of subscribers it goes to.
   */
  broadcast(name: string, text: string, except?: string): number {
    const channel = this.#channels.get(name);
    if (!channel) return 0;
    const data = textFrame(Buffer.from(text));
    if (except === undefined) {
      channel.frames.push(data);
      if (!this.#active.has(channel)) {
        this.#active.add(channel);
        this.#schedule();
      }
      return channel.subscribers.size;
    }
    for (const [socketId, subscriber] of channel.subscribers) this.#catchUp(channel, socketId, subscriber);
    let sent = 0;
    for (const [socketId, subscriber] of channel.subscribers) {
      if (socketId === except) continue;
      subscriber.sendFrames(data, 1);
      sent++;
    }
    return sent;
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(this.#step);
  }

  /** Goes on with the channel's pass for at most `budget` writes; answers the budget left. */
  #advance(channel: Channel, budget: number): number {
    while (budget > 0) {
      const head = channel.base + channel.frames.length;
      if (!channel.pass) {
        channel.pass = channel.subscribers.entries();
        channel.passFrom = head;
      }
      const step = channel.pass.next();
      if (step.done) {
        // Every subscriber has had what was there when the pass began: those frames can go.
        channel.pass = null;
        this.#trim(channel, channel.passFrom);
        if (channel.passFrom === head) {
          this.#active.delete(channel);
          return budget;
        }
        continue; // frames came in during the pass: another one for the subscribers it had passed
      }
      const [socketId, subscriber] = step.value;
      if (this.#catchUp(channel, socketId, subscriber)) budget--;
    }
    return budget;
  }

  /** Writes the subscriber everything of the channel it has not had; false when it had it all. */
  #catchUp(channel: Channel, socketId: string, subscriber: Subscriber): boolean {
    const head = channel.base + channel.frames.length;
    const from = channel.next.get(socketId) ?? head;
    if (from >= head) return false;
    channel.next.set(socketId, head);
    subscriber.sendFrames(this.#joined(channel, from, head), head - from);
    return true;
  }

  #joined(channel: Channel, from: number, head: number): Buffer {
    if (channel.joinedHead !== head) {
      channel.joined.clear();
      channel.joinedHead = head;
    }
    let buf = channel.joined.get(from);
    if (!buf) {
      buf =
        head - from === 1
          ? channel.frames[from - channel.base]!
          : Buffer.concat(channel.frames.slice(from - channel.base));
      channel.joined.set(from, buf);
    }
    return buf;
  }

  #trim(channel: Channel, upTo: number): void {
    if (upTo <= channel.base) return;
    channel.frames.splice(0, upTo - channel.base);
    channel.base = upTo;
  }

  /** Presence: the members now in the channel. */
  members(name: string): Member[] {
    return [...(this.#channels.get(name)?.members?.values() ?? [])].map((m) => m.member);
  }

  /** Presence: the user id this socket joined as (its member's, with its type). */
  userOf(name: string, socketId: string): string | number | undefined {
    const channel = this.#channels.get(name);
    const key = channel?.userOf?.get(socketId);
    return key === undefined ? undefined : channel!.members!.get(key)?.member.user_id;
  }

  subscriberCount(name: string): number {
    return this.#channels.get(name)?.subscribers.size ?? 0;
  }

  names(): string[] {
    return [...this.#channels.keys()];
  }
}
