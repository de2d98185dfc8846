import type { Database } from '../store/database.js';

// The durable access-event log with group commit (issue 5, item 4). Decisions made in the same
// turn of the event loop are written in one transaction: append() queues the row and answers a
// promise that settles when the transaction holding it has committed, so nobody is told about a
// decision before it is stored. A batch is flushed on setImmediate (after the I/O callbacks that
// brought the scans in) or as soon as it reaches maxBatch rows. One row per decision is all
// the hot path writes: occupancy is rebuilt at start from a snapshot plus the events after
// it (access/presence.ts), so it survives a restart, or a kill, exactly as the log says.
// Durability of a commit depends on store.synchronous: docs/storage.md.

export interface AccessEventRow {
  uuid: string;
  projectId: number;
  accessPointId: number;
  zoneId: number | null;
  readerId: number | null;
  credentialId: number | null;
  credentialValue: string;
  attendeeId: number | null;
  granted: boolean;
  reason: string | null;
  movement: 'in' | 'out' | null;
  counted: boolean;
  fromZoneId: number | null;
  scannedAt: string;
  decidedAt: string;
  source: string;
  requestKey: string | null;
}

interface Pending {
  row: AccessEventRow;
  resolve: () => void;
  reject: (err: unknown) => void;
}

export interface EventLogStats {
  batches: number;
  events: number;
}

export class AccessEventLog {
  #queue: Pending[] = [];
  #scheduled: NodeJS.Immediate | null = null;
  /** When the last batch committed (ms, performance.now()), so idle work can wait for a lull. */
  lastCommitAt = 0;
  readonly stats: EventLogStats = { batches: 0, events: 0 };
  readonly #write: (rows: readonly Pending[]) => void;

  constructor(
    db: Database,
    private readonly maxBatch = 512,
    private readonly onCommit: () => void = () => {},
  ) {
    const insert = db.prepare(
      `INSERT INTO access_events (uuid, project_id, access_point_id, access_zone_id, reader_id, credential_id, credential_value, attendee_id,
         granted, reason, movement, counted, from_zone_id, scanned_at, decided_at, source, request_key)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (project_id, request_key) WHERE request_key IS NOT NULL DO NOTHING`,
    );
    this.#write = db.transaction((batch: readonly Pending[]) => {
      for (const { row: r } of batch) {
        insert.run(
          r.uuid, r.projectId, r.accessPointId, r.zoneId, r.readerId, r.credentialId, r.credentialValue, r.attendeeId,
          r.granted ? 1 : 0, r.reason, r.movement, r.counted ? 1 : 0, r.fromZoneId, r.scannedAt, r.decidedAt, r.source, r.requestKey,
        );
      }
    });
  }

  /** Settles once the row is committed (rejects when its batch could not be). */
  append(row: AccessEventRow): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ row, resolve, reject });
      if (this.#queue.length >= this.maxBatch) this.flush();
      else this.#scheduled ??= setImmediate(() => this.flush());
    });
  }

  /** Commits everything queued, now. */
  flush(): void {
    if (this.#scheduled) clearImmediate(this.#scheduled);
    this.#scheduled = null;
    const batch = this.#queue;
    if (batch.length === 0) return;
    this.#queue = [];
    try {
      this.#write(batch);
    } catch (err) {
      for (const p of batch) p.reject(err);
      return;
    }
    this.lastCommitAt = performance.now();
    this.onCommit();
    this.stats.batches++;
    this.stats.events += batch.length;
    for (const p of batch) p.resolve();
  }
}
