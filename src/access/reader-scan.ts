import type { ReaderStates } from '../devices/reader-state.js';
import { errorCatalogue, type FieldErrors } from '../errors.js';
import { ScanError } from './engine.js';
import type { ScanRequest } from './scan-service.js';
import { scanInstant } from './scan-time.js';
import { readerKey, type ReaderEntry, type VenueIndex } from './venue-index.js';

// A scan reported by a reader, whatever carried it (docs/decisions.md, "One reader-scan translation"): MQTT
// (mqtt/scan-handler.ts),
// the access-event webhook (http/routes/webhooks.ts) and readers plugged into the box
// (firmware-bridge/bridge.ts) all turn "reader X saw credential Y at time T" into a ScanRequest
// the same way, here: the timestamp converted and bounded (scan-time.ts), the reader found by its
// identifier, its state marked (last seen, last scan), an unassigned reader refused. The engine's
// ScanError is read here too, once for every transport (scanErrorRefusal; the REST scan's as well).
// A scan at an inactive or zoneless door is no refusal: the engine decides it (a denial,
// docs/engine.md). Each transport only says how a refusal travels (an error answer on the
// decisions topic, a webhook error envelope). One set of limits for every transport.

/** The longest credential value decided, on every transport (docs/decisions.md, "One reader-scan translation"). */
export const MAX_CREDENTIAL_VALUE = 4096;
/** The longest request_id, on every transport. */
export const MAX_REQUEST_ID = 128;

export interface ReaderScan {
  /** The project the reader must be in; null: any project, as
   * long as one reader has the identifier (an unsigned webhook). */
  projectId: number | null;
  identifier: string;
  credentialValue: string;
  /** ISO 8601 with an offset, or Unix seconds; absent: now. */
  timestamp?: string | number;
  requestId: string | null;
  source: ScanRequest['source'];
  /** The transport's ticket in the answer deadlines (0 or absent: none). */
  deadline?: number;
}

export type ReaderScanRefusalCode = 'validation_failed' | 'unknown_reader' | 'ambiguous_reader' | 'reader_unassigned';

export interface ReaderScanRefusal {
  code: ReaderScanRefusalCode;
  message: string;
  /** Per field, for validation_failed. */
  errors?: FieldErrors;
  /** The catalogue's parameters of the message ({identifier}). */
  params?: Record<string, string>;
}

export type Located =
  | { ok: true; reader: ReaderEntry; request: ScanRequest }
  | { ok: false; refusal: ReaderScanRefusal };

export class ReaderScans {
  constructor(
    private readonly index: VenueIndex,
    private readonly readerStates: ReaderStates,
    private readonly now: () => number,
  ) {}

  /** The ScanRequest of a reader's scan, or why it cannot be decided. Marks the reader seen once it is found. */
  locate(scan: ReaderScan): Located {
    const timestamp =
      typeof scan.timestamp === 'number' ? new Date(scan.timestamp * 1000).toISOString() : scan.timestamp;
    const instant = scanInstant(timestamp, this.now());
    if (!instant.ok)
      return {
        ok: false,
        refusal: { code: 'validation_failed', message: instant.message, errors: { timestamp: [instant.message] } },
      };
    const found = this.#reader(scan.projectId, scan.identifier);
    if ('code' in found) return { ok: false, refusal: found };
    const reader = found;
    this.readerStates.scanned(reader.projectId, reader.id, instant.at);
    if (reader.accessPointId === null) return { ok: false, refusal: refusal('reader_unassigned', reader.identifier) };
    return {
      ok: true,
      reader,
      request: {
        projectId: reader.projectId,
        accessPointId: reader.accessPointId,
        readerId: reader.id,
        credentialValue: scan.credentialValue,
        scannedAt: instant.at,
        source: scan.source,
        requestId: scan.requestId,
        deadline: scan.deadline ?? 0,
      },
    };
  }

  /** The reader a scan names, when its project has it (a gateway's
   * scan refused before locate() is still the reader's). */
  find(projectId: number, identifier: string): ReaderEntry | null {
    return this.index.readers.get(readerKey(projectId, identifier)) ?? null;
  }

  #reader(projectId: number | null, identifier: string): ReaderEntry | ReaderScanRefusal {
    if (projectId !== null)
      return this.index.readers.get(readerKey(projectId, identifier)) ?? refusal('unknown_reader', identifier);
    const readers = this.index.readersWithIdentifier(identifier);
    if (readers.length === 0) return refusal('unknown_reader', identifier);
    if (readers.length > 1) return refusal('ambiguous_reader', identifier);
    return readers[0]!;
  }
}

/** A scan at an access point the sender named (the REST scan, no reader) that its project does not have. */
export interface AccessPointRefusal {
  code: 'not_found';
  message: string;
  params: { resource: string };
}

/**
 * The one reading of the engine's ScanError, for every transport (MQTT, the REST scan, the
 * access-event webhook, the firmware bridge: each only formats it); anything else is thrown on.
 * A reader's scan (`identifier`): its access point went away meanwhile, so the reader is assigned
 * to none. A scan at a named access point (`identifier` null): there is no such access point.
 */
export function scanErrorRefusal(err: unknown, identifier: string): ReaderScanRefusal;
export function scanErrorRefusal(err: unknown, identifier: null): AccessPointRefusal;
export function scanErrorRefusal(err: unknown, identifier: string | null): ReaderScanRefusal | AccessPointRefusal;
export function scanErrorRefusal(err: unknown, identifier: string | null): ReaderScanRefusal | AccessPointRefusal {
  if (!(err instanceof ScanError)) throw err;
  if (identifier !== null) return refusal('reader_unassigned', identifier);
  const resource = 'Access point';
  return {
    code: 'not_found',
    message: errorCatalogue.not_found.message.replace('{resource}', resource),
    params: { resource },
  };
}

function refusal(
  code: 'unknown_reader' | 'ambiguous_reader' | 'reader_unassigned',
  identifier: string,
): ReaderScanRefusal {
  return { code, message: errorCatalogue[code].message.replace('{identifier}', identifier), params: { identifier } };
}
