import type { EventBus } from '../events/bus.js';
import type { Logger } from '../logger.js';
import type { ChannelGrants } from './grants.js';
import type { PusherServer } from './server.js';
import type { Module } from '../lifecycle.js';

// Ends WebSocket subscriptions whose access ended (docs/realtime.md: "When
// access ends"). Event-driven: the services announce a user deactivated, demoted or deleted, a
// membership removed, a token revoked, a session ended or the token expiry changed
// (`permissions.changed`, emitted before the REST answer that made the change), and a project renamed
// (`project.saved`); the holders' subscriptions are checked again there and then, so nothing
// published after that answer reaches them. A periodic re-check is the backstop for what nothing
// announces: a token or session expiring with time, and changes made by the CLI in another process.

export class RealtimeAccessWatch implements Module {
  readonly name = 'websocket access watch';
  #timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly server: PusherServer,
    private readonly grants: ChannelGrants,
    private readonly bus: EventBus,
    private readonly intervalMs: number,
    private readonly log: Logger,
  ) {}

  start(): void {
    this.bus.on(this, 'permissions.changed', (e) => this.recheck(e.userId, e.reason));
    this.bus.on(this, 'project.saved', () => this.recheck(null, 'project_saved'));
    this.#timer = setInterval(() => this.recheck(null, 'periodic'), this.intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.bus.removeListeners(this);
  }

  /** Closes every connection holding a subscription whose access no longer holds; answers how many. */
  recheck(userId: number | null, reason: string): number {
    const endings = this.grants.recheck(userId);
    for (const { socketId, code, message } of endings) {
      this.log.info(
        { socketId, userId: userId ?? undefined, reason, code, message },
        'websocket access ended, closing the connection',
      );
      this.server.end(socketId, code, message);
    }
    return endings.length;
  }
}
