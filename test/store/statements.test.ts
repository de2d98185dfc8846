import BetterSqlite3 from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { statement } from '../../src/store/statements.js';

// The statement cache shares one prepared statement per SQL text: a mode one caller set must
// not reach the next caller of the same text.

describe('statement', () => {
  it('hands every caller the shared statement in its default mode, whatever an earlier caller set', () => {
    const db = new BetterSqlite3(':memory:');
    db.exec(
      'CREATE TABLE change_sequence (id INTEGER PRIMARY KEY, value INTEGER NOT NULL); INSERT INTO change_sequence VALUES (1, 7);',
    );
    const sql = 'SELECT value FROM change_sequence WHERE id = 1';
    expect(statement(db, sql).pluck().get()).toBe(7);
    expect(statement(db, sql).get()).toEqual({ value: 7 });
    expect(statement(db, sql).raw(true).get()).toEqual([7]);
    expect(statement(db, sql).get()).toEqual({ value: 7 });
    expect(statement(db, sql)).toBe(statement(db, sql)); // still prepared once
    const write = 'UPDATE change_sequence SET value = value + 1 WHERE id = 1 RETURNING value';
    expect(statement(db, write).pluck().get()).toBe(8);
    expect(statement(db, write).get()).toEqual({ value: 9 });
    expect(() => statement(db, 'DELETE FROM change_sequence WHERE id = 2').run()).not.toThrow(); // no mode on a statement that returns nothing
    db.close();
  });
});
