import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import type { Clock } from '../src/clock.js';
import { iso } from '../src/clock.js';
import type { EventBus } from '../src/events/bus.js';
import type { Database } from '../src/store/database.js';
import { statement } from '../src/store/statements.js';
import { writeTransaction } from '../src/store/transactions.js';
import { blockOfEdge, highestInBlock } from '../src/venue/row-ids.js';
import type { FeedPosition } from './protocol.js';

// The edges a cloud serves (docs/sync.md). Each has a sync token, `<edge id>|<random>`,
// shown once when the edge is issued; only the SHA-256 of the random part is kept. The token
// opens the sync protocol's routes of its one project and nothing else: the REST API's bearer
// authentication looks in personal_access_tokens, where it is not (docs/sync.md: tokens).
// Revoking keeps the row (the edge's events stay attributed) and refuses its next request.
// Each edge stands on the access of the user who issued it (docs/sync.md: edges and their
// issuers): when that user loses the project the edge is suspended (accounts/issuer-access.ts
// decides) until an administrator re-confirms it. A revocation or a suspension is announced
// (`sync.edge_refused`), so long polls held open for the edge end at once.

/** Why an edge is suspended (the 401's `reason`). */
export type SuspendedReason = 'issuer_lost_access';

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
  /** The user whose access the edge stands on; null once that user is deleted. */
  issued_by: number | null;
  suspended_at: string | null;
  suspended_reason: SuspendedReason | null;
}

export const edgeSchema = z.object({
  id: z.number().int(),
  name: z.string(),
  created_at: z.string(),
  last_contact_at: z.string().nullable(),
  last_upload_at: z.string().nullable(),
  revoked_at: z.string().nullable(),
  protocol_version: z
    .number()
    .int()
    .nullable()
    .describe('the sync protocol version the edge spoke at its last contact'),
  app_version: z.string().nullable(),
  backlog: z.number().int().nullable().describe('events waiting on the edge, as it reported at its last upload'),
  clock_offset_ms: z
    .number()
    .int()
    .nullable()
    .describe("cloud time minus the edge's clock, measured at the last contact"),
  issued_by: z
    .number()
    .int()
    .nullable()
    .describe('the user who issued the edge (or last re-confirmed it); null once that user is deleted'),
  suspended_at: z
    .string()
    .nullable()
    .describe(
      'set when the issuer lost access to the project: the edge is refused until an administrator re-confirms it',
    ),
  suspended_reason: z.enum(['issuer_lost_access']).nullable(),
});
export type EdgeResource = z.infer<typeof edgeSchema>;

const sha256 = (value: string) => createHash('sha256').update(value).digest();

export class SyncEdges {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly bus: EventBus,
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
      issued_by: r.issued_by,
      suspended_at: r.suspended_at,
      suspended_reason: r.suspended_reason,
    };
  }

  /** A new edge of the project, issued by `issuedBy`, and its token (shown once). */
  create(projectId: number, name: string, issuedBy: number): { edge: EdgeRow; token: string } {
    const secret = randomBytes(30).toString('base64url');
    const id = writeTransaction(this.db, () => {
      const result = statement(
        this.db,
        'INSERT INTO sync_edges (project_id, name, token_hash, created_at, issued_by) VALUES (?, ?, ?, ?, ?)',
      ).run(projectId, name, sha256(secret), iso(this.clock.now()), issuedBy);
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
    writeTransaction(this.db, () =>
      statement(this.db, 'UPDATE sync_edges SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?').run(
        iso(this.clock.now()),
        id,
      ),
    );
    const edge = this.get(id)!;
    this.bus.emit('sync.edge_refused', { projectId: edge.project_id, edgeId: id, refusal: 'revoked' });
    return edge;
  }

  /** The live edges (not revoked, not suspended) standing on this user's access, or on nobody's (issuer deleted). */
  standingOn(userId: number | null): EdgeRow[] {
    return statement(
      this.db,
      'SELECT * FROM sync_edges WHERE (issued_by = ? OR issued_by IS NULL) AND revoked_at IS NULL AND suspended_at IS NULL ORDER BY id',
    ).all(userId) as EdgeRow[];
  }

  /** Suspends a live edge (once: a suspended or revoked one is left as it is); its open long polls end. */
  suspend(edge: Pick<EdgeRow, 'id' | 'project_id'>, reason: SuspendedReason): void {
    const changed = writeTransaction(
      this.db,
      () =>
        statement(
          this.db,
          'UPDATE sync_edges SET suspended_at = ?, suspended_reason = ? WHERE id = ? AND suspended_at IS NULL AND revoked_at IS NULL',
        ).run(iso(this.clock.now()), reason, edge.id).changes,
    );
    if (changed > 0)
      this.bus.emit('sync.edge_refused', { projectId: edge.project_id, edgeId: edge.id, refusal: 'suspended' });
  }

  /** An administrator re-confirms an edge: it stands on their access from now on, and a suspension is lifted. */
  confirm(id: number, adminId: number): EdgeRow {
    writeTransaction(this.db, () =>
      statement(
        this.db,
        'UPDATE sync_edges SET issued_by = ?, suspended_at = NULL, suspended_reason = NULL WHERE id = ?',
      ).run(adminId, id),
    );
    return this.get(id)!;
  }

  /** hello's highest_ids: what the cloud holds or held in the edge's
   * block, so the edge numbers above it (docs/sync.md: ids). */
  highestIds(edgeId: number): { attendee: number | null; credential: number | null } {
    const base = blockOfEdge(edgeId);
    return {
      attendee: highestInBlock(this.db, 'attendees', base),
      credential: highestInBlock(this.db, 'credentials', base),
    };
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
    ).run(
      feed.to.access_event_id,
      feed.to.domain_event_seq,
      edgeId,
      feed.from.access_event_id,
      feed.from.domain_event_seq,
    );
  }

  /** hello's uploaded: the edge's feed position past the last batch stored here, or null. */
  uploadedPosition(edgeId: number): FeedPosition | null {
    const row = statement(
      this.db,
      'SELECT uploaded_access_event_id AS a, uploaded_domain_event_seq AS d FROM sync_edges WHERE id = ?',
    ).get(edgeId) as { a: number | null; d: number | null } | undefined;
    return row && row.a !== null && row.d !== null ? { access_event_id: row.a, domain_event_seq: row.d } : null;
  }

  /** The edge a bearer token opens, or null (unknown, malformed, wrong secret, revoked). A suspended edge is
   * answered: the caller refuses it with its reason. */
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
  touch(
    edge: EdgeRow,
    fields: { protocol?: number; appVersion?: string; backlog?: number; offsetMs?: number | null; uploaded?: boolean },
  ): void {
    const now = iso(this.clock.now());
    statement(
      this.db,
      `UPDATE sync_edges SET last_contact_at = ?, protocol_version = COALESCE(?, protocol_version), app_version = COALESCE(?, app_version),
         backlog = COALESCE(?, backlog), clock_offset_ms = COALESCE(?, clock_offset_ms), last_upload_at = CASE WHEN ? THEN ? ELSE last_upload_at END WHERE id = ?`,
    ).run(
      now,
      fields.protocol ?? null,
      fields.appVersion ?? null,
      fields.backlog ?? null,
      fields.offsetMs ?? null,
      fields.uploaded ? 1 : 0,
      now,
      edge.id,
    );
  }
}
