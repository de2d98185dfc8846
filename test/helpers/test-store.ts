import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';

// Which store a test's cloud runs on (docs/decisions.md: the cloud on PostgreSQL). `npm test` runs
// the cloud's test files twice: on SQLite, and with GATEHOUSE_TEST_STORE=postgres, where every
// appliance started with role cloud gets a new database of its own on the throwaway PostgreSQL the
// global setup started (test/helpers/postgres.ts; its socket directory in GATEHOUSE_TEST_PG_HOST).

export const onPostgres = (): boolean => process.env.GATEHOUSE_TEST_STORE === 'postgres';

/** A new, empty database's URL. */
export function newDatabase(): string {
  const host = process.env.GATEHOUSE_TEST_PG_HOST;
  if (!host) throw new Error('GATEHOUSE_TEST_STORE=postgres without the PostgreSQL of the global setup');
  const name = `gh_${randomBytes(6).toString('hex')}`;
  execFileSync(
    'psql',
    ['-h', host, '-U', 'postgres', '-d', 'postgres', '-v', 'ON_ERROR_STOP=1', '-c', `CREATE DATABASE ${name}`],
    {
      stdio: 'pipe',
    },
  );
  return `postgresql://postgres@/${name}?host=${encodeURIComponent(host)}`;
}

/** The environment a cloud starts with on the store under test (nothing on SQLite, or for another role). */
export function storeEnv(env: Record<string, string | undefined>): Record<string, string> {
  if (!onPostgres() || env.GATEHOUSE_ROLE !== 'cloud' || env.GATEHOUSE_DATABASE_URL) return {};
  return { GATEHOUSE_DATABASE_URL: newDatabase() };
}

/** The socket directory and database of a URL newDatabase made (postgresql://postgres@/<name>?host=<dir>). */
function parts(url: string): { host: string; name: string } {
  const m = /^postgresql:\/\/postgres@\/([a-z0-9_]+)\?host=(.+)$/.exec(url);
  if (!m) throw new Error(`not a database of the test PostgreSQL: ${url}`);
  return { name: m[1]!, host: decodeURIComponent(m[2]!) };
}

/** A backup of a database of the test PostgreSQL, as an operator takes one (pg_dump, custom format). */
export function dumpDatabase(url: string, file: string): void {
  const { host, name } = parts(url);
  execFileSync('pg_dump', ['-h', host, '-U', 'postgres', '-Fc', '-f', file, name], { stdio: 'pipe' });
}

/** The database made again from a backup (its connections must be gone: the cloud stopped). */
export function restoreDatabase(url: string, file: string): void {
  const { host, name } = parts(url);
  const psql = (sql: string) =>
    execFileSync('psql', ['-h', host, '-U', 'postgres', '-d', 'postgres', '-v', 'ON_ERROR_STOP=1', '-c', sql], {
      stdio: 'pipe',
    });
  psql(`DROP DATABASE ${name}`);
  psql(`CREATE DATABASE ${name}`);
  execFileSync('pg_restore', ['-h', host, '-U', 'postgres', '-d', name, file], { stdio: 'pipe' });
}
