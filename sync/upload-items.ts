import { createHash } from 'node:crypto';
import type { FeedItem } from '../src/feed/feed.js';
import type { Database } from '../src/store/database.js';
import { statement } from '../src/store/statements.js';
import { UPLOAD_MAX_BYTES, UPLOAD_MAX_ITEMS, type UploadedAccessEvent, type UploadedChange } from './protocol.js';

// What the edge uploads for the items it read from its feed (docs/sync.md: upload): an access
// event whole (its raw scan time, its shared ids), a change with the outbox row's uuid and data.
// A bulk import is one outbox row naming a block of versions; it goes up as the attendees and
// credentials it wrote, each with a uuid derived from the import's, so a batch sent again
// names the same items. A batch goes up in as many requests as the cloud's limits on one
// request need (protocol.ts: UPLOAD_MAX_ITEMS, UPLOAD_MAX_BYTES).

type Item = UploadedAccessEvent | UploadedChange;

/** Room left in a request's body for what is not an item (clock, backlog, feed). */
const ENVELOPE_BYTES = 4096;

/** A stable uuid (RFC 9562 version 8 layout) for a row of a bulk import. */
function derivedUuid(from: string, entity: string, id: number): string {
  const hex = createHash('sha256').update(`${from}:${entity}:${id}`).digest('hex');
  const variant = ((Number.parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

export function uploadItems(db: Database, items: readonly FeedItem[]): Item[] {
  const out: Item[] = [];
  for (const item of items) {
    const r = item.row;
    if (r) {
      if (r.edge_id !== null) continue; // uploaded to this box from elsewhere: not ours to send on
      out.push({
        kind: 'access',
        uuid: r.uuid,
        access_point_id: r.access_point_id,
        access_zone_id: r.access_zone_id,
        reader_id: r.reader_id,
        credential_id: r.credential_id,
        credential_value: r.credential_value,
        attendee_id: r.attendee_id,
        granted: r.granted === 1,
        reason: r.reason as UploadedAccessEvent['reason'],
        // Only when set, as the clock fields below: a cloud from before
        // reason_detail refuses a field it does not know (docs/sync.md).
        ...(r.reason_detail === null ? {} : { reason_detail: r.reason_detail as UploadedAccessEvent['reason_detail'] }),
        movement: r.movement,
        scanned_at: r.scanned_at,
        decided_at: r.decided_at,
        source: r.source,
        // The offset in force when it was decided (src/clock-offset.ts);
        // a row from before the stamp has none: the batch's clock.
        ...(r.clock_unsynchronised === null
          ? {}
          : { clock_offset_ms: r.clock_offset_ms, clock_synchronised: r.clock_unsynchronised === 0 }),
        // Only when true (absent: false), so a cloud from before it takes every other event.
        ...(r.offline_verified === 1 ? { offline_verified: true } : {}),
      });
    } else if (item.event === 'attendee.imported') {
      const from = Number(item.data.from_version);
      const to = Number(item.data.to_version);
      const attendees = statement(
        db,
        'SELECT a.*, t.slug AS attendee_type FROM attendees a LEFT JOIN attendee_types t ON t.id = a.attendee_type_id WHERE a.project_id = ? AND a.version BETWEEN ? AND ? ORDER BY a.version',
      ).all(item.projectId, from, to) as Record<string, unknown>[];
      for (const a of attendees) {
        const { project_id: _p, ...data } = a;
        out.push({
          kind: 'change',
          uuid: derivedUuid(item.id, 'attendee', a.id as number),
          event: 'attendee.created',
          data: { ...data, extra: JSON.parse(String(a.extra ?? '{}')) },
          created_at: item.timestamp,
        });
      }
      const credentials = statement(
        db,
        'SELECT * FROM credentials WHERE project_id = ? AND version BETWEEN ? AND ? ORDER BY version',
      ).all(item.projectId, from, to) as Record<string, unknown>[];
      for (const c of credentials) {
        const { project_id: _p, ...data } = c;
        out.push({
          kind: 'change',
          uuid: derivedUuid(item.id, 'credential', c.id as number),
          event: 'credential.created',
          data,
          created_at: item.timestamp,
        });
      }
    } else {
      out.push({
        kind: 'change',
        uuid: item.id,
        event: item.event as UploadedChange['event'],
        data: item.data,
        created_at: item.timestamp,
      });
    }
  }
  return out;
}

/** The items in requests of at most UPLOAD_MAX_ITEMS items and UPLOAD_MAX_BYTES (in order; one
 * item larger than that alone goes as it is, and the cloud refuses it). Always one at least. */
export function uploadParts(items: readonly Item[]): Item[][] {
  const parts: Item[][] = [[]];
  let bytes = 0;
  for (const item of items) {
    const size = Buffer.byteLength(JSON.stringify(item)) + 1;
    const part = parts[parts.length - 1]!;
    if (part.length > 0 && (part.length >= UPLOAD_MAX_ITEMS || bytes + size > UPLOAD_MAX_BYTES - ENVELOPE_BYTES)) {
      parts.push([item]);
      bytes = size;
    } else {
      part.push(item);
      bytes += size;
    }
  }
  return parts;
}
