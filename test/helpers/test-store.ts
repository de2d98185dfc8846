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
