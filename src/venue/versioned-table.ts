import type { Clock } from '../clock.js';
import { iso } from '../clock.js';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import { nextRowId, SHARED_ID_TABLES } from './row-ids.js';

// Writes to a project-scoped venue table: every insert and update takes the next change
// version and stamps updated_at; a delete leaves a tombstone with its own version. Callers run
// these inside commit() so the row, its version and its events land together.

export function nextVersion(db: Database): number {
  const row = statement(db, 'UPDATE change_sequence SET value = value + 1 WHERE id = 1 RETURNING value').get() as {
    value: number;
  };
  return row.value;
}

/** Takes `count` change versions at once (a bulk write: an import, a downloaded page); answers the last of them, the
 * first being `last - count + 1`. The same versions `count` calls of nextVersion() would give. */
export function reserveVersions(db: Database, count: number): number {
  return statement(db, 'UPDATE change_sequence SET value = value + ? WHERE id = 1 RETURNING value')
    .pluck()
    .get(count) as number;
}

type Values = Record<string, string | number | null>;

export class VersionedTable<Row extends { id: number; project_id: number }> {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    readonly table: string,
    /** The entity name written in tombstones and events (access_zone, reader, ...). */
    readonly entity: string,
  ) {}

  find(projectId: number, id: number): Row | null {
    return (
      (statement(this.db, `SELECT * FROM ${this.table} WHERE project_id = ? AND id = ?`).get(projectId, id) as
        | Row
        | undefined) ?? null
    );
  }

  list(projectId: number, offset: number, limit: number): { items: Row[]; total: number } {
    const items = statement(
      this.db,
      `SELECT * FROM ${this.table} WHERE project_id = ? ORDER BY id LIMIT ? OFFSET ?`,
    ).all(projectId, limit, offset) as Row[];
    const { n } = statement(this.db, `SELECT COUNT(*) AS n FROM ${this.table} WHERE project_id = ?`).get(projectId) as {
      n: number;
    };
    return { items, total: n };
  }

  exists(projectId: number, column: string, value: string | number, exceptId = -1): boolean {
    return (
      statement(this.db, `SELECT 1 FROM ${this.table} WHERE project_id = ? AND ${column} = ? AND id != ?`).get(
        projectId,
        value,
        exceptId,
      ) !== undefined
    );
  }

  insert(projectId: number, values: Values): Row {
    const version = nextVersion(this.db);
    const now = iso(this.clock.now());
    const all: Values = { ...values, project_id: projectId, version, created_at: now, updated_at: now };
    // An id given in `values` was taken with nextRowId() already (a signed credential signs its own id).
    if (SHARED_ID_TABLES.has(this.table) && all.id === undefined) all.id = nextRowId(this.db, this.table);
    const columns = Object.keys(all);
    const result = statement(
      this.db,
      `INSERT INTO ${this.table} (${columns.join(', ')}) VALUES (${columns.map((c) => `@${c}`).join(', ')})`,
    ).run(all);
    return this.find(projectId, Number(result.lastInsertRowid))!;
  }

  update(projectId: number, id: number, values: Values): Row {
    const version = nextVersion(this.db);
    const all: Values = { ...values, version, updated_at: iso(this.clock.now()) };
    const sets = Object.keys(all).map((c) => `${c} = @${c}`);
    statement(this.db, `UPDATE ${this.table} SET ${sets.join(', ')} WHERE project_id = @project_id AND id = @id`).run({
      ...all,
      project_id: projectId,
      id,
    });
    return this.find(projectId, id)!;
  }

  /** Deletes the row, leaving a tombstone dated `at` (by default now); answers the deletion's version. */
  delete(projectId: number, id: number, at = iso(this.clock.now())): number {
    const version = nextVersion(this.db);
    statement(this.db, `DELETE FROM ${this.table} WHERE project_id = ? AND id = ?`).run(projectId, id);
    writeTombstone(this.db, projectId, this.entity, id, version, at);
    return version;
  }
}

/** The tombstone a deletion leaves, with the deletion's version: how a download hears of it (docs/decisions.md). */
export function writeTombstone(
  db: Database,
  projectId: number,
  entity: string,
  entityId: number,
  version: number,
  deletedAt: string,
): void {
  statement(
    db,
    'INSERT INTO tombstones (project_id, entity, entity_id, version, deleted_at) VALUES (?, ?, ?, ?, ?)',
  ).run(projectId, entity, entityId, version, deletedAt);
}
