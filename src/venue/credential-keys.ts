import type { KeyObject } from 'node:crypto';
import type { Clock } from '../clock.js';
import { iso } from '../clock.js';
import { generateSigningKey, privateKeyObject } from '../credentials/signed-value.js';
import { AppError, found } from '../errors.js';
import type { EventBus } from '../events/bus.js';
import { commit, type Work } from '../events/unit-of-work.js';
import type { CredentialKeyResource } from '../resources/venue.js';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import { VersionedTable } from './versioned-table.js';

// A project's credential keys (docs/credentials.md: the key lifecycle), the one writer of
// credential_keys on a cloud or standalone box. A project has at most one `signing` key, made by
// its first signed credential or by a rotation, which turns the previous one `verifying`; a
// key no longer trusted is `retired`. Every write takes a change version, so the change stream
// can carry the public part to edges (the edge's replica writes through replica-rows.ts).
//
// Keys are made only where private keys may be: an edge holds public keys only (private_key
// null), so it can verify a signed value but never mint one. The private key leaves this module
// only as a KeyObject, never in a resource, an event or a log line.

export interface CredentialKeyRow {
  id: number;
  project_id: number;
  public_key: string;
  private_key: string | null;
  status: 'signing' | 'verifying' | 'retired';
  retired_at: string | null;
  version: number;
  created_at: string;
  updated_at: string;
}

/** What REST, events and edges see of a key: its public part. */
export const credentialKeyResource = (row: CredentialKeyRow): CredentialKeyResource => ({
  id: row.id,
  public_key: row.public_key,
  status: row.status,
  created_at: row.created_at,
  retired_at: row.retired_at,
});

/** The key a credential is signed with. */
export interface SigningKey {
  id: number;
  privateKey: KeyObject;
}

export class CredentialKeys {
  readonly table: VersionedTable<CredentialKeyRow>;
  /** Private keys parsed once (createPrivateKey is not free), by key id, with the public key they were parsed
   * for: a key made in a write that rolled back may leave its id to another. */
  readonly #privateKeys = new Map<number, { publicKey: string; key: KeyObject }>();

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly bus: EventBus,
    /** False on an edge: it makes no key and signs nothing. */
    private readonly canSign: boolean,
  ) {
    this.table = new VersionedTable(db, clock, 'credential_keys', 'credential_key');
  }

  list(projectId: number): CredentialKeyRow[] {
    return statement(this.db, 'SELECT * FROM credential_keys WHERE project_id = ? ORDER BY id').all(
      projectId,
    ) as CredentialKeyRow[];
  }

  get(projectId: number, id: number): CredentialKeyRow {
    return found(this.table.find(projectId, id), 'Credential key');
  }

  /** The project's signing key, made now if it has none (its first signed credential). Inside the caller's write. */
  signingKey(projectId: number, work: Work): SigningKey {
    this.#refuseOnEdge();
    const current = statement(this.db, "SELECT * FROM credential_keys WHERE project_id = ? AND status = 'signing'").get(
      projectId,
    ) as CredentialKeyRow | undefined;
    const row = current ?? this.#make(projectId, work);
    return { id: row.id, privateKey: this.#privateKey(row) };
  }

  /** A new signing key; the previous one (if any) becomes verifying: what it signed still verifies. */
  rotate(projectId: number): CredentialKeyRow {
    this.#refuseOnEdge();
    return commit(this.db, this.bus, (work) => {
      const previous = statement(
        this.db,
        "SELECT id FROM credential_keys WHERE project_id = ? AND status = 'signing'",
      ).get(projectId) as { id: number } | undefined;
      if (previous) this.#announce(work, 'updated', this.table.update(projectId, previous.id, { status: 'verifying' }));
      return this.#make(projectId, work);
    });
  }

  /** What the key signed no longer verifies. The signing key is refused (rotate first); a retired key is
   * answered as it is. */
  retire(projectId: number, id: number): CredentialKeyRow {
    this.#refuseOnEdge();
    return commit(this.db, this.bus, (work) => {
      const current = this.get(projectId, id);
      if (current.status === 'signing') throw new AppError('signing_key_in_use');
      if (current.status === 'retired') return current;
      const row = this.table.update(projectId, id, { status: 'retired', retired_at: iso(this.clock.now()) });
      this.#privateKeys.delete(id);
      this.#announce(work, 'updated', row);
      return row;
    });
  }

  #make(projectId: number, work: Work): CredentialKeyRow {
    const { publicKey, privateKey } = generateSigningKey();
    const row = this.table.insert(projectId, { public_key: publicKey, private_key: privateKey, status: 'signing' });
    this.#announce(work, 'created', row);
    return row;
  }

  #announce(work: Work, what: 'created' | 'updated', row: CredentialKeyRow): void {
    work.emit(`credential_key.${what}`, {
      projectId: row.project_id,
      resource: credentialKeyResource(row),
      version: row.version,
    });
  }

  #privateKey(row: CredentialKeyRow): KeyObject {
    const cached = this.#privateKeys.get(row.id);
    if (cached?.publicKey === row.public_key) return cached.key;
    if (!row.private_key) throw new AppError('signing_not_on_edge');
    const key = privateKeyObject(row.private_key);
    this.#privateKeys.set(row.id, { publicKey: row.public_key, key });
    return key;
  }

  #refuseOnEdge(): void {
    if (!this.canSign) throw new AppError('signing_not_on_edge');
  }
}
