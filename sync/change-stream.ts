import type { EventBus } from '../src/events/bus.js';
import { VERSIONED } from '../src/access/local-versions.js';
import type { Database } from '../src/store/database.js';
import { statement } from '../src/store/statements.js';
import { readSnapshot } from '../src/store/transactions.js';
import { type Change, ENTITIES, type Entity, REPLICATED } from './protocol.js';

// What the cloud serves edges to download (docs/sync.md): the project's reference rows
// and tombstones whose change version is above the edge's cursor, oldest first, a page at a
// time. The cursor is a change version, not an offset: every write takes the next version of
// one store-wide sequence inside its own write transaction, so writes commit in version order
// and a row changed while an edge is paging moves to the end of the stream with its new
// version; it is read there, never skipped (docs/sync.md: why a cursor over versions).
// Revocations have their own stream (revoked credentials, blocklist entries, retired keys), read alongside
// a long pull so that they never wait behind it. A long poll is held for one edge: when the
// cloud refuses that edge from then on (revoked, suspended: `sync.edge_refused`), its polls are
// let go at once, and the route checks the edge again before it answers (docs/sync.md).

interface Waiter {
  edgeId: number | null;
  done: () => void;
}

/** The replicated entities, as an SQL list (tombstones of forms and the like are not sent). */
export class ChangeStream {
  readonly #waiters = new Map<number, Set<Waiter>>();
  #timer: NodeJS.Timeout | null = null;
  #sequence = 0;
  #stopped = false;

  constructor(
    private readonly db: Database,
    private readonly bus: EventBus,
  ) {}

  /** Wakes long polls on the project's changes (the bus), and once a second on changes by another process. */
  start(): void {
    for (const name of VERSIONED) this.bus.on(this, name, (e) => this.#wake(e.projectId));
    this.bus.on(this, 'attendee.imported', (e) => this.#wake(e.projectId));
    this.bus.on(this, 'sync.edge_refused', (e) => this.#wake(e.projectId, e.edgeId));
    this.#sequence = this.#currentSequence();
    this.#timer = setInterval(() => {
      const now = this.#currentSequence();
      if (now !== this.#sequence) {
        this.#sequence = now;
        for (const project of [...this.#waiters.keys()]) this.#wake(project);
      }
    }, 1000);
    this.#timer.unref();
  }

  /** After stop(): long polls answer at once instead of waiting again. */
  get stopped(): boolean {
    return this.#stopped;
  }

  stop(): void {
    this.#stopped = true;
    this.bus.removeListeners(this);
    if (this.#timer) clearInterval(this.#timer);
    for (const project of [...this.#waiters.keys()]) this.#wake(project);
  }

  /**
   * Up to `limit` changes after `after`, oldest first; has_more when more follow. Two steps: the
   * page's last version from the versions alone (each table's (project_id, version) index
   * covers them), then the rows in (after, last]: no row is read that the page does not send.
   */
  page(
    projectId: number,
    after: number,
    limit: number,
    only?: 'revocations',
    /** false: no public keys (an edge of protocol 1, which knows no such entity). */
    withKeys = true,
  ): { changes: Change[]; last: number; hasMore: boolean } {
    return readSnapshot(this.db, () => {
      const entities = (only ? (['credential', 'blocklist_entry', 'credential_key'] as const) : ENTITIES).filter(
        (entity) => withKeys || entity !== 'credential_key',
      );
      const revokedOnly = (entity: Entity) =>
        !only
          ? ''
          : entity === 'credential'
            ? " AND status = 'revoked'"
            : entity === 'credential_key'
              ? " AND status = 'retired'"
              : '';
      const tombstoned = entities.map((e) => `'${e}'`).join(', ');
      const versions: number[] = [];
      for (const entity of entities) {
        const { table } = REPLICATED[entity];
        const found = statement(
          this.db,
          `SELECT version FROM ${table} WHERE project_id = ? AND version > ?${revokedOnly(entity)} ORDER BY version LIMIT ?`,
        )
          .pluck()
          .all(projectId, after, limit + 1) as number[];
        for (const v of found) versions.push(v);
      }
      if (!only) {
        const found = statement(
          this.db,
          `SELECT version FROM tombstones WHERE project_id = ? AND version > ? AND entity IN (${tombstoned}) ORDER BY version LIMIT ?`,
        )
          .pluck()
          .all(projectId, after, limit + 1) as number[];
        for (const v of found) versions.push(v);
      }
      versions.sort((a, b) => a - b);
      const hasMore = versions.length > limit;
      const last = hasMore ? versions[limit - 1]! : (versions.at(-1) ?? after);
      const changes: Change[] = [];
      if (last > after) {
        for (const entity of entities) {
          const { table, columns } = REPLICATED[entity];
          // Raw rows, each made into its `data` at once: one object per row, not a row and then its copy.
          const rows = statement(
            this.db,
            `SELECT id, version, created_at, updated_at, ${columns.join(', ')} FROM ${table} WHERE project_id = ? AND version > ? AND version <= ?${revokedOnly(entity)} ORDER BY version`,
          )
            .raw(true)
            .all(projectId, after, last) as unknown[][];
          const keys = ['created_at', 'updated_at', ...columns];
          for (const row of rows)
            changes.push({
              entity,
              op: 'upsert',
              id: row[0] as number,
              version: row[1] as number,
              data: this.#data(entity, row, keys),
            });
        }
        if (!only) {
          const tombs = statement(
            this.db,
            `SELECT entity, entity_id, version FROM tombstones WHERE project_id = ? AND version > ? AND version <= ? AND entity IN (${tombstoned}) ORDER BY version`,
          ).all(projectId, after, last) as { entity: Entity; entity_id: number; version: number }[];
          for (const t of tombs) changes.push({ entity: t.entity, op: 'delete', id: t.entity_id, version: t.version });
        }
        changes.sort((a, b) => a.version - b.version);
      }
      return { changes, last, hasMore };
    });
  }

  /** Resolves when the project changes, when the cloud refuses `edgeId` from now on, or after `ms`. */
  wait(projectId: number, ms: number, edgeId: number | null = null): Promise<void> {
    return new Promise((resolve) => {
      if (this.#stopped) return resolve();
      const set = this.#waiters.get(projectId) ?? new Set();
      this.#waiters.set(projectId, set);
      const waiter: Waiter = {
        edgeId,
        done: () => {
          clearTimeout(timer);
          set.delete(waiter);
          if (set.size === 0) this.#waiters.delete(projectId);
          resolve();
        },
      };
      const timer = setTimeout(waiter.done, ms);
      set.add(waiter);
    });
  }

  /** Ends the project's long polls (only those of `edgeId`, when given). */
  #wake(projectId: number, edgeId?: number): void {
    for (const waiter of [...(this.#waiters.get(projectId) ?? [])])
      if (edgeId === undefined || waiter.edgeId === edgeId) waiter.done();
  }

  /** A raw row (id, version, then `keys`) as a change's data:
   * created_at, updated_at, the columns; an attendee type also zone_ids. */
  #data(entity: Entity, row: unknown[], keys: readonly string[]): Record<string, string | number | null | number[]> {
    const data: Record<string, string | number | null | number[]> = {};
    for (let i = 0; i < keys.length; i++) data[keys[i]!] = row[i + 2] as string | number | null;
    if (entity === 'attendee_type') {
      data.zone_ids = statement(
        this.db,
        'SELECT access_zone_id FROM attendee_type_zones WHERE attendee_type_id = ? ORDER BY access_zone_id',
      )
        .pluck()
        .all(row[0]) as number[];
    }
    return data;
  }

  /** The newest change version: every answer of the protocol
   * carries it (docs/sync.md: a cloud restored from a backup). */
  highWater(): number {
    return this.#currentSequence();
  }

  #currentSequence(): number {
    return statement(this.db, 'SELECT value FROM change_sequence WHERE id = 1').pluck().get() as number;
  }
}
