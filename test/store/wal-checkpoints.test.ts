import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Store } from '../../src/store/database.js';
import { WalCheckpoints } from '../../src/store/wal-checkpoints.js';

// The checkpoint worker's work, run in the test's own thread against a real SQLite file.

describe('WAL checkpoints (the checkpoint worker, in this thread)', () => {
  let dataDir: string;
  let store: Store;
  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-checkpoint-'));
    store = new Store({ dataDir, synchronous: 'NORMAL', autoCheckpoint: false }, pino({ level: 'silent' }));
    store.start();
  });
  afterEach(() => {
    store.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const commit = () =>
    store.db
      .prepare("INSERT INTO teams (name, slug, created_at, updated_at) VALUES ('t', ?, 'x', 'x')")
      .run(`t${Math.random()}`);

  it('checkpoints only when another connection committed since the last tick', () => {
    const checkpoints = new WalCheckpoints({ file: store.file, synchronous: 'NORMAL' });
    try {
      expect(checkpoints.tick()).toMatchObject({ ok: true }); // the first tick has seen nothing yet
      expect(checkpoints.tick()).toBeNull();
      commit();
      const result = checkpoints.tick();
      expect(result).toMatchObject({ ok: true, busy: 0 });
      expect(result!.log).toBeGreaterThan(0);
      expect(result!.checkpointed).toBe(result!.log); // PASSIVE with no reader in the way folds back everything
      expect(checkpoints.tick()).toBeNull();
    } finally {
      checkpoints.close();
    }
  });

  it('answers a failed checkpoint instead of throwing', () => {
    const checkpoints = new WalCheckpoints({ file: store.file, synchronous: 'NORMAL' });
    checkpoints.close();
    expect(checkpoints.run()).toEqual({ ok: false, error: expect.stringMatching(/not open/) });
  });
});
