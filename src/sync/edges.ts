import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import type { Clock } from '../clock.js';
import { iso } from '../clock.js';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import { writeTransaction } from '../store/transactions.js';
import { blockOfEdge, highestInBlock } from '../venue/row-ids.js';
import type { FeedPosition } from './protocol.js';

// The edges a cloud serves (issue 26 item 1). Each has a sync token, `<edge id>|<random>`,
// shown once when the edge is issued; only the SHA-256 of the random part is kept. The token
// opens the sync protocol's routes of its one project and nothing else: the REST API's bearer
// authentication looks in personal_access_tokens, where it is not (docs/sync.md: tokens).
// Revoking keeps the row (the edge's events stay attributed) and refuses its next request.

export interface EdgeRow {
  id: number;
  project_id: number;
  name: string;
  token_hash: Buffer;
  revoked_at: string | null;
  last_contact_at: string | null;
  last_upload_at: string | null;
  protocol_version: number | null;
  app_version: string | null;
  backlog: number | null;
  clock_offset_ms: number | null;
  created_at: string;
}

export const edgeSchema = z.object({
  id: z.number().int(),
  name: z.string(),
  created_at: z.string(),
  last_contact_at: z.string().nullable(),
  last_upload_at: z.string().nullable(),
  revoked_at: z.string().nullable(),
  protocol_version: z.number().int().nullable().describe('the sync protocol version the edge spoke at its last contact'),
  app_version: z.string().nullable(),
  backlog: z.number().int().nullable().describe('events waiting on the edge, as it reported at its last upload'),
  clock_offset_ms: z.number().int().nullable().describe("cloud time minus the edge's clock, measured at the last contact"),
});
export type EdgeResource = z.infer<typeof edgeSchema>;

const sha256 = (value: string) => createHash('sha256').update(value).digest();

export class SyncEdges {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  resource(r: EdgeRow): EdgeResource {
    return {
      id: r.id,
      name: r.name,
      created_at: r.created_at,
      last_contact_at: r.last_contact_at,
      last_upload_at: r.last_upload_at,
      revoked_at: r.revoked_at,
      protocol_version: r.protocol_version,
      app_version: r.app_version,
      backlog: r.backlog,
      clock_offset_ms: r.clock_offset_ms,
    };
  }

  /** A new edge of the project and its token (shown once). */
  create(projectId: number, name: string): { edge: EdgeRow; token: string } {
    const secret = randomBytes(30).toString('base64url');
    const id = writeTransaction(this.db, () => {
      const result = statement(this.db, 'INSERT INTO sync_edges (project_id, name, token_hash, created_at) VALUES (?, ?, ?, ?)').run(projectId, name, sha256(secret), iso(this.clock.now()));
      return Number(result.lastInsertRowid);
    });
    return { edge: this.get(id)!, token: `${id}|${secret}` };
  }

  get(id: number): EdgeRow | null {
    return (statement(this.db, 'SELECT * FROM sync_edges WHERE id = ?').get(id) as EdgeRow | undefined) ?? null;
  }

  list(projectId: number): EdgeRow[] {
    return statement(this.db, 'SELECT * FROM sync_edges WHERE project_id = ? ORDER BY id').all(projectId) as EdgeRow[];
  }

  revoke(id: number): EdgeRow {
    writeTransaction(this.db, () => statement(this.db, 'UPDATE sync_edges SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?').run(iso(this.clock.now()), id));
    return this.get(id)!;
  }

  /** hello's highest_ids: what the cloud holds or held in the edge's block, so the edge numbers above it (docs/sync.md: ids). */
  highestIds(edgeId: number): { attendee: number | null; credential: number | null } {
    const base = blockOfEdge(edgeId);
    return { attendee: highestInBlock(this.db, 'attendees', base), credential: highestInBlock(this.db, 'credentials', base) };
  }

  /**
   * Inside an upload's transaction: the edge's feed position past the batch, kept only when this
   * cloud holds everything before the batch (`from` within what it holds), so a cloud restored
   * from a backup never claims what it lost (docs/sync.md: a cloud restored from a backup).
   */
  noteUploaded(edgeId: number, feed: { from: FeedPosition; to: FeedPosition }): void {
    statement(
      this.db,
      `UPDATE sync_edges SET uploaded_access_event_id = MAX(COALESCE(uploaded_access_event_id, 0), ?),
         uploaded_domain_event_seq = MAX(COALESCE(uploaded_domain_event_seq, 0), ?)
       WHERE id = ? AND COALESCE(uploaded_access_event_id, 0) >= ? AND COALESCE(uploaded_domain_event_seq, 0) >= ?`,
    ).run(feed.to.access_event_id, feed.to.domain_event_seq, edgeId, feed.from.access_event_id, feed.from.domain_event_seq);
  }

  /** hello's uploaded: the edge's feed position past the last batch stored here, or null. */
  uploadedPosition(edgeId: number): FeedPosition | null {
    const row = statement(this.db, 'SELECT uploaded_access_event_id AS a, uploaded_domain_event_seq AS d FROM sync_edges WHERE id = ?').get(edgeId) as
      | { a: number | null; d: number | null }
      | undefined;
    return row && row.a !== null && row.d !== null ? { access_event_id: row.a, domain_event_seq: row.d } : null;
  }

  /** The edge a bearer token opens, or null (unknown, malformed, wrong secret, revoked). */
  authenticate(bearer: string): EdgeRow | null {
    const bar = bearer.indexOf('|');
    if (bar < 1) return null;
    const id = Number(bearer.slice(0, bar));
    if (!Number.isSafeInteger(id) || id < 1) return null;
    const edge = this.get(id);
    if (!edge || edge.revoked_at) return null;
    const given = sha256(bearer.slice(bar + 1));
    return given.length === edge.token_hash.length && timingSafeEqual(given, edge.token_hash) ? edge : null;
  }

  /** Notes a request from the edge (at most one write per second per edge: long polls and batches come often). */
  touch(edge: EdgeRow, fields: { protocol?: number; appVersion?: string; backlog?: number; offsetMs?: number | null; uploaded?: boolean }): void {
    const now = iso(this.clock.now());
    statement(
      this.db,
      `UPDATE sync_edges SET last_contact_at = ?, protocol_version = COALESCE(?, protocol_version), app_version = COALESCE(?, app_version),
         backlog = COALESCE(?, backlog), clock_offset_ms = COALESCE(?, clock_offset_ms), last_upload_at = CASE WHEN ? THEN ? ELSE last_upload_at END WHERE id = ?`,
    ).run(now, fields.protocol ?? null, fields.appVersion ?? null, fields.backlog ?? null, fields.offsetMs ?? null, fields.uploaded ? 1 : 0, now, edge.id);
  }
}
