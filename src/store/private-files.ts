import { chmodSync, closeSync, mkdirSync, openSync, statSync } from 'node:fs';
import type { Logger } from '../logger.js';

// The data directory holds the database (password and token hashes, webhook secrets, the Pusher
// secret) and the access-event journal (who went through which door): readable by the
// appliance's own user only (docs/security.md, attack 12). Directories are made 0700 and files 0600
// whatever the umask; ones an older version or an operator left readable by others are
// tightened at start and reported, so the operator knows. A chmod the process may not do (a
// directory owned by someone else) is reported, never fatal: the box still starts.

export interface Tightened {
  /** Paths whose group or other permissions were removed. */
  tightened: string[];
  /** Paths that stay readable by others, with the error code of the chmod that failed. */
  failed: { path: string; code: string }[];
}

export const emptyTightened = (): Tightened => ({ tightened: [], failed: [] });

function tighten(path: string, mode: number, report: Tightened): void {
  let current: number;
  try {
    current = statSync(path).mode & 0o777;
  } catch {
    return; // gone (or never there): nothing to tighten
  }
  if ((current & 0o077) === 0) return;
  try {
    chmodSync(path, mode);
    report.tightened.push(path);
  } catch (err) {
    report.failed.push({ path, code: (err as NodeJS.ErrnoException).code ?? 'error' });
  }
}

/** Creates `dir` (and missing parents) 0700, or tightens it to 0700. */
export function privateDirectory(dir: string, report: Tightened): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  tighten(dir, 0o700, report);
}

/** Creates `file` empty 0600 when missing (SQLite gives its -wal and -shm the database file's
 * mode), or tightens it to 0600. */
export function privateFile(file: string, report: Tightened): void {
  closeSync(openSync(file, 'a', 0o600));
  tighten(file, 0o600, report);
}

/** Tightens `file` to 0600 when it exists. */
export function privateIfExists(file: string, report: Tightened): void {
  tighten(file, 0o600, report);
}

/** One log line for what was tightened, one for what could not be. */
export function reportTightened(log: Logger, report: Tightened): void {
  if (report.tightened.length)
    log.warn(
      { paths: report.tightened },
      'data directory permissions tightened: group and others had access (now 0700 / 0600)',
    );
  if (report.failed.length)
    log.error({ paths: report.failed }, 'data directory permissions could not be tightened: others may read them');
}
