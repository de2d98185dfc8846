import { rowPayload } from '../access/access-event-payload.js';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import { readSnapshot } from '../store/transactions.js';
import type { CatalogueEvent } from './catalogue.js';
import { pruneOutbox } from './outbox.js';

// The durable feed (docs/architecture.md, "The durable feed"): what happened at the
// venue, read from two durable, ordered sources — access_events by id (the journal's ingest
// order) and the domain_events outbox by seq — each taken in its own order with no gap and
// merged between the two by time, with a cursor per consumer kept
// in feed_cursors and moved in the same transaction as what the consumer did with what it read.
// Outgoing webhooks (one consumer per subscription) and the cloud sync read it; the in-memory
// bus only wakes them.

export interface FeedCursor {
  accessEventId: number;
  domainEventSeq: number;
}

export interface FeedItem {
  /** The event's id: the access event's uuid, or the outbox row's. */
  id: string;
  event: CatalogueEvent;
  projectId: number;
  timestamp: string;
  data: Record<string, unknown>;
  /** The cursor just past this item. */
  after: FeedCursor;
  /** An access event's stored row (the sync upload sends it whole). */
  row?: AccessRow;
}

export interface FeedFilter {
  projectId: number;
  /** Catalogue names, or every event. */
  events: ReadonlySet<string> | '*';
  /** Whether access items carry the holder's name (webhooks: yes; the sync upload sends ids only). */
  names?: boolean;
}

export interface AccessRow {
  id: number;
  reader_id: number | null;
  movement: 'in' | 'out' | null;
  source: 'mqtt' | 'webhook' | 'bridge' | 'api';
  edge_id: number | null;
  uploaded_at: string | null;
  clock_offset_ms: number | null;
  clock_unsynchronised: number | null;
  offline_verified: number;
  duplicate_of: string | null;
  review: string | null;
  deleted_reference: string | null;
  uuid: string;
  project_id: number;
  granted: number;
  reason: string | null;
  reason_detail: string | null;
  access_point_id: number;
  access_zone_id: number | null;
  credential_id: number | null;
  credential_value: string;
  attendee_id: number | null;
  scanned_at: string;
  decided_at: string;
  first_name: string | null;
  last_name: string | null;
}

interface DomainRow {
  seq: number;
  uuid: string;
  project_id: number;
  event: string;
  data: string;
  created_at: string;
}

function domainItem(r: DomainRow): Omit<FeedItem, 'after'> {
  return {
    id: r.uuid,
    event: r.event as CatalogueEvent,
    projectId: r.project_id,
    timestamp: r.created_at,
    data: JSON.parse(r.data) as Record<string, unknown>,
  };
}

/** The access event as the real-time channel shows it (access/access-event-payload.ts), plus its uuid. */
function accessItem(r: AccessRow): Omit<FeedItem, 'after'> {
  const data: Record<string, unknown> = { uuid: r.uuid, ...rowPayload(r) };
  // Uploaded from an edge (on the cloud): where and when it was decided, when it arrived, and its flags (docs/sync.md).
  if (r.edge_id !== null) {
    Object.assign(data, {
      edge_id: r.edge_id,
      uploaded_at: r.uploaded_at,
      clock_offset_ms: r.clock_offset_ms,
      clock_unsynchronised: r.clock_unsynchronised === 1,
      duplicate_of: r.duplicate_of,
      review: r.review,
      deleted_reference: r.deleted_reference,
    });
  }
  return {
    id: r.uuid,
    event: r.granted ? 'access.granted' : 'access.denied',
    projectId: r.project_id,
    timestamp: r.decided_at,
    data,
  };
}

export class Feed {
  constructor(private readonly db: Database) {}

  /** Where the feed ends now: a consumer starting here gets only what happens from now on. */
  head(): FeedCursor {
    return readSnapshot(this.db, () => this.#head());
  }

  /** The consumer's cursor, or null when it has none yet. */
  cursor(consumer: string): FeedCursor | null {
    const row = statement(
      this.db,
      'SELECT access_event_id AS a, domain_event_seq AS d FROM feed_cursors WHERE consumer = ?',
    ).get(consumer) as { a: number; d: number } | undefined;
    return row ? { accessEventId: row.a, domainEventSeq: row.d } : null;
  }

  /** Stores the consumer's cursor; call inside the transaction that acts on what was read. */
  saveCursor(consumer: string, cursor: FeedCursor): void {
    statement(
      this.db,
      'INSERT INTO feed_cursors (consumer, access_event_id, domain_event_seq) VALUES (?, ?, ?) ON CONFLICT (consumer) DO UPDATE SET access_event_id = excluded.access_event_id, domain_event_seq = excluded.domain_event_seq',
    ).run(consumer, cursor.accessEventId, cursor.domainEventSeq);
  }

  dropCursor(consumer: string): void {
    statement(this.db, 'DELETE FROM feed_cursors WHERE consumer = ?').run(consumer);
  }

  /**
   * Up to `limit` items after `from` that pass the filter, and the cursor past them. Each source
   * is taken in its own order with no gap (access events by id, the outbox by seq); between the
   * two, the earlier head by time goes first (a tie: the outbox). Times need not follow ids: an
   * edge's clock stepped back, or an edge uploading older events between live ones, gives an
   * access event a lower id and a later time than the next. So the cursor of a source is the
   * last row taken from it, never a row past one left behind (docs/architecture.md: the durable
   * feed). When a source read fewer rows than `limit` and all were taken, its cursor moves past
   * every row of the snapshot, so a quiet filter does not scan the same rows again.
   */
  read(from: FeedCursor, filter: FeedFilter, limit: number): { items: FeedItem[]; cursor: FeedCursor } {
    return readSnapshot(this.db, () => {
      const head = this.#head();
      const wantsAccess =
        filter.events === '*' || filter.events.has('access.granted') || filter.events.has('access.denied');
      const onlyGranted =
        filter.events !== '*' && filter.events.has('access.granted') !== filter.events.has('access.denied');
      const accessRows = wantsAccess
        ? this.#accessRows(
            from.accessEventId,
            filter.projectId,
            onlyGranted ? (filter.events as ReadonlySet<string>).has('access.granted') : null,
            limit,
            filter.names ?? true,
          )
        : [];
      const outboxEvents = filter.events === '*' ? null : [...filter.events].filter((e) => !e.startsWith('access.'));
      const domainRows =
        outboxEvents?.length === 0 ? [] : this.#domainRows(from.domainEventSeq, filter.projectId, outboxEvents, limit);
      // A source that filled its limit may have more rows: once its read rows are all taken, the
      // merge stops, since its next row may come before the other source's next.
      const accessFull = accessRows.length === limit;
      const domainFull = domainRows.length === limit;

      let a = 0;
      let d = 0;
      let accessAt = from.accessEventId;
      let domainAt = from.domainEventSeq;
      const items: FeedItem[] = [];
      while (items.length < limit) {
        const access = accessRows[a];
        const domain = domainRows[d];
        let takeAccess: boolean;
        if (access && domain) takeAccess = access.decided_at < domain.created_at;
        else if (access) takeAccess = true;
        else if (domain) takeAccess = false;
        else break;
        if (takeAccess ? !domain && domainFull : !access && accessFull) break;
        if (takeAccess) {
          accessAt = access!.id;
          a++;
          items.push({
            ...accessItem(access!),
            row: access!,
            after: { accessEventId: accessAt, domainEventSeq: domainAt },
          });
        } else {
          domainAt = domain!.seq;
          d++;
          items.push({ ...domainItem(domain!), after: { accessEventId: accessAt, domainEventSeq: domainAt } });
        }
      }
      const cursor = {
        accessEventId:
          !accessFull && a === accessRows.length ? Math.max(head.accessEventId, from.accessEventId) : accessAt,
        domainEventSeq:
          !domainFull && d === domainRows.length ? Math.max(head.domainEventSeq, from.domainEventSeq) : domainAt,
      };
      return { items, cursor };
    });
  }

  /** Outbox rows older than `before` (ISO time) and behind every cursor's position go; answers how many. */
  prune(before: string): number {
    const min = statement(this.db, 'SELECT MIN(domain_event_seq) FROM feed_cursors').pluck().get() as number | null;
    const below = min ?? Number.MAX_SAFE_INTEGER;
    return pruneOutbox(this.db, before, below);
  }

  #head(): FeedCursor {
    const a = statement(this.db, 'SELECT COALESCE(MAX(id), 0) FROM access_events').pluck().get() as number;
    const d = statement(this.db, 'SELECT COALESCE(MAX(seq), 0) FROM domain_events').pluck().get() as number;
    return { accessEventId: a, domainEventSeq: d };
  }

  // A holder's name only from the event's own project: an event an edge uploaded may name
  // another project's attendee (docs/security.md: a stolen edge).
  // `+e.project_id`: a range of ids from the cursor, never the project's summary index (SQLite,
  // with no statistics, preferred that equality and then scanned and sorted the project's every
  // event on each read: 7 ms a read at 300,000 events, found by bench:cloud-sync's profile).
  #accessRows(after: number, projectId: number, granted: boolean | null, limit: number, names: boolean): AccessRow[] {
    const sql = `SELECT e.id, e.uuid, e.project_id, e.granted, e.reason, e.reason_detail, e.access_point_id, e.access_zone_id, e.credential_id, e.credential_value, e.attendee_id,
        e.scanned_at, e.decided_at, e.reader_id, e.movement, e.source, e.edge_id, e.uploaded_at, e.clock_offset_ms, e.clock_unsynchronised,
        e.offline_verified, e.duplicate_of, e.review, e.deleted_reference, ${names ? 'a.first_name, a.last_name' : 'NULL AS first_name, NULL AS last_name'}
      FROM access_events e${names ? ' LEFT JOIN attendees a ON a.id = e.attendee_id AND a.project_id = e.project_id' : ''}
      WHERE +e.project_id = ? AND e.id > ?${granted === null ? '' : ' AND e.granted = ?'} ORDER BY e.id LIMIT ?`;
    const args = granted === null ? [projectId, after, limit] : [projectId, after, granted ? 1 : 0, limit];
    return statement(this.db, sql).all(...args) as AccessRow[];
  }

  #domainRows(after: number, projectId: number, events: string[] | null, limit: number): DomainRow[] {
    const sql = `SELECT seq, uuid, project_id, event, data, created_at FROM domain_events
      WHERE project_id = ? AND seq > ?${events === null ? '' : ` AND event IN (${events.map(() => '?').join(', ')})`} ORDER BY seq LIMIT ?`;
    return statement(this.db, sql).all(projectId, after, ...(events ?? []), limit) as DomainRow[];
  }
}
