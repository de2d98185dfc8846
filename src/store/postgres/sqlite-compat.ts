// What PostgreSQL is made to look like to the services, in SQLite's terms (pg-database.ts): the
// values a statement binds, and the codes its failures carry.

/** A value bound as better-sqlite3 binds it: numbers, strings, bigints, buffers and null; anything
 * else refused with its TypeError (the services treat that as a value the store cannot hold). */
export function param(v: unknown): unknown {
  if (v === undefined || v === null) return null;
  if (typeof v === 'number' || typeof v === 'string') return v;
  if (typeof v === 'bigint') return v.toString();
  if (Buffer.isBuffer(v) || v instanceof Uint8Array) return `\\x${Buffer.from(v).toString('hex')}`;
  throw new TypeError('SQLite3 can only bind numbers, strings, bigints, buffers, and null');
}

/** SQLite's result code for a PostgreSQL SQLSTATE, as far as the services tell them apart. */
export function sqliteCode(state: string): string {
  switch (state) {
    case '23505':
      return 'SQLITE_CONSTRAINT_UNIQUE';
    case '23503':
      return 'SQLITE_CONSTRAINT_FOREIGNKEY';
    case '23502':
      return 'SQLITE_CONSTRAINT_NOTNULL';
    case '23514':
      return 'SQLITE_CONSTRAINT_CHECK';
    case '40001': // serialization failure
    case '40P01': // deadlock
    case '55P03': // lock not available
      return 'SQLITE_BUSY';
  }
  if (state.startsWith('23')) return 'SQLITE_CONSTRAINT';
  if (state.startsWith('22')) return 'SQLITE_MISMATCH'; // a value the column cannot hold
  if (state === '57014') return 'SQLITE_BUSY_TIMEOUT'; // a statement or lock timeout
  return 'SQLITE_ERROR';
}
