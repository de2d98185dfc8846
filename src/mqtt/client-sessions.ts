import type { Aedes, Client } from 'aedes';
import type { Logger } from '../logger.js';
import { sessionStoreOf, type SessionStore } from './aedes-internals.js';
import type { ConnectedClients } from './connected-clients.js';
import type { Verdict } from '../result.js';
import { describeIdentity, type MqttIdentity } from './identities.js';

// MQTT client ids belong to their identity (docs/mqtt.md: "Client ids and
// sessions"). Without this, anyone with a token could connect with a reader's client id: the
// broker closes the existing connection of that id (MQTT-3.1.4-2), so the reader is kicked off
// and, reconnecting, kicks back in a loop; with clean=false they would resume the reader's
// session and be sent the decisions queued for it.
//
// Each identity gets a client id space of its own: at CONNECT, once the credentials are known,
// the broker's id for the client becomes `<identity>/<client id>` (reader:4/door-1,
// staff:7/dashboard). The same identity reconnecting with the same id takes its own connection
// and session over, as MQTT requires; another identity with the same id gets a connection and a
// session of its own and never meets the reader's. Nobody can hold an id so as to keep its
// owner out, and a session records who made it in its very id. MQTT 3.1.1 never tells a client
// its id back, so clients see nothing of this.
//
// An identity is the reader, the gateway or the staff user (whichever of their tokens): each has
// at most `mqtt.maxConnectionsPerIdentity` connections open, a reconnect with one of its own ids
// not counted (it replaces that connection). Past it, CONNACK 3 (server unavailable): clients
// retry, and get in once one of their connections has closed.
//
// Sessions live in aedes' persistence, which is its default in-memory one: sessions, their queues
// and the record here end with the process. The record keeps which persistent sessions exist and
// whose they are, so those of an identity whose access ended are dropped, queue and all.
//
// aedes internals used here, and nowhere else for sessions: `client.id` is rewritten inside the
// authenticate hook (aedes 1.2 sets it just before calling authenticate and reads it for
// everything after: session lookup, takeover, wills, registration); `client.closed`; and the
// persistence's subscriptionsByClient, cleanSubscriptions, outgoingStream and
// outgoingClearMessageId (aedes-persistence 11), through aedes-internals.ts; which client ids
// are connected comes from aedes' public events (connected-clients.ts). aedes is pinned to
// ~1.2.0 for these.

export interface ConnectionLimits {
  reader: number;
  gateway: number;
  staff: number;
}

/** Who a client id space belongs to: the reader, the gateway, or the staff user (not the token). */
export const identityKey = (who: MqttIdentity): string =>
  who.kind === 'staff'
    ? `staff:${who.userId}`
    : who.kind === 'reader'
      ? `reader:${who.readerId}`
      : `gateway:${who.gatewayId}`;

export class ClientSessions {
  /** Admitted connections by identity key, until they close. */
  readonly #open = new Map<string, Set<Client>>();
  /** Persistent sessions (clean: false) by the broker's client id, with the identity that made them. */
  readonly #persistent = new Map<string, MqttIdentity>();

  constructor(
    private readonly aedes: Aedes,
    private readonly connected: ConnectedClients,
    private readonly limits: ConnectionLimits,
    private readonly log: Logger,
  ) {}

  /**
   * At CONNECT, once the credentials name the identity: refused past the identity's connection
   * cap; otherwise the client id is moved into the identity's space and the connection counted.
   */
  admit(client: Client, who: MqttIdentity): Verdict {
    const key = identityKey(who);
    const id = `${key}/${client.id}`;
    let open = this.#open.get(key);
    if (!open) this.#open.set(key, (open = new Set()));
    let others = 0;
    for (const c of open) {
      if (c.closed) open.delete(c);
      else if (c.id !== id) others++; // the same id is taken over, not added
    }
    const limit = this.limits[who.kind];
    if (others >= limit)
      return { ok: false, reason: `${limit} connections open already (mqtt.maxConnectionsPerIdentity.${who.kind})` };
    (client as { id: string }).id = id;
    open.add(client);
    return { ok: true };
  }

  /** The connection is ready: its session is persistent (recorded, with its identity) or was cleaned at CONNECT. */
  ready(client: Client, who: MqttIdentity): void {
    if (client.clean) this.#persistent.delete(client.id);
    else this.#persistent.set(client.id, who);
  }

  closed(client: Client, who: MqttIdentity): void {
    const key = identityKey(who);
    const open = this.#open.get(key);
    if (!open) return;
    open.delete(client);
    if (open.size === 0) this.#open.delete(key);
  }

  /** The persistent sessions whose identity matches, by the broker's client id. */
  persistent(match: (who: MqttIdentity) => boolean): [string, MqttIdentity][] {
    return [...this.#persistent].filter(([, who]) => match(who));
  }

  /**
   * The persistent sessions of matching identities whose client is away, checked with the filters
   * they keep (docs/security.md, attack 1): dropped when `holds` refuses them, forgotten when they keep none.
   */
  recheckAway(
    match: (who: MqttIdentity) => boolean,
    holds: (who: MqttIdentity, filters: string[]) => Verdict,
    reason: string,
  ): void {
    for (const [clientId, who] of this.persistent(match)) {
      if (this.#isConnected(clientId)) continue;
      this.#store.subscriptionsByClient({ id: clientId }).then(
        (subs) => {
          if (subs.length === 0) return void this.#persistent.delete(clientId);
          const verdict = holds(
            who,
            subs.map((s) => s.topic),
          );
          if (verdict.ok || this.#isConnected(clientId)) return;
          this.log.info(
            { clientId, who: describeIdentity(who), reason, why: verdict.reason },
            'mqtt persistent session dropped: its access ended',
          );
          return this.drop(clientId);
        },
        (err: Error) => this.log.warn({ clientId, err: err.message }, 'mqtt session could not be read'),
      );
    }
  }

  /**
   * Drops a session: its subscriptions (aedes keeps them across a close otherwise) and the
   * messages queued for it, so a reconnect finds nothing of it (session present 0).
   */
  async drop(clientId: string): Promise<void> {
    this.#persistent.delete(clientId);
    const store = this.#store;
    const client = { id: clientId };
    try {
      await store.cleanSubscriptions(client);
      // No call empties a queue: each queued packet is cleared by its message id (undefined for
      // one never sent, which clears one such packet per call).
      for await (const packet of store.outgoingStream(client)) await store.outgoingClearMessageId(client, packet);
    } catch (err) {
      this.log.warn({ clientId, err: (err as Error).message }, 'mqtt session could not be dropped');
    }
  }

  #isConnected(clientId: string): boolean {
    return this.connected.has(clientId);
  }

  get #store(): SessionStore {
    return sessionStoreOf(this.aedes);
  }
}
