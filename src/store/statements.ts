import type BetterSqlite3 from 'better-sqlite3';

// Prepared statements are compiled once per connection and reused: preparing costs far more
// than running, and request paths run the same few statements all day.
//
// A statement's mode (pluck, raw) is a setting of the shared object, not of one call: a caller
// that plucked `SELECT value FROM change_sequence` left every later caller of the same SQL a
// number where it read a row's `.value` (undefined), and the cloud's poll of changes written
// outside its own announcements (an upload's rows among them) stopped for good. So each caller
// gets it back in the default mode and sets the one it wants.
const caches = new WeakMap<BetterSqlite3.Database, Map<string, BetterSqlite3.Statement>>();

export function statement(db: BetterSqlite3.Database, sql: string): BetterSqlite3.Statement {
  let cache = caches.get(db);
  if (!cache) caches.set(db, (cache = new Map()));
  let stmt = cache.get(sql);
  if (!stmt) cache.set(sql, (stmt = db.prepare(sql)));
  else if (stmt.reader) stmt.pluck(false).raw(false);
  return stmt;
}
