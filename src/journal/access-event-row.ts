// One access event as the scan path records it: what the event log queues, the journal's lines
// hold (journal-format.ts) and the ingest inserts into access_events (docs/storage.md). A leaf,
// so the log, the journal and its format need not import one another to name it.

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
  /** Which cause of not_authorized it was (engine.ts REASON_DETAILS); null otherwise. */
  reasonDetail: string | null;
  movement: 'in' | 'out' | null;
  counted: boolean;
  fromZoneId: number | null;
  scannedAt: string;
  decidedAt: string;
  source: string;
  requestKey: string | null;
  /** An edge's clock against its cloud's when it decided (src/clock-offset.ts); null elsewhere. */
  clockOffsetMs: number | null;
  /** 1 when that offset was not measured in this run or was beyond the tolerance; null where no clock is compared. */
  clockUnsynchronised: 0 | 1 | null;
  /** Decided from a signed value's verified claims, its credential not held (access/signed-values.ts). */
  offlineVerified: boolean;
}
