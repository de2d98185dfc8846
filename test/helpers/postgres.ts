import { execFileSync } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
// @ts-expect-error a plain ES module of the scripts folder, without types
import { postgresBin } from '../../scripts/test-tools.mjs';

// A throwaway PostgreSQL for a test file (docs/decisions.md: the cloud on PostgreSQL): Debian's
// postgresql package, initdb and pg_ctl in a temporary directory, listening on a Unix socket there
// only (no TCP port to collide on). initdb and pg_ctl refuse root: they run as the postgres user
// (runuser) when the tests do. fsync is off: the tests' data outlives no crash of the machine.

const BIN: string = (postgresBin as () => string | null)() ?? '/usr/lib/postgresql/15/bin';

export interface Postgres {
  /** The directory of its Unix socket (libpq's host). */
  host: string;
  /** libpq's URL of a new, empty database on this server. */
  database(name?: string): string;
  stop(): void;
}

export function startPostgres(): Postgres {
  const dir = mkdtempSync(join(tmpdir(), 'gh-pg-'));
  const asRoot = process.getuid?.() === 0;
  const as = (cmd: string, args: string[]) =>
    asRoot
      ? execFileSync('runuser', ['-u', 'postgres', '--', join(BIN, cmd), ...args], { stdio: 'pipe' })
      : execFileSync(join(BIN, cmd), args, { stdio: 'pipe' });
  if (asRoot) {
    const pw = execFileSync('id', ['-u', 'postgres']).toString().trim();
    const gid = execFileSync('id', ['-g', 'postgres']).toString().trim();
    chownSync(dir, Number(pw), Number(gid));
  }
  const data = join(dir, 'data');
  as('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--encoding=UTF8', '--locale=C.UTF-8']);
  as('pg_ctl', [
    '-D',
    data,
    '-w',
    '-l',
    join(dir, 'log'),
    '-o',
    `-k ${dir} -c listen_addresses='' -c fsync=off -c synchronous_commit=off -c full_page_writes=off`,
    'start',
  ]);
  let n = 0;
  const psql = (sql: string) =>
    execFileSync('psql', ['-h', dir, '-U', 'postgres', '-d', 'postgres', '-v', 'ON_ERROR_STOP=1', '-c', sql], {
      stdio: 'pipe',
    });
  return {
    host: dir,
    database(name = `t${++n}`) {
      psql(`CREATE DATABASE ${name}`);
      return `postgresql://postgres@/${name}?host=${encodeURIComponent(dir)}`;
    },
    stop() {
      try {
        as('pg_ctl', ['-D', data, '-m', 'immediate', 'stop']);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
