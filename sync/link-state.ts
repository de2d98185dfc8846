import type { ProjectRepository } from '../src/accounts/projects.js';
import type { FeedCursor } from '../src/feed/feed.js';
import type { Database } from '../src/store/database.js';
import { statement } from '../src/store/statements.js';
import { raiseMark } from '../src/venue/row-ids.js';
import type { FeedPosition } from './protocol.js';

// The edge's link to its cloud, as it is kept (sync_link, one row once linked; docs/sync.md):
// who the edge is, its cursors, what the cloud acknowledged, the clock offset last known, and
// the last time the cloud was found behind it. The one module that reads and writes the table;
// writes run inside the caller's transaction.

export interface LinkRow {
  edge_id: number;
  project_id: number;
  cloud_project_id: number;
  download_cursor: string | null;
  revocation_cursor: string | null;
  last_upload_at: string | null;
  last_download_at: string | null;
  clock_offset_ms: number | null;
  acked_access_event_id: number | null;
  acked_domain_event_seq: number | null;
  resync_pending: number;
  cloud_rollback_at: string | null;
  cloud_rollback_resent: number | null;
  cloud_rollback_pulled: number | null;
  agreed_protocol: number | null;
}

export class LinkState {
  constructor(
    private readonly db: Database,
    private readonly projects: ProjectRepository,
  ) {}

  row(): LinkRow | null {
    return (statement(this.db, 'SELECT * FROM sync_link WHERE id = 1').get() as LinkRow | undefined) ?? null;
  }

  /** A protocol path of the synced project (`/api/v1/projects/{team}/{project}/sync/{suffix}`). */
  path(suffix: string): string {
    const project = this.projects.find(this.row()!.project_id)!;
    const team = statement(this.db, 'SELECT slug FROM teams WHERE id = ?').pluck().get(project.team_id) as string;
    return `/api/v1/projects/${encodeURIComponent(team)}/${encodeURIComponent(project.slug)}/sync/${suffix}`;
  }

  /** At the first contact: the edge's id and project; numbered above
   * every id the cloud holds or held in its block (docs/sync.md: ids). */
  enrol(
    edgeId: number,
    projectId: number,
    cloudProjectId: number,
    highest: { attendee: number | null; credential: number | null },
  ): void {
    statement(
      this.db,
      'INSERT OR IGNORE INTO sync_link (id, edge_id, project_id, cloud_project_id) VALUES (1, ?, ?, ?)',
    ).run(edgeId, projectId, cloudProjectId);
    if (highest.attendee !== null) raiseMark(this.db, 'attendees', highest.attendee);
    if (highest.credential !== null) raiseMark(this.db, 'credentials', highest.credential);
  }

  /** What the cloud should hold before the next batch: past the last one it acknowledged. */
  acked(): FeedPosition {
    const row = this.row()!;
    return { access_event_id: row.acked_access_event_id ?? 0, domain_event_seq: row.acked_domain_event_seq ?? 0 };
  }

  uploaded(at: string, offsetMs: number | null, acked: FeedPosition): void {
    statement(
      this.db,
      'UPDATE sync_link SET last_upload_at = ?, clock_offset_ms = ?, acked_access_event_id = ?, acked_domain_event_seq = ? WHERE id = 1',
    ).run(at, offsetMs, acked.access_event_id, acked.domain_event_seq);
  }

  /** A page written: the cursor past it, and when the newest change was reached (null: not yet). */
  downloaded(cursor: string, caughtUpAt: string | null): void {
    statement(
      this.db,
      'UPDATE sync_link SET download_cursor = ?, last_download_at = COALESCE(?, last_download_at) WHERE id = 1',
    ).run(cursor, caughtUpAt);
  }

  revocationsRead(cursor: string): void {
    statement(this.db, 'UPDATE sync_link SET revocation_cursor = ? WHERE id = 1').run(cursor);
  }

  /** The cloud was found behind: the upload goes on from `from`, both pulls start again, and it is recorded. */
  cloudBehind(from: FeedCursor, at: string, resent: number): void {
    statement(
      this.db,
      `UPDATE sync_link SET download_cursor = NULL, revocation_cursor = NULL, last_download_at = NULL, acked_access_event_id = ?, acked_domain_event_seq = ?, resync_pending = 1,
         cloud_rollback_at = ?, cloud_rollback_resent = ?, cloud_rollback_pulled = 1 WHERE id = 1`,
    ).run(from.accessEventId, from.domainEventSeq, at, resent);
  }

  /**
   * The protocol agreed at a hello. One that has what the cursors were moved without (public keys)
   * starts both pulls again from nothing; answers whether it did.
   */
  agreedProtocol(protocol: number, pullsAgainAbove: number): boolean {
    const row = this.row()!;
    if (row.agreed_protocol === protocol) return false;
    const pulled = row.agreed_protocol ?? 1;
    const pulledAny = row.download_cursor !== null || row.revocation_cursor !== null;
    const again = pulledAny && pulled < pullsAgainAbove && protocol >= pullsAgainAbove;
    // The replica stays as it is (rows already held at their version are skipped): only the cursors go back.
    statement(
      this.db,
      `UPDATE sync_link SET agreed_protocol = ?${again ? ', download_cursor = NULL, revocation_cursor = NULL' : ''} WHERE id = 1`,
    ).run(protocol);
    return again;
  }

  resynced(): void {
    statement(this.db, 'UPDATE sync_link SET resync_pending = 0 WHERE id = 1').run();
  }
}
