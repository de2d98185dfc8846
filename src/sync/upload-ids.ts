import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import { blockOfEdge, inBlock, raiseMark } from '../venue/row-ids.js';
import type { EdgeRow } from './edges.js';
import type { UploadedChange } from './protocol.js';

// Shared ids on the cloud's side of an upload (docs/sync.md: ids). An edge's create names the
// id the edge gave; the cloud never lets it land on a row it holds or held. Before, a create
// under a taken id overwrote the attendee (renamed, its e-mail wiped) or was dropped without a
// word, and the two sides diverged for good. Now it is an id_conflict: recorded with the change
// as sent and the row held, not applied, and the upload goes on. Each id an edge uploads also
// raises the cloud's mark of its block, which hello answers, so the edge, even wiped and
// enrolled again, numbers above it.

const TABLES = { attendee: 'attendees', credential: 'credentials' } as const;
type Entity = keyof typeof TABLES;

export interface IdClash {
  entity: Entity;
  entityId: number;
  /** The row held, when it is this project's (another project's rows are not shown here). */
  cloudValue: unknown;
  detail: string;
}

/** The entity an uploaded change creates or may insert under its id (an update of a row the cloud lacks inserts it), or null. */
function createdEntity(c: UploadedChange): Entity | null {
  if (c.event === 'attendee.created' || c.event === 'attendee.updated') return 'attendee';
  if (c.event === 'credential.created') return 'credential';
  return null;
}

/** Why an uploaded create cannot take its id on the cloud, or null when the id is free. Call before applying it. */
export function idClash(db: Database, edge: EdgeRow, projectId: number, c: UploadedChange): IdClash | null {
  if (c.event !== 'attendee.created' && c.event !== 'credential.created') return null;
  const entity = createdEntity(c)!;
  const id = Number(c.data.id);
  if (!Number.isSafeInteger(id)) return null; // the store refuses it whole (refused_change)
  const table = TABLES[entity];
  const held = statement(db, `SELECT * FROM ${table} WHERE id = ?`).get(id) as Record<string, unknown> | undefined;
  const notApplied = 'an id is never reused, so the create is not applied';
  if (held && held.project_id === projectId) return { entity, entityId: id, cloudValue: shown(held), detail: `the cloud already holds ${entity} ${id}; ${notApplied}` };
  if (held) return { entity, entityId: id, cloudValue: null, detail: `another project on the cloud holds ${entity} ${id}; ${notApplied}` };
  if (statement(db, 'SELECT 1 FROM tombstones WHERE entity = ? AND entity_id = ?').get(entity, id)) {
    return { entity, entityId: id, cloudValue: null, detail: `the cloud held ${entity} ${id} and it was deleted; ${notApplied}` };
  }
  const holder = Number(c.data.attendee_id);
  if (
    entity === 'credential' &&
    statement(db, "SELECT 1 FROM sync_conflicts WHERE project_id = ? AND kind = 'id_conflict' AND entity = 'attendee' AND entity_id = ? AND edge_id = ?").get(projectId, holder, edge.id)
  ) {
    return { entity, entityId: id, cloudValue: null, detail: `its holder's create (attendee ${holder}) was an id conflict: on the cloud it would go to another person; the create is not applied` };
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
