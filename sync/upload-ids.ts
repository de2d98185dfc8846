import type { Database } from '../src/store/database.js';
import { statement } from '../src/store/statements.js';
import { blockOfEdge, ID_BLOCK, inBlock, raiseMark } from '../src/venue/row-ids.js';
import type { EdgeRow } from './edges.js';
import type { UploadedChange } from './protocol.js';

// Shared ids on the cloud's side of an upload (docs/sync.md: ids). An edge's create names the
// id the edge gave; the cloud never lets it land on a row it holds or held. Before, a create
// under a taken id overwrote the attendee (renamed, its e-mail wiped) or was dropped without a
// word, and the two sides diverged for good. Now it is an id_conflict: recorded with the change
// as sent and the row held, not applied, and the upload goes on. Each id an edge uploads also
// raises the cloud's mark of its block, which hello answers, so the edge, even wiped and
// enrolled again, numbers above it.
//
// An edge creates rows only in its own block (edge_id × 2^32 + n): an id outside it is a
// refused change, whoever holds it. So no upload moves the cloud's own counter (ids below
// 2^32) or takes an id another edge will give (docs/security.md: a stolen edge). Another
// project's row is never looked at or named: what is not this project's is as if it did not exist.

const TABLES = { attendee: 'attendees', credential: 'credentials' } as const;
type Entity = keyof typeof TABLES;

export interface IdClash {
  kind: 'id_conflict' | 'refused_change';
  entity: Entity;
  entityId: number;
  /** id_conflict: the row held, when it is this project's. */
  cloudValue: unknown;
  detail: string;
}

/** The entity an uploaded change creates or may insert under its
 * id (an update of a row the cloud lacks inserts it), or null. */
function createdEntity(c: UploadedChange): Entity | null {
  if (c.event === 'attendee.created' || c.event === 'attendee.updated') return 'attendee';
  if (c.event === 'credential.created') return 'credential';
  return null;
}

/**
 * Why an uploaded create (or an update that would insert) cannot take its id on the cloud, or null
 * when it may. Call before applying it. Held in this project: an id_conflict for a create (an
 * update merges). Outside the edge's block: a refused change. Inside it but held or held before
 * elsewhere (only an upload from before edges were held to their blocks put one there): an
 * id_conflict that names no one.
 */
export function idClash(db: Database, edge: EdgeRow, projectId: number, c: UploadedChange): IdClash | null {
  const entity = createdEntity(c);
  if (entity === null) return null;
  const id = Number(c.data.id);
  if (!Number.isSafeInteger(id)) return null; // the store refuses it whole (refused_change)
  const table = TABLES[entity];
  const create = c.event !== 'attendee.updated';
  const notApplied = 'an id is never reused, so the create is not applied';
  const held = statement(db, `SELECT * FROM ${table} WHERE id = ? AND project_id = ?`).get(id, projectId) as
    | Record<string, unknown>
    | undefined;
  if (held)
    return create
      ? {
          kind: 'id_conflict',
          entity,
          entityId: id,
          cloudValue: shown(held),
          detail: `the cloud already holds ${entity} ${id}; ${notApplied}`,
        }
      : null;
  if (
    statement(db, 'SELECT 1 FROM tombstones WHERE project_id = ? AND entity = ? AND entity_id = ?').get(
      projectId,
      entity,
      id,
    )
  ) {
    return create
      ? {
          kind: 'id_conflict',
          entity,
          entityId: id,
          cloudValue: null,
          detail: `the cloud held ${entity} ${id} and it was deleted; ${notApplied}`,
        }
      : null; // an update: the deletion wins (deleted-rows.ts)
  }
  const base = blockOfEdge(edge.id);
  if (!inBlock(id, base)) {
    const verb = create ? 'create' : 'update';
    return {
      kind: 'refused_change',
      entity,
      entityId: id,
      cloudValue: null,
      detail: `no ${entity} ${id} in this project, and an edge creates rows only under the ids of its own block (${base + 1} to ${base + ID_BLOCK - 1}): the ${verb} is not applied`,
    };
  }
  if (
    statement(db, `SELECT 1 FROM ${table} WHERE id = ?`).get(id) ||
    statement(db, 'SELECT 1 FROM tombstones WHERE entity = ? AND entity_id = ?').get(entity, id)
  ) {
    return {
      kind: 'id_conflict',
      entity,
      entityId: id,
      cloudValue: null,
      detail: `the cloud cannot take ${entity} ${id}; ${notApplied}`,
    };
  }
  const holder = Number(c.data.attendee_id);
  if (
    entity === 'credential' &&
    statement(
      db,
      "SELECT 1 FROM sync_conflicts WHERE project_id = ? AND kind = 'id_conflict' AND entity = 'attendee' AND entity_id = ? AND edge_id = ?",
    ).get(projectId, holder, edge.id)
  ) {
    return {
      kind: 'id_conflict',
      entity,
      entityId: id,
      cloudValue: null,
      detail: `its holder's create (attendee ${holder}) was an id conflict: on the cloud it would go to another person; the create is not applied`,
    };
  }
  return null;
}

/** Raises the mark of the edge's block for the id an uploaded row names, applied or not: the edge gave it. */
export function noteUploadedId(db: Database, edge: EdgeRow, c: UploadedChange): void {
  const entity = createdEntity(c);
  const id = Number(c.data.id);
  if (entity && Number.isSafeInteger(id) && inBlock(id, blockOfEdge(edge.id))) raiseMark(db, TABLES[entity], id);
}

function shown(row: Record<string, unknown>): Record<string, unknown> {
  const { project_id: _p, ...rest } = row;
  return typeof rest.extra === 'string' ? { ...rest, extra: JSON.parse(rest.extra) as unknown } : rest;
}
