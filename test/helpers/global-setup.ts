import { execFileSync } from 'node:child_process';
// @ts-expect-error a plain ES module of the scripts folder, without types
import { missingToolsMessage } from '../../scripts/test-tools.mjs';
import { startPostgres } from './postgres.js';

// Process-level tests run the bundle exactly as `npm start` does; build it once. First, the
// tools the tests drive must be there, or the run stops at once naming them (scripts/test-tools.mjs).
export default function setup(): (() => void) | undefined {
  const missing = (missingToolsMessage as () => string | null)();
  if (missing) throw new Error(missing);
  execFileSync(process.execPath, ['scripts/build.mjs'], { stdio: 'inherit' });
  // The cloud's tests on PostgreSQL (test/helpers/test-store.ts): one server for the run, a database per cloud.
  if (process.env.GATEHOUSE_TEST_STORE !== 'postgres') return undefined;
  const postgres = startPostgres();
  process.env.GATEHOUSE_TEST_PG_HOST = postgres.host;
  return () => postgres.stop();
}
