import type { FeedCursor } from '../src/feed/feed.js';
import type { Database } from '../src/store/database.js';
import { statement } from '../src/store/statements.js';
import { UPLOADED_CHANGES } from './protocol.js';

// What an edge has not uploaded yet (docs/sync.md: status): the feed's items after the upload
// cursor that sync sends, and the scan time of the oldest access event among them.

/** The domain events an edge uploads besides access events. */
export const FEED_EVENTS: ReadonlySet<string> = new Set([
  'access.granted',
  'access.denied',
  'attendee.imported',
  ...UPLOADED_CHANGES,
]);

export function unsynced(
  db: Database,
  cursor: FeedCursor,
  projectId: number,
): { backlog: number; oldest: string | null } {
  const backlog =
    // +project_id: by id from the cursor (see feed.ts)
    (statement(db, 'SELECT COUNT(*) FROM access_events WHERE id > ? AND +project_id = ?')
      .pluck()
      .get(cursor.accessEventId, projectId) as number) +
    (statement(
      db,
      `SELECT COUNT(*) FROM domain_events WHERE seq > ? AND project_id = ? AND event IN (${[...FEED_EVENTS].map(() => '?').join(', ')})`,
    )
      .pluck()
      .get(cursor.domainEventSeq, projectId, ...FEED_EVENTS) as number);
  const oldest = statement(
    db,
    'SELECT scanned_at FROM access_events WHERE id > ? AND +project_id = ? ORDER BY id LIMIT 1',
  )
    .pluck()
    .get(cursor.accessEventId, projectId) as string | undefined;
  return { backlog, oldest: oldest ?? null };
}
