import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { journalLine, segmentName } from '../../src/journal/journal-format.js';
import { foldJournalTail, journalPosition, readJournalTail } from '../../src/journal/journal-tail.js';
import { Store } from '../../src/store/database.js';
import { eventRow } from '../helpers/access-event-rows.js';

// The journal's tail as a backup takes it (src/cli/backup.ts): read from the box's position before
// the copy, folded into the copy after, whatever the ingest did between the two.

const log = pino({ level: 'silent' });
const line = (i: number) => `${journalLine(eventRow(i))}\n`;
const uuid = (i: number) => eventRow(i).uuid;

describe('the journal tail a backup folds in', () => {
  let dataDir: string;
  let dir: string;
  let copy: Store;
  const stored = () => copy.db.prepare('SELECT uuid FROM access_events ORDER BY id').pluck().all() as string[];
  const write = (segment: number, text: string) => writeFileSync(join(dir, segmentName(segment)), text);

  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-tail-'));
    dir = join(dataDir, 'journal');
    mkdirSync(dir);
    copy = new Store({ dataDir: join(dataDir, 'copy'), synchronous: 'NORMAL' }, log);
    copy.start();
    copy.db.prepare("INSERT INTO teams (name, slug, created_at, updated_at) VALUES ('t', 't', 'x', 'x')").run();
    copy.db
      .prepare(
        `INSERT INTO projects (team_id, name, slug, timezone, created_at, updated_at)
          VALUES (1, 'p', 'p', 'UTC', 'x', 'x')`,
      )
      .run();
  });
  afterEach(() => {
    copy.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('reads complete lines from the position on, across segments, and skips one deleted since (ingested)', () => {
    write(3, line(1) + line(2) + line(3));
    write(4, line(4) + line(5).slice(0, 30)); // the last line is still being written
    const tail = readJournalTail(dir, { segment: 2, offset: 17 }); // segment 2: ingested and deleted
    expect(tail.unreadable).toEqual([]);
    expect(tail.lines.map((l) => [l.segment, l.values[0]])).toEqual([
      [3, uuid(1)],
      [3, uuid(2)],
      [3, uuid(3)],
      [4, uuid(4)],
    ]);
    const from = readJournalTail(dir, { segment: 3, offset: line(1).length });
    expect(from.lines.map((l) => l.values[0])).toEqual([uuid(2), uuid(3), uuid(4)]);
    expect(readJournalTail(join(dataDir, 'no-journal'), { segment: 0, offset: 0 })).toEqual({
      lines: [],
      unreadable: [],
    });
  });

  it('stops a segment at a line that is not JSON and says where', () => {
    write(1, `${line(1)}{not json\n${line(2)}`);
    write(2, line(3));
    const tail = readJournalTail(dir, { segment: 1, offset: 0 });
    expect(tail.lines.map((l) => l.values[0])).toEqual([uuid(1), uuid(3)]);
    expect(tail.unreadable).toEqual([{ segment: 1, offset: line(1).length }]);
  });

  it('folds only what the copy does not hold, once, and moves its position past it', () => {
    write(1, line(1) + line(2) + line(3));
    write(2, line(4));
    const tail = readJournalTail(dir, { segment: 1, offset: 0 });
    // The copy was taken after the ingest had stored events 1 and 2 (the tail was read before).
    const mark = copy.db.prepare('UPDATE event_journal_position SET segment = ?, offset = ? WHERE id = 1');
    const insert = copy.db.prepare(
      `INSERT INTO access_events (uuid, project_id, access_point_id, credential_value, granted, scanned_at, decided_at,
        source) VALUES (?, 1, 1, 'V', 0, 'x', 'x', 'api')`,
    );
    insert.run(uuid(1));
    insert.run(uuid(2));
    mark.run(1, line(1).length + line(2).length);
    expect(foldJournalTail(copy.db, tail.lines)).toEqual({
      events: 2,
      position: { segment: 2, offset: line(4).length },
    });
    expect(stored()).toEqual([1, 2, 3, 4].map(uuid));
    expect(journalPosition(copy.db)).toEqual({ segment: 2, offset: line(4).length });
    // Again: nothing more, nothing twice.
    expect(foldJournalTail(copy.db, tail.lines).events).toBe(0);
    expect(stored()).toHaveLength(4);
  });
});
