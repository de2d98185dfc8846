import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Database } from '../store/database.js';
import { writeTransaction } from '../store/transactions.js';
import {
  INSERT_EVENT_SQL,
  journalValues,
  MARK_SQL,
  POSITION_SQL,
  SEGMENT_FILE,
  segmentName,
} from './journal-format.js';

// A copy of a running box's store (`gatehouse backup`, src/cli/backup.ts) holds access_events as
// far as the ingest had got; decisions answered since are only in the journal's segments
// (docs/storage.md: the access-event log). The backup reads the journal's tail *before* it copies
// the database and folds the lines into the copy after: a segment is deleted only once it is
// ingested, so a line read here is either past the copy's position (folded) or already in the
// copy, and every decision answered before the read is in the backup. Reading after the copy
// could miss a segment the ingest finished and deleted in between.

export interface JournalPosition {
  segment: number;
  offset: number;
}

/** One complete journal line: where it starts, where the next begins, its values. */
export interface TailLine {
  segment: number;
  offset: number;
  end: number;
  values: unknown[];
}

export interface JournalTail {
  lines: TailLine[];
  /** Where a line could not be read (the rest of its segment is left out, as recovery does). */
  unreadable: JournalPosition[];
}

/** How far the journal is in `db`'s access_events. */
export function journalPosition(db: Database): JournalPosition {
  return db.prepare(POSITION_SQL).get() as JournalPosition;
}

/** The complete lines of the journal in `dir` from `from` on. A segment gone by the time it is
 * read was ingested meanwhile; a line without its newline is still being written. */
export function readJournalTail(dir: string, from: JournalPosition): JournalTail {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { lines: [], unreadable: [] };
    throw err;
  }
  const segments = names
    .map((name) => SEGMENT_FILE.exec(name))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]))
    .filter((n) => n >= from.segment)
    .sort((a, b) => a - b);
  const tail: JournalTail = { lines: [], unreadable: [] };
  for (const segment of segments) {
    let bytes: Buffer;
    try {
      bytes = readFileSync(join(dir, segmentName(segment)));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw err;
    }
    let at = segment === from.segment ? from.offset : 0;
    for (let newline = bytes.indexOf(0x0a, at); newline !== -1; newline = bytes.indexOf(0x0a, at)) {
      let values: unknown[];
      try {
        values = JSON.parse(bytes.toString('utf8', at, newline)) as unknown[];
      } catch {
        tail.unreadable.push({ segment, offset: at });
        break;
      }
      tail.lines.push({ segment, offset: at, end: newline + 1, values });
      at = newline + 1;
    }
  }
  return tail;
}

/** Inserts the lines past `db`'s journal position into its access_events (each event once, as
 * recovery does) and moves the position past them, in one transaction. Answers the events added. */
export function foldJournalTail(
  db: Database,
  lines: readonly TailLine[],
): { events: number; position: JournalPosition } {
  return writeTransaction(db, () => {
    const from = journalPosition(db);
    const insert = db.prepare(INSERT_EVENT_SQL);
    let position = from;
    let events = 0;
    for (const line of lines) {
      if (line.segment < from.segment || (line.segment === from.segment && line.offset < from.offset)) continue;
      events += insert.run(journalValues([...line.values])).changes;
      position = { segment: line.segment, offset: line.end };
    }
    if (position !== from) db.prepare(MARK_SQL).run(position.segment, position.offset);
    return { events, position };
  });
}
