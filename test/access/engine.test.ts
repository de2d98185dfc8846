import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ScanError, AccessEngine, Decision } from '../../src/access/engine.js';
import { client, startAppliance, type TestAppliance } from '../helpers/appliance.js';

const A = '/api/v1/projects/default/default';
// Wednesday 2026-06-03 12:00 in Europe/Berlin (10:00 UTC).
const WED_NOON = Date.parse('2026-06-03T10:00:00Z');

describe('access engine', () => {
  let gh: TestAppliance;
  let api: ReturnType<typeof client>;
  let engine: AccessEngine;
  const ids: Record<string, number> = {};
  const scan = (point: string, value: string, at = WED_NOON): Decision =>
    engine.decide({ projectId: 1, accessPointId: ids[point]!, credentialValue: value, at });
  const reason = (d: Decision) => (d.granted ? 'granted' : d.reason);
  const person = async (name: string, type: string | null, value: string, extra: Record<string, unknown> = {}) => {
    const a = (await api.post(`${A}/attendees`, { first_name: name, attendee_type: type })).body.data;
    const c = (await api.post(`${A}/attendees/${a.id}/credentials`, { value, ...extra })).body.data;
    ids[name] = a.id;
    ids[value] = c.id;
  };

  beforeAll(async () => {
    gh = await startAppliance();
    api = client(gh, await gh.token());
    engine = gh.app.services.access.engine;
    await api.put(`${A}`, { timezone: 'Europe/Berlin' });
    ids.hall = (await api.post(`${A}/access-zones`, { name: 'Hall', capacity: 2, anti_passback: true })).body.data.id;
    ids.vip = (await api.post(`${A}/access-zones`, { name: 'VIP', requires_ticket: true })).body.data.id;
    ids.bar = (await api.post(`${A}/access-zones`, { name: 'Bar' })).body.data.id;
    ids.hallIn = (
      await api.post(`${A}/access-points`, { name: 'Hall in', access_zone_id: ids.hall, direction: 'in' })
    ).body.data.id;
    ids.hallOut = (
      await api.post(`${A}/access-points`, { name: 'Hall out', access_zone_id: ids.hall, direction: 'out' })
    ).body.data.id;
    ids.vipDoor = (
      await api.post(`${A}/access-points`, { name: 'VIP door', access_zone_id: ids.vip, direction: 'both' })
    ).body.data.id;
    ids.barIn = (await api.post(`${A}/access-points`, { name: 'Bar in', access_zone_id: ids.bar })).body.data.id;
    ids.closed = (
      await api.post(`${A}/access-points`, { name: 'Closed', access_zone_id: ids.bar, is_active: false })
    ).body.data.id;
    ids.nowhere = (await api.post(`${A}/access-points`, { name: 'Nowhere' })).body.data.id;
    ids.vipType = (
      await api.post(`${A}/attendee-types`, { name: 'VIP', slug: 'vip', zone_ids: [ids.hall, ids.vip] })
    ).body.data.id;
    ids.guestType = (
      await api.post(`${A}/attendee-types`, { name: 'Guest', slug: 'guest', zone_ids: [ids.hall] })
    ).body.data.id;
  });
  afterAll(() => gh.destroy());

  it('denies unknown credential values of any length and bytes with invalid_credential', () => {
    for (const value of [
      '',
      'NOPE',
      'x'.repeat(10_000),
      '\u0000\u0001\uffff',
      'Grüße 🎫',
      "' OR 1=1; DROP TABLE credentials; --",
    ]) {
      expect(reason(scan('hallIn', value))).toBe('invalid_credential');
    }
  });

  it('grants a valid credential and counts the holder in, then out, never below zero', async () => {
    await person('Gina', 'guest', 'G-1');
    const d = scan('hallIn', 'G-1');
    expect(d).toMatchObject({ granted: true, movement: 'in', zoneId: ids.hall });
    expect(engine.occupancy.count(ids.hall!)).toBe(1);
    expect(scan('hallIn', 'G-1')).toMatchObject({ granted: false, reason: 'not_authorized', detail: 'already_inside' }); // the hall's anti-passback
    expect(scan('barIn', 'G-1')).toMatchObject({ granted: true, movement: 'in' }); // the bar has none: in, and again
    expect(scan('barIn', 'G-1')).toMatchObject({ granted: true, movement: 'in', counted: false });
    expect(scan('hallIn', 'G-1')).toMatchObject({ granted: true, movement: 'in' }); // back from the bar
    expect(engine.occupancy.count(ids.bar!)).toBe(0);
    expect(scan('hallOut', 'G-1')).toMatchObject({ granted: true, movement: 'out' });
    expect(engine.occupancy.count(ids.hall!)).toBe(0);
    expect(scan('hallOut', 'G-1').granted).toBe(true);
    expect(engine.occupancy.count(ids.hall!)).toBe(0);
  });

  it('reports expired outside valid_from/valid_until, and invalid_credential when revoked or cancelled', async () => {
    await person('Early', 'guest', 'E-1', { valid_from: '2026-06-04T00:00:00Z' });
    await person('Late', 'guest', 'L-1', { valid_until: '2026-06-02T00:00:00Z' });
    expect(reason(scan('barIn', 'E-1'))).toBe('expired');
    expect(reason(scan('barIn', 'L-1'))).toBe('expired');
    await api.del(`${A}/credentials/${ids['L-1']}`);
    expect(reason(scan('barIn', 'L-1'))).toBe('expired'); // revoked after it had expired
    await person('Revoked', 'guest', 'R-1');
    await api.del(`${A}/credentials/${ids['R-1']}`);
    expect(reason(scan('barIn', 'R-1'))).toBe('invalid_credential');
    await person('Cancelled', 'guest', 'C-1');
    await api.put(`${A}/attendees/${ids.Cancelled}`, { status: 'cancelled' });
    expect(reason(scan('barIn', 'C-1'))).toBe('invalid_credential');
  });

  it('honours requires_ticket zones by attendee type, and sees a REST change on the very next decision', async () => {
    await person('Vera', 'vip', 'V-1');
    expect(scan('vipDoor', 'V-1')).toMatchObject({ granted: true, movement: 'in' });
    expect(scan('vipDoor', 'V-1')).toMatchObject({ granted: true, movement: 'out' }); // both ways
    expect(reason(scan('vipDoor', 'G-1'))).toBe('not_authorized');
    await api.put(`${A}/attendee-types/${ids.guestType}`, { zone_ids: [ids.hall, ids.vip] });
    expect(reason(scan('vipDoor', 'G-1'))).toBe('granted');
    scan('vipDoor', 'G-1');
    await api.put(`${A}/attendee-types/${ids.guestType}`, { zone_ids: [ids.hall] });
    expect(reason(scan('vipDoor', 'G-1'))).toBe('not_authorized');
  });

  it('denies capacity_exceeded at a full zone, and entering another zone moves the holder', async () => {
    await person('One', 'guest', 'O-1');
    await person('Two', 'guest', 'T-2');
    await person('Three', 'guest', 'T-3');
    expect(scan('hallIn', 'O-1').granted).toBe(true);
    expect(scan('hallIn', 'T-2').granted).toBe(true);
    expect(reason(scan('hallIn', 'T-3'))).toBe('capacity_exceeded');
    expect(scan('barIn', 'O-1').granted).toBe(true); // One moves from the hall to the bar
    expect(engine.occupancy.count(ids.hall!)).toBe(1);
    expect(scan('hallIn', 'T-3').granted).toBe(true);
    scan('hallOut', 'T-2');
    scan('hallOut', 'T-3');
  });

  it("applies time windows in the project's time zone, including windows past midnight", async () => {
    await person('Night', 'guest', 'N-1');
    await api.post(`${A}/time-restrictions`, {
      access_zone_id: ids.bar,
      attendee_type_id: ids.guestType,
      days_of_week: [3],
      start_time: '18:00',
      end_time: '02:00',
    });
    expect(reason(scan('barIn', 'N-1'))).toBe('time_restricted'); // Wednesday noon in Berlin
    expect(reason(scan('barIn', 'N-1', Date.parse('2026-06-03T16:30:00Z')))).toBe('granted'); // 18:30 Berlin
    scan('hallIn', 'N-1');
    expect(reason(scan('barIn', 'N-1', Date.parse('2026-06-03T23:30:00Z')))).toBe('granted'); // Thursday 01:30 Berlin
    scan('hallIn', 'N-1', Date.parse('2026-06-03T23:31:00Z'));
    expect(reason(scan('barIn', 'N-1', Date.parse('2026-06-04T00:30:00Z')))).toBe('time_restricted'); // Thursday 02:30
    expect(reason(scan('barIn', 'V-1'))).toBe('granted'); // the window is for guests only
  });

  it('denies blocklisted last, lifts a block whose until has passed, and lets a blocked person out', async () => {
    await person('Blocked', 'guest', 'B-1');
    scan('hallIn', 'B-1');
    const entry = (
      await api.post(`${A}/blocklist`, { attendee_id: ids.Blocked, reason: 'test', until: '2026-06-10T00:00:00Z' })
    ).body.data;
    expect(scan('hallOut', 'B-1').granted).toBe(true);
    expect(reason(scan('hallIn', 'B-1'))).toBe('blocklisted');
    expect(reason(scan('hallIn', 'B-1', Date.parse('2026-06-11T10:00:00Z')))).toBe('granted');
    scan('hallOut', 'B-1', Date.parse('2026-06-11T10:01:00Z'));
    // A credential failing two checks reports the first: not_authorized before blocklisted.
    expect(reason(scan('vipDoor', 'B-1'))).toBe('not_authorized');
    await api.del(`${A}/blocklist/${entry.id}`);
    expect(reason(scan('hallIn', 'B-1'))).toBe('granted');
    scan('hallOut', 'B-1');
  });

  it('answers a documented error for an unknown access point, and a denial naming the cause at an inactive or zoneless one', () => {
    const outcomes = [999999, ids.closed!, ids.nowhere!].map((accessPointId) => {
      try {
        const d = engine.decide({ projectId: 1, accessPointId, credentialValue: 'G-1', at: WED_NOON });
        return d.granted ? 'granted' : `${d.reason} ${d.detail} ${d.zoneId}`;
      } catch (err) {
        return (err as ScanError).code;
      }
    });
    expect(outcomes).toEqual([
      'unknown_access_point',
      'not_authorized access_point_inactive null',
      'not_authorized access_point_without_zone null',
    ]);
  });

  it('sees imported attendees and credentials at once', async () => {
    const res = await gh.request('POST', `${A}/attendees/import`, {
      token: await gh.token(),
      body: [{ first_name: 'Imported', attendee_type: 'guest', credential_value: 'IMP-1' }],
    });
    expect(res.body.data.imported).toBe(1);
    expect(reason(scan('barIn', 'IMP-1', Date.parse('2026-06-03T17:00:00Z')))).toBe('granted');
  });
});
