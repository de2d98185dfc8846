import { Redis } from 'ioredis';
import type { Logger } from '../logger.js';
import type { Module } from '../lifecycle.js';
import { redactRedisUrl, redisConnectionOptions } from './redis-url.js';

// The Redis connections of one instance of a cloud (docs/realtime.md, "Several instances"):
// a command client (the shared channel state, the pub/sub publishes, the rate limits'
// counters) and a subscriber client (a connection in subscribe mode can send nothing else).
// Both are made here, unconnected; start() connects them and stops the start-up with the URL
// (password hidden) when Redis cannot be reached; a connection lost later is re-made by
// ioredis, with a back-off, and logged once per outage. Commands made while it is down fail
// at once rather than queue (enableOfflineQueue off): the rate limits fall back to their memory
// limiter (http/rate-limit.ts) and the fan-out to this instance's own subscribers.

export interface RedisSettings {
  url: string;
  connectTimeoutMs: number;
}

export class RedisConnections implements Module {
  readonly name = 'redis';
  readonly command: Redis;
  readonly subscriber: Redis;
  readonly #where: string;
  #stopping = false;

  constructor(
    readonly settings: RedisSettings,
    private readonly log: Logger,
  ) {
    this.#where = redactRedisUrl(settings.url);
    const options = {
      ...redisConnectionOptions(settings.url),
      lazyConnect: true,
      enableOfflineQueue: false,
      connectTimeout: settings.connectTimeoutMs,
      maxRetriesPerRequest: 1,
      // Reconnects back off to 2 s at most: an instance is back on the fan-out soon after Redis is.
      retryStrategy: (attempt: number) => (this.#stopping ? null : Math.min(attempt * 100, 2000)),
    };
    this.command = new Redis({ ...options, connectionName: 'gatehouse-command' });
    this.subscriber = new Redis({ ...options, connectionName: 'gatehouse-subscriber' });
  }

  async start(): Promise<void> {
    this.#stopping = false;
    try {
      await Promise.all([this.#connect(this.command), this.#connect(this.subscriber)]);
    } catch (err) {
      this.#stopping = true;
      this.command.disconnect();
      this.subscriber.disconnect();
      throw new Error(`Redis at ${this.#where} (redis.url) could not be reached: ${(err as Error).message}`);
    }
    for (const [role, client] of [
      ['command', this.command],
      ['subscriber', this.subscriber],
    ] as const)
      this.#watch(role, client);
    this.log.info({ redis: this.#where }, 'connected to Redis');
  }

  /** Connects, or rejects with the first error (ioredis would otherwise keep retrying). */
  #connect(client: Redis): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const failed = (err: Error) => {
        client.off('ready', ready);
        reject(err);
      };
      const ready = () => {
        client.off('error', failed);
        resolve();
      };
      client.once('error', failed);
      client.once('ready', ready);
      client.connect().catch(() => {}); // the 'error' above carries the reason
    });
  }

  /** One warning when the connection is lost, one line when it is back. */
  #watch(role: string, client: Redis): void {
    let down = false;
    client.on('error', (err: Error) => {
      if (down || this.#stopping) return;
      down = true;
      this.log.warn({ err, redis: this.#where, client: role }, 'Redis connection lost; reconnecting');
    });
    client.on('close', () => {
      if (down || this.#stopping) return;
      down = true;
      this.log.warn({ redis: this.#where, client: role }, 'Redis connection closed; reconnecting');
    });
    client.on('ready', () => {
      if (!down) return;
      down = false;
      this.log.info({ redis: this.#where, client: role }, 'Redis connection back');
    });
  }

  /** Whether commands can be sent now. */
  get ready(): boolean {
    return this.command.status === 'ready';
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    await Promise.allSettled(
      [this.command, this.subscriber].map((client) =>
        client.status === 'ready' ? client.quit() : Promise.resolve(client.disconnect()),
      ),
    );
  }
}
