import type { Module } from '../lifecycle.js';
import type { ChannelRegistry, Member } from './channels.js';

// Where a channel's subscribers are (docs/realtime.md, "Several instances"), after Soketi's
// adapters: the registry (channels.ts) holds this process's sockets; an adapter adds the other
// instances of a cloud. LocalAdapter is the one process of a standalone box or an edge: every
// answer is the registry's, given at once (no promise, no allocation on the publish path).
// RedisAdapter (redis-adapter.ts) is the cloud of several instances sharing one Redis.

export type MaybePromise<T> = T | Promise<T>;

export interface ChannelCounts {
  subscriptions: number;
  /** Presence: distinct members. */
  users: number;
}

export interface JoinAnswer {
  /** Presence: the members to list in subscription_succeeded (the one who joined among them). */
  members: Member[];
  /** Whether to announce member_added: the user had no other connection in the channel anywhere. */
  announce: boolean;
}

export interface ChannelAdapter extends Module {
  /** Sends a prepared frame to the channel's subscribers on every instance but the socket `except`;
   * with `projectId`, only where the channel is bound to that project (docs/security.md, attack 3). */
  send(channel: string, text: string, except?: string, projectId?: number): void;
  /** Whether another instance has a subscriber on the channel (bound to `projectId` when given). */
  occupiedElsewhere(channel: string, projectId?: number): boolean;
  /** A socket here joined the channel (the registry has it); `firstHere`: its user's first connection here. */
  joined(channel: string, member: Member | undefined, firstHere: boolean): MaybePromise<JoinAnswer>;
  /** A socket here left the channel; `gone`: the member whose last connection here it was.
   * Answers whether to announce member_removed (no connection of theirs is left anywhere). */
  left(channel: string, gone: Member | null): MaybePromise<boolean>;
  counts(channel: string): MaybePromise<ChannelCounts>;
  members(channel: string): MaybePromise<Member[]>;
  /** Every channel with a subscriber anywhere. */
  channelNames(): MaybePromise<string[]>;
}

/** One process: the registry is the whole truth. */
export class LocalAdapter implements ChannelAdapter {
  readonly name = 'realtime adapter';

  constructor(private readonly registry: ChannelRegistry) {}

  start(): void {}
  stop(): void {}

  send(channel: string, text: string, except?: string, projectId?: number): void {
    if (projectId !== undefined && this.registry.boundProject(channel) !== projectId) return;
    this.registry.broadcast(channel, text, except);
  }

  occupiedElsewhere(): boolean {
    return false;
  }

  joined(channel: string, member: Member | undefined, firstHere: boolean): JoinAnswer {
    return { members: member ? this.registry.members(channel) : [], announce: firstHere };
  }

  left(_channel: string, gone: Member | null): boolean {
    return gone !== null;
  }

  counts(channel: string): ChannelCounts {
    return { subscriptions: this.registry.subscriberCount(channel), users: this.registry.members(channel).length };
  }

  members(channel: string): Member[] {
    return this.registry.members(channel);
  }

  channelNames(): string[] {
    return this.registry.names();
  }
}

/** Runs `then` on the value now, or once the promise settles (the local adapter answers at once). */
export function whenReady<T>(value: MaybePromise<T>, then: (v: T) => void, failed: (err: unknown) => void): void {
  if (value instanceof Promise) value.then(then, failed);
  else then(value);
}
