import { describe, expect, it } from 'vitest';
import {
  applyBridgeEvent,
  applyGateway,
  applyReaderStatus,
  type BridgeDevice,
  deviceWhere,
  gatewayState,
  otpGroups,
  type PendingLogin,
  pendingLogins,
  type Reader,
  throttled,
  timeLeft,
} from '../../console/src/devices.js';
import { deletedAt, eventReferences, goneReferences, rowText, sentChange } from '../../console/src/conflict-values.js';
import {
  applyConflict,
  type Conflict,
  lastSuccess,
  linkState,
  matches,
  modeOf,
  offsetText,
  replaceEdge,
  type SyncStatus,
} from '../../console/src/sync.js';

// The devices and sync screens' logic without a browser (console/src/devices.ts, sync.ts): the
// devices channel's events applied to the lists, pending logins and their countdown, the throttle
// that re-reads the lists after scans, what a sync status means for the page, conflicts kept
// current by events and reviews.

const at = (s: number) => new Date(Date.UTC(2026, 10, 26, 9, 0, s)).toISOString();
const reader = (id: number, status: Partial<Reader['status']> = {}): Reader => ({
  id,
  identifier: `R-${id}`,
  type: 'qr',
  access_point_id: 1,
  gateway_id: null,
  status: {
    status: 'unknown',
    connected_via: null,
    gateway_status: null,
    last_seen: null,
    last_scan: null,
    errors: 0,
    last_error: null,
    ...status,
  },
});

describe('devices logic', () => {
  it('applies a ReaderStatusChanged to its reader only, keeping the error counts and a newer last scan', () => {
    const readers = [reader(1, { last_scan: at(30), errors: 2, last_error: 'malformed_json' }), reader(2)];
    const next = applyReaderStatus(readers, {
      reader_id: 1,
      status: 'online',
      connected_via: 'mqtt',
      gateway_status: null,
      last_seen: at(40),
      last_scan: at(10),
      timestamp: at(40),
    });
    expect(next[0]!.status).toEqual({
      status: 'online',
      connected_via: 'mqtt',
      gateway_status: null,
      last_seen: at(40),
      last_scan: at(30),
      errors: 2,
      last_error: 'malformed_json',
    });
    expect(next[1]).toBe(readers[1]);
    const later = applyReaderStatus(next, {
      reader_id: 1,
      status: 'offline',
      connected_via: null,
      gateway_status: null,
      last_seen: at(50),
      last_scan: at(45),
      timestamp: at(50),
    });
    expect(later[0]!.status.last_scan).toBe(at(45));
  });

  it('replaces a gateway from its event, or adds one the list did not have', () => {
    const gw = {
      id: 1,
      identifier: 'GW-1',
      name: null,
      status: 'unknown',
      last_seen: null,
      reader_ids: [],
      last_report: null,
    };
    expect(applyGateway([gw], { ...gw, status: 'online', last_seen: at(1) })).toEqual([
      { ...gw, status: 'online', last_seen: at(1) },
    ]);
    expect(applyGateway([gw], { ...gw, id: 2, identifier: 'GW-2' }).map((g) => g.identifier)).toEqual(['GW-1', 'GW-2']);
    expect([
      gatewayState('ONLINE'),
      gatewayState('connected'),
      gatewayState('offline'),
      gatewayState('rebooting'),
    ]).toEqual(['online', 'online', 'offline', 'unknown']);
  });

  it('moves a plugged-in device by its hot-plug event and says where it is', () => {
    const device = {
      id: 3,
      name: 'Desk',
      path: null,
      match: { vendor_id: '0403', product_id: '6001', serial_number: null },
      reader_identifier: 'R-1',
      framing: 'line',
      enabled: true,
      managed_by: 'api',
      connected: false,
      opened_path: null,
      last_scan_at: null,
      frames: 4,
      bad_frames: 1,
      errors: 0,
      last_error: 'not there',
    } satisfies BridgeDevice;
    expect(deviceWhere(device)).toBe('USB 0403:6001');
    const [moved] = applyBridgeEvent([device], {
      id: 3,
      name: 'Desk',
      reader_identifier: 'R-1',
      framing: 'line',
      connected: true,
      opened_path: '/dev/ttyUSB1',
      last_error: null,
    });
    expect(moved).toEqual({ ...device, connected: true, opened_path: '/dev/ttyUSB1', last_error: null });
    expect(deviceWhere(moved!)).toBe('/dev/ttyUSB1');
  });

  it('keeps the logins still valid, newest first, with the time left and the OTP in two groups', () => {
    const login = (id: number, created: number, expires: number): PendingLogin => ({
      id,
      reader_id: id,
      reader_identifier: `R-${id}`,
      otp: '123456',
      attempts: 0,
      requested_ip: null,
      created_at: at(created),
      expires_at: at(expires),
    });
    const now = Date.parse(at(100));
    expect(pendingLogins([login(1, 0, 99), login(2, 10, 700), login(3, 20, 600)], now).map((l) => l.id)).toEqual([
      3, 2,
    ]);
    expect(timeLeft(at(700), now)).toBe('10:00');
    expect(timeLeft(at(161), now)).toBe('1:01');
    expect(timeLeft(at(50), now)).toBe('0:00');
    expect(otpGroups('123456')).toBe('123 456');
  });

  it('runs a throttled refresh at once, then folds the calls within the interval into one at its end', () => {
    let runs = 0;
    const pending: (() => void)[] = [];
    const t = throttled(() => runs++, 1000, { set: (run) => pending.push(run), clear: () => pending.splice(0) });
    t.call();
    expect(runs).toBe(1);
    t.call();
    t.call();
    t.call();
    expect(runs).toBe(1);
    expect(pending).toHaveLength(1);
    pending.shift()!();
    expect(runs).toBe(2);
    t.call();
    t.cancel();
    expect(pending).toHaveLength(0);
  });
});

const status = (s: Partial<SyncStatus>): SyncStatus => ({
  role: 'edge',
  state: 'online',
  edge_id: 1,
  online: true,
  last_error: null,
  last_upload_at: null,
  last_download_at: null,
  backlog: 0,
  oldest_unsynced_at: null,
  cursor: null,
  clock_offset_ms: 0,
  clock_synchronised: true,
  latency_ms: null,
  ...s,
});
const conflict = (id: number, c: Partial<Conflict> = {}): Conflict => ({
  id,
  kind: 'duplicate_entry',
  edge_id: 1,
  event_id: `e-${id}`,
  duplicate_of: null,
  entity: null,
  entity_id: null,
  field: null,
  edge_value: null,
  cloud_value: null,
  detail: null,
  created_at: at(id),
  reviewed_at: null,
  cleared_at: null,
  ...c,
});

describe('sync logic', () => {
  it('tells a standalone box, an edge (and a project it does not sync) and a cloud apart', () => {
    expect(modeOf(status({ role: 'standalone', state: 'standalone' }))).toBe('standalone');
    expect(modeOf(status({ role: 'standalone', state: 'not synced here' }))).toBe('not-synced');
    expect(modeOf(status({}))).toBe('edge');
    expect(modeOf(status({ role: 'cloud', state: 'serving' }))).toBe('cloud');
  });

  it('names the link state and the last success either way', () => {
    expect(linkState(status({}))).toBe('online');
    expect(linkState(status({ online: false, state: 'offline' }))).toBe('offline');
    expect(linkState(status({ online: false, state: 'refused' }))).toBe('refused');
    expect(linkState(status({ online: false, state: 'suspended' }))).toBe('suspended'); // its issuer lost access on the cloud
    expect(linkState(status({ online: false, state: 'something new' }))).toBe('offline');
    expect(lastSuccess({ last_upload_at: at(5), last_download_at: at(9) })).toBe(at(9));
    expect(lastSuccess({ last_upload_at: at(9), last_download_at: null })).toBe(at(9));
    expect(lastSuccess({ last_upload_at: null, last_download_at: null })).toBeNull();
    expect([offsetText(-2500), offsetText(120), offsetText(0), offsetText(null)]).toEqual([
      '−2.5 s',
      '+120 ms',
      '0 ms',
      '',
    ]);
  });

  it('puts a re-confirmed edge in the place of the listed one, the others as they were', () => {
    const edge = (id: number, suspended_at: string | null) => ({
      id,
      name: `e${id}`,
      last_contact_at: null,
      last_upload_at: null,
      revoked_at: null,
      protocol_version: 1,
      backlog: null,
      clock_offset_ms: null,
      issued_by: 2,
      suspended_at,
      suspended_reason: suspended_at ? 'issuer_lost_access' : null,
    });
    const listed = [edge(1, null), edge(2, at(3)), edge(3, at(4))];
    expect(replaceEdge(listed, { ...edge(2, null), issued_by: 1 })).toEqual([
      edge(1, null),
      { ...edge(2, null), issued_by: 1 },
      edge(3, at(4)),
    ]);
    expect(replaceEdge(listed, edge(9, null))).toEqual(listed);
  });

  it('adds a flagged conflict where the filter shows it, oldest first, and shows a review where it was', () => {
    const open = { kind: '' as const, reviewed: 'false' as const };
    const list = [conflict(1), conflict(3)];
    expect(applyConflict(list, conflict(2), open).map((c) => c.id)).toEqual([1, 2, 3]);
    expect(
      applyConflict(list, conflict(4, { kind: 'attendee_field' }), { kind: 'duplicate_entry', reviewed: 'false' }),
    ).toEqual(list);
    const reviewed = applyConflict(list, conflict(1, { reviewed_at: at(50) }), open);
    expect(reviewed.map((c) => [c.id, c.reviewed_at])).toEqual([
      [1, at(50)],
      [3, null],
    ]);
    expect(matches(conflict(5, { reviewed_at: at(1) }), { kind: '', reviewed: 'true' })).toBe(true);
    expect(matches(conflict(5), { kind: '', reviewed: 'true' })).toBe(false);
    expect(matches(conflict(5), { kind: '', reviewed: '' })).toBe(true);
  });

  it('keeps a cleared conflict under the filters that find it unreviewed, as the API does', () => {
    const cleared = conflict(6, { kind: 'duplicate_entry', cleared_at: at(60) });
    expect(matches(cleared, { kind: '', reviewed: 'false' })).toBe(true);
    expect(matches(cleared, { kind: 'duplicate_entry', reviewed: '' })).toBe(true);
    expect(matches(cleared, { kind: '', reviewed: 'true' })).toBe(false);
  });

  it('reads both sides of the new kinds: a change as sent, a row, a deletion, references named and gone', () => {
    const edit = {
      event: 'attendee.updated',
      data: { id: 7, last_name: 'Edited', email: null, extra: {}, previous_attributes: { last_name: 'Test' } },
    };
    expect(sentChange(edit)).toEqual(edit);
    expect(sentChange('Mallory')).toBeNull();
    expect(rowText(edit.data)).toBe('last_name “Edited”');
    expect(rowText({ id: 7, attendee_id: 7, first_name: 'Ada' })).toBe('first_name “Ada”');
    expect(rowText({ id: 30, value: 'T-1', attendee_id: 3, status: 'active' })).toBe(
      'value “T-1”, attendee_id 3, status “active”',
    );
    expect(rowText(null)).toBe('—');
    expect(deletedAt({ deleted_at: at(1) })).toBe(at(1));
    expect(deletedAt({ deleted_at: at(1), first_name: 'Ada' })).toBeNull();
    expect(eventReferences({ reader_id: null, access_point_id: 5, access_zone_id: 2 })).toEqual([
      { entity: 'access_point', id: 5 },
      { entity: 'access_zone', id: 2 },
    ]);
    expect(
      goneReferences([
        { entity: 'access_point', id: 5, deleted_at: at(2) },
        { entity: 'access_zone', id: 9, deleted_at: null },
        'junk',
      ]),
    ).toEqual([
      { entity: 'access_point', id: 5, deleted_at: at(2) },
      { entity: 'access_zone', id: 9, deleted_at: null },
    ]);
    expect(goneReferences(null)).toEqual([]);
  });
});
