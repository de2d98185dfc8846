import { describe, expect, it } from 'vitest';
import {
  addRows,
  batcher,
  denialSpikes,
  type FeedRow,
  framesEvery,
  fromDenied,
  fromGranted,
  fromLog,
  moveZones,
  removeZone,
  upsertZone,
  zoneMover,
} from '../../console/src/feed.js';
import { safeRedirect } from '../../console/src/redirect.js';

// The console's feed logic without a browser (console/src/feed.ts): rows from the access-event
// log and from the socket's events, one row per scan, newest first, in a bounded window.

const at = (s: number) => new Date(Date.UTC(2026, 10, 26, 9, 0, s)).toISOString();
const denied = (s: number, credential = `C-${s}`) =>
  fromDenied({ credential_value: credential, access_point_id: 1, reason: 'expired', timestamp: at(s) });

describe('console feed', () => {
  it('keeps the newest rows first and at most the window', () => {
    let rows: FeedRow[] = [];
    for (let s = 0; s < 250; s += 10)
      rows = addRows(
        rows,
        Array.from({ length: 10 }, (_, i) => denied(s + i)),
        200,
      );
    expect(rows).toHaveLength(200);
    expect(rows[0]!.credential).toBe('C-249');
    expect(rows.at(-1)!.credential).toBe('C-50');
  });

  it('shows a scan once when the log and the socket both bring it', () => {
    const logged = fromLog({
      id: 7,
      access_point_id: 2,
      credential_id: 9,
      credential_value: 'GH-1',
      attendee_id: 4,
      granted: true,
      reason: null,
      reason_detail: null,
      scanned_at: '2026-11-26T09:00:01.000Z',
    });
    const live = fromGranted({
      attendee_id: 4,
      attendee: { first_name: 'Ada', last_name: 'Okafor' },
      access_point_id: 2,
      access_zone_id: 3,
      credential_id: 9,
      timestamp: '2026-11-26T09:00:01Z',
    });
    expect(live.key).toBe(logged.key);
    expect(addRows([live], [logged], 200)).toEqual([live]);
    // Another scan of the same ticket a second later is another row.
    const later = fromLog({
      id: 8,
      access_point_id: 2,
      credential_id: 9,
      credential_value: 'GH-1',
      attendee_id: 4,
      granted: true,
      reason: null,
      reason_detail: null,
      scanned_at: at(2),
    });
    expect(addRows([live], [later], 200)).toHaveLength(2);
  });

  it("carries a denial's reason_detail from the log and from the socket, null where there is none (or an older appliance sends none)", () => {
    const logged = fromLog({
      id: 9,
      access_point_id: 2,
      credential_id: 9,
      credential_value: 'GH-1',
      attendee_id: 4,
      granted: false,
      reason: 'not_authorized',
      reason_detail: 'already_inside',
      scanned_at: at(3),
    });
    const live = fromDenied({
      credential_value: 'GH-1',
      access_point_id: 2,
      reason: 'not_authorized',
      reason_detail: 'already_inside',
      timestamp: at(3),
    });
    expect([logged.reasonDetail, live.reasonDetail]).toEqual(['already_inside', 'already_inside']);
    expect(live.key).toBe(
      fromDenied({ credential_value: 'GH-1', access_point_id: 2, reason: 'not_authorized', timestamp: at(3) }).key,
    );
    expect(denied(4).reasonDetail).toBeNull();
  });

  it('hands a burst over in one batch, and keeps at most the window while no frame runs', () => {
    const runs: (() => void)[] = [];
    const batches: FeedRow[][] = [];
    const add = batcher(
      (rows) => batches.push(rows),
      3,
      (run) => runs.push(run),
    );
    for (let s = 0; s < 5; s++) add(denied(s));
    expect(runs).toHaveLength(1);
    runs[0]!();
    expect(batches.map((b) => b.map((r) => r.credential))).toEqual([['C-2', 'C-3', 'C-4']]);
    add(denied(9));
    expect(runs).toHaveLength(2);
  });

  it('finds gates with a spike of denials in the recent window, most first', () => {
    const at2 = (s: number, gate: number, granted = false) => ({
      ...denied(s),
      key: `${gate}-${s}`,
      accessPointId: gate,
      granted,
    });
    const rows = [at2(59, 1), at2(58, 1), at2(57, 1, true), at2(50, 2), at2(49, 2), at2(48, 2), at2(47, 2), at2(10, 1)];
    const now = Date.parse(at(60));
    expect(denialSpikes(rows, now, 30, 2)).toEqual([
      { accessPointId: 2, count: 4 },
      { accessPointId: 1, count: 2 },
    ]);
    expect(denialSpikes(rows, now, 30, 3)).toEqual([{ accessPointId: 2, count: 4 }]);
    expect(denialSpikes(rows, now, 5, 3)).toEqual([]); // over: the alert ends with the spike
  });

  it('sends sign-in back only to a path of the console', () => {
    expect(safeRedirect('/doors?from=x')).toBe('/doors?from=x');
    expect(safeRedirect(['/devices'])).toBe('/devices');
    for (const bad of [
      '//evil.example/x',
      '/\\evil.example',
      'https://evil.example',
      '/signin?redirect=/x',
      undefined,
      5,
    ])
      expect(safeRedirect(bad)).toBe('/doors');
  });

  it('applies only the latest count of each zone per update, whatever arrived in between', () => {
    const runs: (() => void)[] = [];
    const applied: Map<number, { current_count: number }>[] = [];
    const move = zoneMover(
      (latest) => applied.push(latest),
      (run) => runs.push(run),
    );
    for (let n = 1; n <= 500; n++) move({ access_zone_id: n % 2 ? 1 : 2, current_count: n, capacity: 100 });
    expect(runs).toHaveLength(1); // one update scheduled for the burst
    runs[0]!();
    expect(applied).toHaveLength(1);
    expect([...applied[0]!.entries()].map(([id, m]) => [id, m.current_count])).toEqual([
      [1, 499],
      [2, 500],
    ]);
    const zones = [
      { id: 1, name: 'Hall', current_count: 0, capacity: 100 },
      { id: 3, name: 'Gallery', current_count: 7, capacity: null },
    ];
    const moved = moveZones(zones, applied[0] as never);
    expect(moved.map((z) => z.current_count)).toEqual([499, 7]);
    expect(moved[1]).toBe(zones[1]); // a zone not moved keeps its object (its bar is not redrawn)
  });

  it('puts a zone created meanwhile in its place by id, changes a known one, and drops a deleted one', () => {
    const zones = [
      { id: 2, name: 'Hall', current_count: 4, capacity: 100 },
      { id: 5, name: 'Gallery', current_count: 7, capacity: null },
    ];
    const extra = { slug: 'x', requires_ticket: true, version: 9 }; // the event's other fields are not kept
    expect(
      upsertZone(zones, { id: 3, name: 'Bar', current_count: 0, capacity: 20, ...extra } as never).map((z) => z.id),
    ).toEqual([2, 3, 5]);
    expect(upsertZone(zones, { id: 1, name: 'Gate', current_count: 0, capacity: null }).map((z) => z.id)).toEqual([
      1, 2, 5,
    ]);
    expect(upsertZone(zones, { id: 9, name: 'Roof', current_count: 0, capacity: 5, ...extra } as never)).toEqual([
      ...zones,
      { id: 9, name: 'Roof', current_count: 0, capacity: 5 },
    ]);
    const renamed = upsertZone(zones, { id: 5, name: 'Galleries', current_count: 8, capacity: 50 });
    expect(renamed).toEqual([zones[0], { id: 5, name: 'Galleries', current_count: 8, capacity: 50 }]);
    expect(renamed[0]).toBe(zones[0]); // the others keep their objects
    expect(removeZone(zones, 2)).toEqual([zones[1]]);
    expect(removeZone(zones, 4)).toBe(zones); // not shown: nothing changes
  });

  it('runs updates at most once per interval, on an animation frame', () => {
    let now = 0;
    const frames: (() => void)[] = [];
    const timers: { at: number; run: () => void }[] = [];
    const g = globalThis as unknown as { requestAnimationFrame?: unknown; setTimeout: unknown };
    const saved = { raf: g.requestAnimationFrame, timeout: g.setTimeout };
    g.requestAnimationFrame = (run: () => void) => frames.push(run);
    g.setTimeout = (run: () => void, ms: number) => timers.push({ at: now + ms, run });
    try {
      const schedule = framesEvery(100, () => now);
      let ran = 0;
      schedule(() => ran++);
      expect(frames).toHaveLength(1); // the first goes at the next frame
      frames.shift()!();
      expect(ran).toBe(1);
      now = 30;
      schedule(() => ran++);
      expect(frames).toHaveLength(0); // 30 ms after the last: waits for the rest of the interval
      expect(timers.map((t) => t.at)).toEqual([100]);
      now = 100;
      timers.shift()!.run();
      frames.shift()!();
      expect(ran).toBe(2);
      now = 250;
      schedule(() => ran++);
      expect(frames).toHaveLength(1); // longer ago than the interval: at the next frame
    } finally {
      g.requestAnimationFrame = saved.raf;
      g.setTimeout = saved.timeout;
    }
  });
});
