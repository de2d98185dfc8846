import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runGatehouse } from '../helpers/process.js';

// The data directory holds the database (password hashes, token hashes, webhook secrets, Pusher
// credentials) and the access-event journal (who went through which door): only the appliance's
// own user may read it (docs/security.md, attack 12). The built appliance is started as `npm start` does,
// with the usual umask 022, and the modes are read from the files it made.

const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-modes-'));
  dirs.push(dir);
  return dir;
};
afterAll(() =>
  dirs.forEach((d) => {
    rmSync(d, { recursive: true, force: true });
  }),
);

const mode = (path: string) => statSync(path).mode & 0o777;
const ENV = { GATEHOUSE_ADMIN_EMAIL: 'admin@example.test', GATEHOUSE_ADMIN_PASSWORD: 'correct horse battery' };

/** Every file the appliance keeps in its data directory, with the mode it has. */
function modes(dataDir: string): Record<string, string> {
  const out: Record<string, string> = { '.': mode(dataDir).toString(8) };
  for (const name of readdirSync(dataDir)) out[name] = mode(join(dataDir, name)).toString(8);
  for (const name of readdirSync(join(dataDir, 'journal')))
    out[`journal/${name}`] = mode(join(dataDir, 'journal', name)).toString(8);
  return out;
}

describe('the data directory', () => {
  it('is created 0700 with its database, WAL and journal files 0600 on a first start', async () => {
    const dataDir = join(tempDir(), 'venue', 'data');
    const proc = runGatehouse([], { ...ENV, GATEHOUSE_DATA_DIR: dataDir });
    await proc.waitFor(/Gatehouse ready at/);
    const seen = modes(dataDir);
    expect(await proc.stop('SIGTERM')).toBe(0);
    expect(Object.keys(seen)).toEqual(
      expect.arrayContaining(['.', 'gatehouse.db', 'gatehouse.db-wal', 'gatehouse.db-shm', 'journal']),
    );
    expect(Object.keys(seen).some((k) => k.startsWith('journal/events-'))).toBe(true);
    for (const [name, m] of Object.entries(seen))
      expect(m, name).toBe(name === '.' || name === 'journal' ? '700' : '600');
  });

  it('tightens an existing data directory that others could read, and says so in the log', async () => {
    const dataDir = join(tempDir(), 'data');
    const first = runGatehouse([], { ...ENV, GATEHOUSE_DATA_DIR: dataDir });
    await first.waitFor(/Gatehouse ready at/);
    expect(await first.stop('SIGTERM')).toBe(0);
    // As an older version, or a hand-made directory, left them.
    chmodSync(dataDir, 0o755);
    chmodSync(join(dataDir, 'journal'), 0o755);
    for (const name of readdirSync(dataDir)) if (name.startsWith('gatehouse.db')) chmodSync(join(dataDir, name), 0o644);
    expect(mode(join(dataDir, 'gatehouse.db'))).toBe(0o644);

    const second = runGatehouse([], { ...ENV, GATEHOUSE_DATA_DIR: dataDir });
    await second.waitFor(/Gatehouse ready at/);
    const seen = modes(dataDir);
    await second.waitFor(/data directory permissions tightened/);
    expect(await second.stop('SIGTERM')).toBe(0);
    for (const [name, m] of Object.entries(seen))
      expect(m, name).toBe(name === '.' || name === 'journal' ? '700' : '600');
  });

  it('leaves a data directory that is already private alone', async () => {
    const dataDir = join(tempDir(), 'data');
    mkdirSync(dataDir, { mode: 0o700 });
    const proc = runGatehouse([], { ...ENV, GATEHOUSE_DATA_DIR: dataDir });
    await proc.waitFor(/Gatehouse ready at/);
    expect(await proc.stop('SIGTERM')).toBe(0);
    expect(existsSync(join(dataDir, 'gatehouse.db'))).toBe(true);
    expect(proc.output.join('\n')).not.toContain('permissions tightened');
  });
});
