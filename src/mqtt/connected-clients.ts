import type { Aedes, Client } from 'aedes';

// The clients aedes has registered, followed from its public events ('client' when a connect
// completes, 'clientDisconnect' when it unregisters one) rather than read from its private
// client map (docs/decisions.md, "Other libraries' internals behind one door each"). A takeover (the same client id
// connecting again) unregisters the old client before registering
// the new one, so an id maps to its live connection only.

export class ConnectedClients {
  readonly #byId = new Map<string, Client>();

  constructor(aedes: Aedes) {
    aedes.on('client', (client) => this.#byId.set(client.id, client));
    aedes.on('clientDisconnect', (client) => {
      if (this.#byId.get(client.id) === client) this.#byId.delete(client.id);
    });
  }

  has(clientId: string): boolean {
    return this.#byId.has(clientId);
  }

  all(): Client[] {
    return [...this.#byId.values()];
  }
}
