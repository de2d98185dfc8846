import { beforeEach, describe, expect, it } from 'vitest';
import { AccessEngine, type Decision, ScanError } from '../../src/access/engine.js';
import { Occupancy } from '../../src/access/occupancy.js';
import { VenueIndex } from '../../src/access/venue-index.js';

// The decision engine from plain data: a VenueIndex filled through its own
// put methods with the rows SQLite would give, no store, no appliance. Each of the contract's checks
// in its order (docs/engine.md), and what a grant does to occupancy. test/access/engine.test.ts
// runs the same rules through the REST API on a real appliance.

const P = 1;
// Wednesday 2026-06-03 12:00 in Europe/Berlin (10:00 UTC); 23:30 the same day.
const WED_NOON = Date.parse('2026-06-03T10:00:00Z');
const WED_LATE = Date.parse('2026-06-03T21:30:00Z');

let index: VenueIndex;
let engine: AccessEngine;
const decide = (accessPointId: number, credentialValue: string, at = WED_NOON): Decision =>
  engine.decide({ projectId: P, accessPointId, credentialValue, at });
const outcome = (d: Decision) => (d.granted ? `granted ${d.movement}` : d.reason);
const detail = (d: Decision) => (d.granted ? undefined : d.detail);

/** `antiPassback`: the zones that refuse re-entry (the zone's anti_passback). */
function venue(options: { antiPassback: number[] } = { antiPassback: [] }): void {
  // No database: the index is only ever filled through its put methods here.
  index = new VenueIndex(null as never);
  index.timezones.set(P, 'Europe/Berlin');
  const refuses = (id: number) => (options.antiPassback.includes(id) ? 1 : 0);
  index.putZone({ id: 10, project_id: P, capacity: 2, requires_ticket: 1, anti_passback: refuses(10) }); // hall
  index.putZone({ id: 11, project_id: P, capacity: null, requires_ticket: 1, anti_passback: refuses(11) }); // vip
  index.putZone({ id: 12, project_id: P, capacity: null, requires_ticket: 0, anti_passback: refuses(12) }); // bar, open to all
  index.putAccessPoint({ id: 20, project_id: P, access_zone_id: 10, direction: 'in', is_active: 1 });
  index.putAccessPoint({ id: 21, project_id: P, access_zone_id: 10, direction: 'out', is_active: 1 });
  index.putAccessPoint({ id: 22, project_id: P, access_zone_id: 11, direction: 'both', is_active: 1 });
  index.putAccessPoint({ id: 23, project_id: P, access_zone_id: 12, direction: 'in', is_active: 1 });
  index.putAccessPoint({ id: 24, project_id: P, access_zone_id: 12, direction: 'in', is_active: 0 });
  index.putAccessPoint({ id: 25, project_id: P, access_zone_id: null, direction: 'in', is_active: 1 });
  index.typeZones.set(1, new Set([10, 11])); // type 1: VIP
  index.typeZones.set(2, new Set([10])); // type 2: guest
  const person = (
    id: number,
    typeId: number | null,
    value: string,
    credential: Record<string, unknown> = {},
    status = 'active',
  ) => {
    index.putAttendee({
      id,
      project_id: P,
      attendee_type_id: typeId,
      first_name: `P${id}`,
      last_name: 'Plain',
      status,
    });
    index.putCredential({
      id: id * 10,
      project_id: P,
      attendee_id: id,
      value,
      status: 'active',
      valid_from: null,
      valid_until: null,
      revoked_at: null,
      ...credential,
    });
  };
  person(1, 1, 'VIP-1');
  person(2, 2, 'GUEST-2');
  person(3, 2, 'GUEST-3');
  person(4, 2, 'GUEST-4');
  person(5, 2, 'OLD-5', { valid_until: '2026-06-01T00:00:00Z' });
  person(6, 2, 'SOON-6', { valid_from: '2026-06-10T00:00:00Z' });
  person(7, 2, 'REVOKED-7', { status: 'revoked', revoked_at: '2026-06-02T00:00:00Z' });
  person(8, 2, 'GONE-8', {}, 'cancelled');
  person(9, null, 'NOTYPE-9');
  // The bar opens 18:00-02:00 for guests (type 2), every day.
  index.putWindow({
    id: 30,
    access_zone_id: 12,
    attendee_type_id: 2,
    days_of_week: '[1,2,3,4,5,6,7]',
    start_time: '18:00',
    end_time: '02:00',
  });
  engine = new AccessEngine(index, new Occupancy());
}

describe('access engine, from plain data', () => {
  beforeEach(() => venue());

  it('grants a credential whose type may enter the zone, and moves its holder in and out', () => {
    expect(outcome(decide(20, 'GUEST-2'))).toBe('granted in');
    expect(engine.occupancy.count(10)).toBe(1);
    expect(outcome(decide(21, 'GUEST-2'))).toBe('granted out');
    expect(engine.occupancy.count(10)).toBe(0);
  });

  it('turns at a `both` door by where its holder is', () => {
    expect(outcome(decide(22, 'VIP-1'))).toBe('granted in');
    expect(outcome(decide(22, 'VIP-1'))).toBe('granted out');
  });

  it('denies an unknown, expired, not yet valid, revoked or unassigned credential with the spec reason', () => {
    expect(outcome(decide(20, 'NOBODY'))).toBe('invalid_credential');
    expect(outcome(decide(20, 'OLD-5'))).toBe('expired');
    expect(outcome(decide(20, 'SOON-6'))).toBe('expired');
    expect(outcome(decide(20, 'REVOKED-7'))).toBe('invalid_credential');
    expect(outcome(decide(20, 'GONE-8'))).toBe('invalid_credential');
    expect(engine.occupancy.count(10)).toBe(0);
  });

  it('denies a zone the type may not enter, and lets anyone into a zone that needs no ticket in its window', () => {
    expect(outcome(decide(22, 'GUEST-2'))).toBe('not_authorized');
    expect(detail(decide(22, 'GUEST-2'))).toBe('type_not_permitted');
    expect(outcome(decide(20, 'NOTYPE-9'))).toBe('not_authorized');
    expect(detail(decide(20, 'NOTYPE-9'))).toBe('type_not_permitted');
    expect(outcome(decide(23, 'NOTYPE-9'))).toBe('granted in'); // the window is for guests only
  });

  it('denies entry past capacity and counts a leaver out so the next gets in', () => {
    expect(outcome(decide(20, 'GUEST-2'))).toBe('granted in');
    expect(outcome(decide(20, 'GUEST-3'))).toBe('granted in');
    expect(outcome(decide(20, 'GUEST-4'))).toBe('capacity_exceeded');
    expect(outcome(decide(21, 'GUEST-2'))).toBe('granted out');
    expect(outcome(decide(20, 'GUEST-4'))).toBe('granted in');
  });

  it('keeps a time window in the project time zone, past midnight included', () => {
    expect(outcome(decide(23, 'GUEST-2', WED_NOON))).toBe('time_restricted');
    expect(outcome(decide(23, 'GUEST-2', WED_LATE))).toBe('granted in');
    expect(outcome(decide(23, 'GUEST-3', Date.parse('2026-06-03T23:30:00Z')))).toBe('granted in'); // 01:30 Thursday in Berlin
    expect(outcome(decide(23, 'GUEST-4', Date.parse('2026-06-04T00:30:00Z')))).toBe('time_restricted'); // 02:30
  });

  it('denies a blocked attendee or credential going in, until the block ends, and never keeps one from leaving', () => {
    expect(outcome(decide(20, 'GUEST-2'))).toBe('granted in');
    index.putBlock({ id: 40, attendee_id: 2, credential_id: null, until: null });
    index.putBlock({ id: 41, attendee_id: null, credential_id: 30, until: '2026-06-03T11:00:00Z' });
    expect(outcome(decide(21, 'GUEST-2'))).toBe('granted out');
    expect(outcome(decide(20, 'GUEST-2'))).toBe('blocklisted');
    expect(outcome(decide(20, 'GUEST-3'))).toBe('blocklisted');
    expect(outcome(decide(20, 'GUEST-3', Date.parse('2026-06-03T11:00:01Z')))).toBe('granted in');
    index.dropBlock(40);
    expect(outcome(decide(20, 'GUEST-2'))).toBe('granted in');
  });

  it('refuses to decide at an access point the project does not have (an error, not a denial)', () => {
    expect(() => decide(99, 'GUEST-2')).toThrow(new ScanError('unknown_access_point'));
    expect(() => engine.decide({ projectId: 2, accessPointId: 20, credentialValue: 'GUEST-2', at: WED_NOON })).toThrow(
      new ScanError('unknown_access_point'),
    );
  });

  it('denies at an inactive or zoneless access point, not_authorized with the cause, no zone, whoever scans, moving no one', () => {
    expect(outcome(decide(20, 'GUEST-2'))).toBe('granted in');
    for (const value of ['GUEST-2', 'VIP-1', 'NOBODY', 'REVOKED-7']) {
      expect(decide(24, value)).toMatchObject({
        granted: false,
        zoneId: null,
        reason: 'not_authorized',
        detail: 'access_point_inactive',
      });
      expect(decide(25, value)).toMatchObject({
        granted: false,
        zoneId: null,
        reason: 'not_authorized',
        detail: 'access_point_without_zone',
      });
    }
    // The credential and its holder are named, for the event and the answer.
    expect(decide(24, 'GUEST-2')).toMatchObject({ credential: { id: 20 }, attendee: { id: 2 } });
    expect(decide(25, 'NOBODY')).toMatchObject({ credential: null, attendee: null });
    expect(engine.occupancy.count(10)).toBe(1);
    expect(engine.occupancy.zoneOf(2)).toBe(10);
  });

  it('gives every denial other than not_authorized a null detail', () => {
    expect(detail(decide(20, 'NOBODY'))).toBeNull();
    expect(detail(decide(20, 'OLD-5'))).toBeNull();
    expect(detail(decide(23, 'GUEST-2', WED_NOON))).toBeNull();
  });

  it('takes back a grant whose event could not be stored (undo), leaving occupancy as before', () => {
    const entered = decide(20, 'GUEST-2');
    engine.undo(entered);
    expect(engine.occupancy.count(10)).toBe(0);
    expect(outcome(decide(20, 'GUEST-2'))).toBe('granted in');
  });

  it('lets a holder into the zone they are in again, uncounted, where the zone does not refuse re-entry (the default)', () => {
    const first = decide(20, 'VIP-1');
    const again = decide(20, 'VIP-1');
    expect(first).toMatchObject({ granted: true, movement: 'in', counted: true });
    expect(again).toMatchObject({ granted: true, movement: 'in', counted: false, fromZoneId: null });
    expect(engine.occupancy.count(10)).toBe(1);
  });

  it("with the zone's anti-passback, denies a second entry to the zone its holder is in, not_authorized already_inside; other zones let them in again", () => {
    venue({ antiPassback: [10] });
    expect(outcome(decide(22, 'VIP-1'))).toBe('granted in');
    expect(outcome(decide(22, 'VIP-1'))).toBe('granted out'); // a `both` door turns: no re-entry to refuse
    expect(outcome(decide(20, 'VIP-1'))).toBe('granted in'); // another zone: moves there
    const again = decide(20, 'VIP-1');
    expect(again).toMatchObject({
      granted: false,
      zoneId: 10,
      reason: 'not_authorized',
      detail: 'already_inside',
      attendee: { id: 1 },
    });
    expect(engine.occupancy.count(10)).toBe(1);
    expect(outcome(decide(23, 'VIP-1'))).toBe('granted in'); // the bar does not refuse re-entry
    expect(outcome(decide(23, 'VIP-1'))).toBe('granted in');
    // The type check comes first: a type the zone does not admit is type_not_permitted, inside or not.
    expect(detail(decide(22, 'GUEST-2'))).toBe('type_not_permitted');
  });
});
