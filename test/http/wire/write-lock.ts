import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import type { TestAppliance } from '../../helpers/appliance.js';
import type { Operation } from './check.js';
import type { Case, World } from './world.js';

// The tables' happy requests once more, each while another connection (this test, as a CLI
// import would) holds SQLite's write lock (docs/storage.md). The lock is held around the request
// to the case's own operation only: what the case sends first to set it up goes through
// unhindered. An operation the document says may answer 503 store_busy must answer it (its
// Retry-After and retry_after are checked against the document like any answer); every other
// one must answer as it does without the lock, so a GET or a POST marked `writes: false` that
// does write answers a 503 the document does not declare, and fails.

/** Whether the document declares store_busy for the operation (answers.ts conditions.storeBusy). */
export const declaresStoreBusy = (op: Operation): boolean =>
  (op.spec.responses['503'] as { description?: string } | undefined)?.description?.includes('`store_busy`') ?? false;

/** A path template as a pattern of the paths it names. */
const pattern = (template: string) =>
  new RegExp(
    `^${template
      .split(/\{\w+\}/)
      .map((part) => part.replace(/[.*+?^$()|[\]\\]/g, '\\$&'))
      .join('[^/]+')}$`,
  );

/** BEGIN IMMEDIATE from a connection of our own, held while `fn` runs. */
export class WriteLock {
  readonly #db: BetterSqlite3.Database;

  constructor(private readonly gh: TestAppliance) {
    this.#db = new BetterSqlite3(join(gh.dataDir, 'gatehouse.db'));
    this.#db.pragma('busy_timeout = 30000'); // the journal's ingest worker may hold it a moment
  }

  async around<T>(fn: () => Promise<T>): Promise<T> {
    // Answered scans in access_events first: the lock would hold the ingest back, and the reads
    // that wait for it would answer 503 event_log_behind instead of what the case expects.
    await this.gh.app.deps.scans.settled();
    this.#db.exec('BEGIN IMMEDIATE');
    try {
      return await fn();
    } finally {
      this.#db.exec('ROLLBACK');
    }
  }

  close(): void {
    this.#db.close();
  }
}

/**
 * The happy cases (2xx) of `cases`, each sent with its operation's request under the lock, and
 * expecting 503 store_busy where the document declares it. `wrong` collects the operations that
 * declare it yet answered 2xx under the lock.
 */
export function underWriteLock(
  w: World,
  lock: WriteLock,
  ops: Map<string, Operation>,
  cases: readonly Case[],
  wrong: string[],
): Case[] {
  return cases
    .filter((k) => k.status < 300)
    .map((k): Case => {
      const op = ops.get(k.op);
      const busy = op !== undefined && declaresStoreBusy(op);
      const target = op && pattern(op.path);
      const send = async () => {
        w.around = (req, go) =>
          req.method === op?.method && target?.test(req.path.split('?')[0]!) ? lock.around(go) : go();
        try {
          const res = await k.send();
          if (busy && res.status < 300)
            wrong.push(
              `${k.op}: declares store_busy but answered ${res.status} under the write lock, so it does not write to SQLite: mark it writes: false`,
            );
          return res;
        } finally {
          w.around = null;
        }
      };
      const why = `${k.why}, under another connection's write lock`;
      return busy ? { op: k.op, status: 503, why, send, error: 'store_busy' } : { ...k, why, send };
    });
}
