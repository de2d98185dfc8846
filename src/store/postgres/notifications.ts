import type { Logger } from '../../logger.js';
import { endConnection, type Native, native } from './libpq.js';
import { CHANNEL, type PgDatabase } from './pg-database.js';

// Another instance's commits, heard as they happen (docs/decisions.md: the cloud on PostgreSQL).
// Every write transaction of every instance ends with a notice on one channel (pg-database.ts);
// this connection listens on it, asynchronously (libpq's notices arrive on its socket), and tells
// `onChange` at once of a commit by another instance: the external-changes poll then reads what
// changed (access/external-changes.ts), announces it on this instance's bus, and long polls and
// WebSockets here hear of it as of a change made here. The poll's own timer (a second) still runs:
// a notice lost with a dropped connection is read at the next tick, and the listener reconnects.

interface Notice {
  relname: string;
  extra: string;
}

export class PgNotifications {
  #client: (Native & NodeJS.EventEmitter & Record<string, unknown>) | null = null;
  #connecting = false;
  #retry: NodeJS.Timeout | null = null;
  readonly stats = { heard: 0, reconnects: 0 };

  constructor(
    private readonly db: PgDatabase,
    private readonly onChange: () => void,
    private readonly log: Logger,
  ) {}

  start(): void {
    this.#connect();
  }

  stop(): void {
    if (this.#retry) clearTimeout(this.#retry);
    const client = this.#client;
    this.#client = null;
    // A connection still being made (in libpq's thread) is ended once made, in #connect.
    if (client && !this.#connecting) endConnection(client);
  }

  #connect(): void {
    const Client = native();
    const client = new Client({ types: { getTypeParser: () => (v: string) => v } }) as unknown as Native &
      NodeJS.EventEmitter &
      Record<string, unknown>;
    this.#client = client;
    this.#connecting = true;
    const again = (err: Error) => {
      if (this.#client !== client) return; // stopped, or already given up on
      this.#client = null;
      endConnection(client);
      this.log.warn({ err }, "listening for other instances' commits failed: trying again in a second");
      this.stats.reconnects++;
      this.#retry = setTimeout(() => this.#connect(), 1000);
      this.#retry.unref();
    };
    client.on('error', (err: Error) => again(err));
    (client as unknown as { connect(url: string, cb: (err?: Error) => void): void }).connect(this.db.name, (err) => {
      this.#connecting = false;
      if (this.#client !== client) return endConnection(client); // stopped while connecting
      if (err) return again(err);
      (client as unknown as { query(text: string, cb: (err?: Error) => void): void }).query(
        `LISTEN ${CHANNEL}`,
        (error) => {
          if (this.#client !== client) return;
          if (error) return again(error);
          // Only once connected: listening starts libpq's reader, which an unconnected client must not.
          client.on('notification', (notice: Notice) => {
            if (notice.relname !== CHANNEL || notice.extra === this.db.instance) return;
            this.stats.heard++;
            this.onChange();
          });
        },
      );
    });
  }
}
