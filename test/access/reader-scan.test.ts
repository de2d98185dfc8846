import pino from 'pino';
import { beforeEach, describe, expect, it } from 'vitest';
import { ScanError } from '../../src/access/engine.js';
import { ReaderScans, scanErrorRefusal } from '../../src/access/reader-scan.js';
import { VenueIndex } from '../../src/access/venue-index.js';
import { ReaderStates } from '../../src/devices/reader-state.js';
import { EventBus } from '../../src/events/bus.js';

// The one reader-scan translation (src/access/reader-scan.ts) that MQTT and the
// access-event webhook share, from plain data: a VenueIndex filled by its put methods, reader
// state on a clock that stands still. The transports' own tests (test/mqtt/readers.test.ts,
// test/access/webhook.test.ts) check how each carries the refusals.

const NOW = Date.parse('2026-06-03T10:00:00Z');
let index: VenueIndex;
let states: ReaderStates;
let scans: ReaderScans;

beforeEach(() => {
  index = new VenueIndex(null as never);
  index.putReader({ id: 1, project_id: 1, identifier: 'DOOR-1', access_point_id: 20 });
  index.putReader({ id: 2, project_id: 1, identifier: 'SPARE', access_point_id: null });
  index.putReader({ id: 3, project_id: 1, identifier: 'TWIN', access_point_id: 20 });
  index.putReader({ id: 4, project_id: 2, identifier: 'TWIN', access_point_id: 30 });
  states = new ReaderStates({ now: () => NOW }, new EventBus(pino({ level: 'silent' })));
  scans = new ReaderScans(index, states, () => NOW);
});

const scan = (over: Partial<Parameters<ReaderScans['locate']>[0]> = {}) =>
  scans.locate({
    projectId: 1,
    identifier: 'DOOR-1',
    credentialValue: 'T-1',
    requestId: 'r-1',
    source: 'mqtt',
    ...over,
  });

describe('the reader-scan translation', () => {
  it('makes the scan request of a known, assigned reader and marks the reader seen', () => {
    const located = scan({ timestamp: '2026-06-03T09:59:00Z' });
    expect(located).toEqual({
      ok: true,
      reader: expect.objectContaining({ id: 1 }),
      request: {
        projectId: 1,
        accessPointId: 20,
        readerId: 1,
        credentialValue: 'T-1',
        scannedAt: NOW - 60_000,
        source: 'mqtt',
        requestId: 'r-1',
        deadline: 0,
      },
    });
    expect(states.of(1).status).toBe('offline'); // seen over a transport, not connected
  });

  it('reads Unix seconds and ISO timestamps alike, takes a clock up to 5 minutes fast as now, and refuses one over 7 days old', () => {
    const at = (timestamp: string | number) => {
      const located = scan({ timestamp });
      return located.ok ? located.request.scannedAt : located.refusal;
    };
    expect(at((NOW - 30_000) / 1000)).toBe(NOW - 30_000);
    expect(at('2026-06-03T12:00:00+02:00')).toBe(NOW);
    expect(at('2026-06-03T10:04:00Z')).toBe(NOW + 4 * 60_000); // a little fast: kept
    expect(at('2026-06-03T10:06:00Z')).toBe(NOW); // over 5 minutes ahead: now
    expect(at('2026-05-20T10:00:00Z')).toEqual({
      code: 'validation_failed',
      message: 'The timestamp is more than 7 days in the past.',
      errors: { timestamp: ['The timestamp is more than 7 days in the past.'] },
    });
  });

  it('refuses an unknown reader, a reader of another project, and an unassigned one (which still counts as seen)', () => {
    const refusal = (over: Partial<Parameters<ReaderScans['locate']>[0]>) => {
      const located = scan(over);
      return located.ok ? null : [located.refusal.code, located.refusal.message];
    };
    expect(refusal({ identifier: 'NOPE' })).toEqual(['unknown_reader', 'No reader has the identifier "NOPE".']);
    expect(refusal({ projectId: 2, identifier: 'DOOR-1' })).toEqual([
      'unknown_reader',
      'No reader has the identifier "DOOR-1".',
    ]);
    expect(refusal({ identifier: 'SPARE' })?.[0]).toBe('reader_unassigned');
    expect(states.of(2).status).toBe('offline');
  });

  it('finds a reader in any project when none is named, unless two projects have the identifier', () => {
    const located = scan({ projectId: null, identifier: 'DOOR-1', source: 'webhook' });
    expect(located.ok && located.request).toMatchObject({ projectId: 1, readerId: 1, source: 'webhook' });
    const twin = scan({ projectId: null, identifier: 'TWIN' });
    expect(twin.ok ? null : twin.refusal.code).toBe('ambiguous_reader');
    const named = scan({ projectId: 2, identifier: 'TWIN' });
    expect(named.ok && named.request.accessPointId).toBe(30);
  });

  it("names the engine's ScanError (its access point deleted meanwhile) as an unassigned reader", () => {
    const gone = new ScanError('unknown_access_point');
    expect(scanErrorRefusal(gone, 'DOOR-1')).toMatchObject({
      code: 'reader_unassigned',
      params: { identifier: 'DOOR-1' },
    });
    expect(scanErrorRefusal(gone, 'DOOR-1').message).toContain('DOOR-1');
  });

  it("names the engine's ScanError of a scan at a named access point (no reader) as no such access point", () => {
    expect(scanErrorRefusal(new ScanError('unknown_access_point'), null)).toEqual({
      code: 'not_found',
      message: 'Access point not found.',
      params: { resource: 'Access point' },
    });
  });

  it('throws on any other error as it is', () => {
    const other = new Error('disk full');
    expect(() => scanErrorRefusal(other, 'DOOR-1')).toThrow(other);
  });
});
