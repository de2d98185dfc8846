import type { AccessEventRow } from '../../src/journal/access-event-row.js';

/** Access event row number `i` (a denial of credential V<i>), as the group commit journals it; `extra` overrides fields. */
export function eventRow(i: number, extra: Partial<AccessEventRow> = {}): AccessEventRow {
  return {
    uuid: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    projectId: 1,
    accessPointId: 1,
    zoneId: null,
    readerId: null,
    credentialId: null,
    credentialValue: `V${i}`,
    attendeeId: null,
    granted: false,
    reason: 'invalid_credential',
    reasonDetail: null,
    movement: null,
    counted: false,
    fromZoneId: null,
    scannedAt: '2026-11-23T10:00:00.000Z',
    decidedAt: '2026-11-23T10:00:00.000Z',
    source: 'api',
    requestKey: null,
    clockOffsetMs: null,
    clockUnsynchronised: null,
    offlineVerified: false,
    ...extra,
  };
}
