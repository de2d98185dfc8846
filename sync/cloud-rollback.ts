import type { FeedCursor } from '../src/feed/feed.js';
import { decodeCursor, type Hello } from './protocol.js';

// A cloud restored from a backup (docs/sync.md: a cloud restored from a backup). Started from
// an older copy of its data, a cloud no longer holds batches an edge had acknowledged, and its
// change versions may be behind the edge's download cursors: the edge would report backlog 0
// while the cloud lacks its events, and never hear the cloud's new edits and revocations
// (numbered below its cursors). Each hello says what the cloud holds of this edge (`uploaded`)
// and how far its versions go (`cloud.high_water`); an edge that finds itself ahead of either
// sends again from what the cloud holds (it keeps uploaded events for sync.edgeRetentionDays)
// and pulls everything from the start. A cloud that only restarted is not behind: nothing moves.

/** What the edge knows of its own link (sync_link). */
export interface LinkPosition {
  download_cursor: string | null;
  revocation_cursor: string | null;
  acked_access_event_id: number | null;
  acked_domain_event_seq: number | null;
}

export interface Rollback {
  /** Where the upload goes on from: what the cloud holds, never past the edge's own cursor. */
  uploadFrom: FeedCursor;
  /** Why, in words, for the log. */
  reasons: string[];
}

/** Null when the cloud holds everything the edge sent and knows every version the edge read. */
export function cloudBehind(
  link: LinkPosition,
  uploadCursor: FeedCursor,
  hello: Pick<Hello, 'uploaded' | 'cloud'>,
): Rollback | null {
  const reasons: string[] = [];
  // A cloud that does not say (an older one) is taken at its word: nothing is found behind.
  if (hello.uploaded !== undefined && link.acked_access_event_id !== null && link.acked_domain_event_seq !== null) {
    const held = hello.uploaded ?? { access_event_id: 0, domain_event_seq: 0 };
    if (link.acked_access_event_id > held.access_event_id || link.acked_domain_event_seq > held.domain_event_seq) {
      reasons.push(
        `the cloud holds this edge's feed up to (${held.access_event_id}, ${held.domain_event_seq}), it had acknowledged (${link.acked_access_event_id}, ${link.acked_domain_event_seq})`,
      );
    }
  }
  if (hello.cloud !== undefined) {
    const read = Math.max(
      decodeCursor(link.download_cursor ?? undefined) ?? 0,
      decodeCursor(link.revocation_cursor ?? undefined) ?? 0,
    );
    if (read > hello.cloud.high_water)
      reasons.push(`the cloud's versions end at ${hello.cloud.high_water}, this edge has read up to ${read}`);
  }
  if (reasons.length === 0) return null;
  const held = hello.uploaded ?? { access_event_id: 0, domain_event_seq: 0 };
  return {
    uploadFrom: {
      accessEventId: Math.min(uploadCursor.accessEventId, held.access_event_id),
      domainEventSeq: Math.min(uploadCursor.domainEventSeq, held.domain_event_seq),
    },
    reasons,
  };
}
