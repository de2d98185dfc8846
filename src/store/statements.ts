import type BetterSqlite3 from 'better-sqlite3';

// Prepared statements are compiled once per connection and reused: preparing costs far more
// than running, and request paths run the same few statements all day.
const caches = new WeakMap<BetterSqlite3.Database, Map<string, BetterSqlite3.Statement>>();

export function statement(db: BetterSqlite3.Database, sql: string): BetterSqlite3.Statement {
  let cache = caches.get(db);
  if (!cache) caches.set(db, (cache = new Map()));
  let stmt = cache.get(sql);
  if (!stmt) cache.set(sql, (stmt = db.prepare(sql)));
  return stmt;
}
