import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { journalLine, SLOT, SLOTS, segmentName } from '../../src/journal/journal-format.js';
import { type IngestMessage, ingestLoop, JournalIngest, MAX_ROWS } from '../../src/journal/journal-ingest.js';
import { Store } from '../../src/store/database.js';
import { eventRow } from '../helpers/access-event-rows.js';

// The ingest worker's work, run in the test's own thread: real segment files, a real SQLite file.

const log = pino({ level: 'silent' });

const row = (i: number, credentialValue = `V${i}`) => eventRow(i, { credentialValue });
const lines = (ids: number[]) => ids.map((i) => `${journalLine(row(i))}\n`).join('');

describe('journal ingest (the ingest worker, in this thread)', () => {
  let dataDir: string;
  let store: Store;
  let dir: string;
  const ingests: JournalIngest[] = [];
  const messages: IngestMessage[] = [];
  const post = (m: IngestMessage) => messages.push(m);
  const open = (firstSegment = 1) => {
    const ingest = new JournalIngest({ file: store.file, dir, synchronous: 'NORMAL', firstSegment });
    ingests.push(ingest);
    return ingest;
  };
  const write = (segment: number, text: string) => appendFileSync(join(dir, segmentName(segment)), text);
  const stored = () => store.db.prepare('SELECT uuid FROM access_events ORDER BY id').pluck().all() as string[];
  const position = () => store.db.prepare('SELECT segment, offset FROM event_journal_position').get();

  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-ingest-'));
    dir = join(dataDir, 'journal');
    mkdirSync(dir);
    store = new Store({ dataDir, synchronous: 'NORMAL', autoCheckpoint: false }, log);
    store.start();
    store.db.prepare("INSERT INTO teams (name, slug, created_at, updated_at) VALUES ('t', 't', 'x', 'x')").run();
    store.db
      .prepare(
        "INSERT INTO projects (team_id, name, slug, timezone, created_at, updated_at) VALUES (1, 'p', 'p', 'UTC', 'x', 'x')",
      )
      .run();
    messages.length = 0;
  });
  afterEach(() => {
    for (const ingest of ingests.splice(0)) ingest.close();
    store.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('takes a line written before the clock fields (17 values) and one with them (an edge stamps each scan)', () => {
    const ingest = open();
    const old = `${JSON.stringify((JSON.parse(journalLine(row(1))) as unknown[]).slice(0, 17))}\n`;
    const stamped = `${journalLine(eventRow(2, { clockOffsetMs: 10_800_004, clockUnsynchronised: 1 }))}\n`;
    write(1, old + stamped);
    expect(ingest.step(1, Buffer.byteLength(old + stamped), post)).toBe('done');
    expect(
      store.db.prepare('SELECT uuid, clock_offset_ms, clock_unsynchronised FROM access_events ORDER BY id').all(),
    ).toEqual([
      { uuid: row(1).uuid, clock_offset_ms: null, clock_unsynchronised: null },
      { uuid: row(2).uuid, clock_offset_ms: 10_800_004, clock_unsynchronised: 1 },
    ]);
  });

  it('takes a line written before reason_detail (19 values) with a null detail, and one with it', () => {
    const ingest = open();
    const old = `${JSON.stringify((JSON.parse(journalLine(eventRow(1, { reason: 'not_authorized', reasonDetail: 'already_inside' }))) as unknown[]).slice(0, 19))}\n`;
    const detailed = `${journalLine(eventRow(2, { reason: 'not_authorized', reasonDetail: 'access_point_inactive' }))}\n`;
    expect((JSON.parse(detailed) as unknown[]).length).toBe(21);
    write(1, old + detailed);
    expect(ingest.step(1, Buffer.byteLength(old + detailed), post)).toBe('done');
    expect(store.db.prepare('SELECT uuid, reason, reason_detail FROM access_events ORDER BY id').all()).toEqual([
      { uuid: row(1).uuid, reason: 'not_authorized', reason_detail: null },
      { uuid: row(2).uuid, reason: 'not_authorized', reason_detail: 'access_point_inactive' },
    ]);
  });

  it('takes a line written before offline_verified (20 values) as not offline-verified, and one with it', () => {
    const ingest = open();
    const old = `${JSON.stringify((JSON.parse(journalLine(eventRow(1, { offlineVerified: true }))) as unknown[]).slice(0, 20))}\n`;
    const verified = `${journalLine(eventRow(2, { offlineVerified: true }))}\n`;
    write(1, old + verified);
    expect(ingest.step(1, Buffer.byteLength(old + verified), post)).toBe('done');
    expect(store.db.prepare('SELECT uuid, offline_verified FROM access_events ORDER BY id').all()).toEqual([
      { uuid: row(1).uuid, offline_verified: 0 },
      { uuid: row(2).uuid, offline_verified: 1 },
    ]);
  });

  it('takes the complete lines written so far and stores the position in the same transaction, leaving a line still being written', () => {
    const ingest = open();
    const whole = lines([1, 2, 3]);
    write(1, whole + journalLine(row(4)).slice(0, 20));
    const end = Buffer.byteLength(whole) + 20;
    expect(ingest.step(1, end, post)).toBe('done');
    expect(stored()).toEqual([row(1).uuid, row(2).uuid, row(3).uuid]);
    expect(position()).toEqual({ segment: 1, offset: Buffer.byteLength(whole) });
    expect(messages).toEqual([{ ok: true, segment: 1, offset: Buffer.byteLength(whole), events: 3 }]);
    expect(ingest.step(1, end, post)).toBe('idle');
  });

  it('reads a closed segment to its end before going on to the current one', () => {
    const ingest = open();
    write(1, lines([1, 2]));
    write(2, lines([3]));
    expect(ingest.step(2, Buffer.byteLength(lines([3])), post)).toBe('done');
    expect(stored()).toHaveLength(3);
    expect(ingest.position).toEqual({ segment: 2, offset: Buffer.byteLength(lines([3])) });
  });

  it('stores at most MAX_ROWS rows per transaction and says there are more', () => {
    const ingest = open();
    const ids = Array.from({ length: MAX_ROWS + 5 }, (_, i) => i + 1);
    write(1, lines(ids));
    const end = Buffer.byteLength(lines(ids));
    expect(ingest.step(1, end, post)).toBe('more');
    expect(stored()).toHaveLength(MAX_ROWS);
    expect(ingest.step(1, end, post)).toBe('done');
    expect(stored()).toHaveLength(MAX_ROWS + 5);
  });

  it('reads a line longer than its 4 MiB read slice whole', () => {
    const ingest = open();
    const big = `${journalLine(row(1, 'x'.repeat(5 << 20)))}\n`;
    write(1, big + lines([2]));
    expect(ingest.step(1, Buffer.byteLength(big) + Buffer.byteLength(lines([2])), post)).toBe('done');
    expect(
      store.db
        .prepare('SELECT length(credential_value) AS n FROM access_events WHERE uuid = ?')
        .pluck()
        .get(row(1).uuid),
    ).toBe(5 << 20);
    expect(stored()).toHaveLength(2);
  });

  it('reports an unreadable line, stores nothing of that step and stays where it was', () => {
    const ingest = open();
    write(1, `${lines([1])}{not json\n`);
    expect(ingest.step(1, Buffer.byteLength(lines([1])) + 10, post)).toBe('failed');
    expect(messages[0]).toMatchObject({ ok: false, error: expect.stringMatching(/JSON/) });
    expect(stored()).toEqual([]);
    expect(ingest.position).toEqual({ segment: 1, offset: 0 });
  });

  it('carries on from the stored position after a restart, taking nothing twice', () => {
    write(1, lines([1, 2]));
    open().step(1, Buffer.byteLength(lines([1, 2])), post);
    write(1, lines([3]));
    const again = open();
    expect(again.position).toEqual({ segment: 1, offset: Buffer.byteLength(lines([1, 2])) });
    again.step(1, Buffer.byteLength(lines([1, 2, 3])), post);
    expect(stored()).toEqual([row(1).uuid, row(2).uuid, row(3).uuid]);
  });

  it('starts at the first segment of this run when older ones were recovered at start', () => {
    writeFileSync(join(dir, segmentName(1)), lines([1])); // recovered already by EventJournal.recover()
    write(3, lines([2]));
    const ingest = open(3);
    expect(ingest.position).toEqual({ segment: 3, offset: 0 });
    ingest.step(3, Buffer.byteLength(lines([2])), post);
    expect(stored()).toEqual([row(2).uuid]);
  });

  it('loops until stopping with everything written taken in', () => {
    const ids = Array.from({ length: MAX_ROWS * 2 + 1 }, (_, i) => i + 1);
    write(1, lines(ids));
    const state = new Int32Array(new SharedArrayBuffer(SLOTS * 4));
    Atomics.store(state, SLOT.segment, 1);
    Atomics.store(state, SLOT.end, Buffer.byteLength(lines(ids)));
    Atomics.store(state, SLOT.stop, 1);
    // The loop retries a failed step forever (the rows are safe in the journal); here a failure ends it.
    const failFast = (m: IngestMessage) => {
      if (!m.ok) throw new Error(m.error);
      post(m);
    };
    ingestLoop(open(), state, 1, failFast);
    expect(stored()).toHaveLength(ids.length);
    expect(messages.map((m) => (m.ok ? m.events : -1))).toEqual([MAX_ROWS, MAX_ROWS, 1]);
  });
});
