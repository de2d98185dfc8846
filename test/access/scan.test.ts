import BetterSqlite3 from 'better-sqlite3';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startAppliance, type TestAppliance } from '../helpers/appliance.js';

const A = '/api/v1/projects/default/default';

describe('scanning over REST: decide, persist, announce, answer', () => {
  let gh: TestAppliance;
  let api: ReturnType<typeof client>;
  let gate: number;
  let zone: number;
  const announced: { name: string; projectId: number; payload: any }[] = [];
  // Read straight from SQLite, once every answered scan is ingested from the journal.
  const events = async () => {
    await gh.app.deps.scans.settled();
    const db = new BetterSqlite3(join(gh.dataDir, 'gatehouse.db'), { readonly: true });
    const rows = db.prepare('SELECT * FROM access_events ORDER BY id').all() as any[];
    db.close();
    return rows;
  };

  beforeAll(async () => {
    gh = await startAppliance();
    api = client(gh, await gh.token());
    zone = (await api.post(`${A}/access-zones`, { name: 'Pit', capacity: 50 })).body.data.id;
    gate = (await api.post(`${A}/access-points`, { name: 'Pit gate', access_zone_id: zone })).body.data.id;
    const rows = Array.from({ length: 200 }, (_, i) => ({
      first_name: `Fan${i}`,
      last_name: 'X',
      credential_value: `FAN-${i}`,
    }));
    expect(
      (await gh.request('POST', `${A}/attendees/import`, { token: await gh.token(), body: rows })).body.data.imported,
    ).toBe(200);
    const bus = gh.app.services.bus;
    bus.on(announced, 'access.granted', (e) => announced.push({ name: 'AccessGranted', ...e }));
    bus.on(announced, 'access.denied', (e) => announced.push({ name: 'AccessDenied', ...e }));
  });
  afterAll(() => gh.destroy());

  it('answers a grant as the access-event webhook does, after committing the event, and announces AccessGranted', async () => {
    const res = await api.post(`${A}/access-points/${gate}/scan`, { credential_value: 'FAN-0', scan_type: 'qr' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      success: true,
      access_granted: true,
      attendee: { first_name: 'Fan0', last_name: 'X' },
    });
    const [event] = await events();
    expect(event).toMatchObject({
      project_id: 1,
      access_point_id: gate,
      access_zone_id: zone,
      credential_value: 'FAN-0',
      granted: 1,
      reason: null,
      source: 'api',
      movement: 'in',
    });
    expect(event.uuid).toMatch(/^[0-9a-f-]{36}$/);
    expect(announced[0]).toMatchObject({ name: 'AccessGranted', projectId: 1 });
    expect(Object.keys(announced[0]!.payload).sort()).toEqual([
      'access_point_id',
      'access_zone_id',
      'attendee',
      'attendee_id',
      'credential_id',
      'timestamp',
    ]);
    expect(announced[0]!.payload.attendee).toEqual({ first_name: 'Fan0', last_name: 'X' });
  });

  it('answers a denial with its reason, records it and announces AccessDenied with the spec payload', async () => {
    announced.length = 0;
    for (const value of ['', 'x'.repeat(10_000), 'Grüße 🎫', "'; DROP TABLE access_events; --"]) {
      const res = await api.post(`${A}/access-points/${gate}/scan`, { credential_value: value });
      expect(res.body).toEqual({
        success: true,
        access_granted: false,
        reason: 'invalid_credential',
        reason_detail: null,
        attendee: null,
        event_id: expect.any(String),
      });
    }
    expect(announced.map((a) => a.name)).toEqual(['AccessDenied', 'AccessDenied', 'AccessDenied', 'AccessDenied']);
    // The contract's four fields, and ours: reason_detail (docs/realtime.md).
    expect(Object.keys(announced[0]!.payload).sort()).toEqual([
      'access_point_id',
      'credential_value',
      'reason',
      'reason_detail',
      'timestamp',
    ]);
    expect((await events()).filter((e) => e.granted === 0)).toHaveLength(4);
  });

  it('never overfills a zone: 200 parallel scans at capacity 50 grant exactly 50 (one already inside)', async () => {
    const results = await Promise.all(
      Array.from({ length: 199 }, (_, i) =>
        api.post(`${A}/access-points/${gate}/scan`, { credential_value: `FAN-${i + 1}` }),
      ),
    );
    const granted = results.filter((r) => r.body.access_granted).length;
    expect(granted).toBe(49);
    expect(results.filter((r) => r.body.reason === 'capacity_exceeded')).toHaveLength(150);
    expect(gh.app.services.access.engine.occupancy.count(zone)).toBe(50);
    expect((await api.get(`${A}/access-zones/${zone}/capacity`)).body.data).toMatchObject({
      capacity: 50,
      current_count: 50,
      available: 0,
    });
    expect((await events()).filter((e) => e.granted === 1)).toHaveLength(50);
  });

  it('answers 404 and 422 for an unknown door and a timestamp too old, recording nothing', async () => {
    const before = (await events()).length;
    expect((await api.post(`${A}/access-points/999999/scan`, { credential_value: 'FAN-1' })).status).toBe(404);
    // (An inactive door decides: test/access/every-scan-event.test.ts.)
    const old = await api.post(`${A}/access-points/${gate}/scan`, {
      credential_value: 'FAN-1',
      timestamp: '2020-01-01T00:00:00Z',
    });
    expect(old.status).toBe(422);
    expect(old.body.errors.timestamp).toHaveLength(1);
    expect((await events()).length).toBe(before);
    // A reader clock far ahead is taken as now.
    const future = await api.post(`${A}/access-points/${gate}/scan`, {
      credential_value: 'NOPE',
      timestamp: '2099-01-01T00:00:00Z',
    });
    expect(future.status).toBe(200);
    expect(Date.parse((await events()).at(-1).scanned_at)).toBeLessThan(Date.now() + 60_000);
  });

  it('lists access events newest first with filters, paginated, and exports them as CSV', async () => {
    const all = await api.get(`${A}/access-events?per_page=5`);
    expect(all.status).toBe(200);
    expect(all.body.meta.total).toBe((await events()).length);
    expect(all.body.data).toHaveLength(5);
    expect(all.body.data[0].scanned_at >= all.body.data[4].scanned_at).toBe(true);
    const granted = await api.get(`${A}/access-events?result=granted&per_page=100`);
    expect(granted.body.meta.total).toBe(50);
    expect(granted.body.data.every((e: { granted: boolean }) => e.granted)).toBe(true);
    const full = await api.get(`${A}/access-events?reason=capacity_exceeded&access_zone_id=${zone}`);
    expect(full.body.meta.total).toBe(150);
    const fan0 = (await events()).find((e) => e.credential_value === 'FAN-0');
    const mine = await api.get(`${A}/access-events?attendee_id=${fan0.attendee_id}`);
    expect(mine.body.data.map((e: { credential_value: string }) => e.credential_value)).toEqual(['FAN-0']);
    const none = await api.get(`${A}/access-events?from=2099-01-01T00:00:00Z`);
    expect(none.body.meta.total).toBe(0);
    expect((await api.get(`${A}/access-events?reason=bored`)).status).toBe(422);
    const csv = await fetch(`${gh.url}${A}/access-events?format=csv&result=granted`, {
      headers: { authorization: `Bearer ${await gh.token()}` },
    });
    expect(csv.headers.get('content-type')).toMatch(/^text\/csv/);
    const lines = (await csv.text()).trim().split('\r\n');
    expect(lines[0]).toBe(
      'uuid,scanned_at,decided_at,access_point_id,access_zone_id,reader_id,credential_id,credential_value,attendee_id,granted,reason,movement,source,reason_detail',
    );
    expect(lines).toHaveLength(51);
  });
});
