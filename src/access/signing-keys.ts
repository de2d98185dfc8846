import { type Ed25519PublicKey, ed25519PublicKey } from '../credentials/ed25519.js';

// The projects' public keys an engine verifies signed credential values with (docs/credentials.md:
// deciding a signed value offline), held ready to verify with (credentials/ed25519.ts), and a scan
// never waits on SQLite. Filled from credential_keys at load (venue-index.ts) and kept coherent
// like the other indexed rows: a key written locally through its bus events (index-sync.ts), a
// key an edge's replica downloaded through access/changed-rows.ts. Never a private key.

export interface SigningKeyEntry {
  id: number;
  projectId: number;
  key: Ed25519PublicKey;
  retired: boolean;
}

type Row = Record<string, unknown>;

export class SigningKeys {
  readonly #byId = new Map<number, SigningKeyEntry>();

  /** The key with this id, whatever its project (the caller checks the project). */
  get(id: number): SigningKeyEntry | undefined {
    return this.#byId.get(id);
  }

  get size(): number {
    return this.#byId.size;
  }

  /** A credential_keys row (or its REST resource with project_id): id, project_id, public_key, status. */
  put(r: Row): void {
    const id = r.id as number;
    const publicKey = r.public_key as string;
    const held = this.#byId.get(id);
    let key: Ed25519PublicKey;
    try {
      // A key's public part never changes: only its status does, so it is read once.
      key = held && held.projectId === r.project_id ? held.key : ed25519PublicKey(publicKey);
    } catch {
      // Not an Ed25519 public key: nothing can verify under it, as under an unknown key.
      this.#byId.delete(id);
      return;
    }
    this.#byId.set(id, { id, projectId: r.project_id as number, key, retired: r.status === 'retired' });
  }

  drop(id: number): void {
    this.#byId.delete(id);
  }
}
