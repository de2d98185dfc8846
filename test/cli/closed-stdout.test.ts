import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

// `gatehouse users list | head`: the reader closes the pipe before the answer is written. The command ends
// as it would have (exit 0), without an EPIPE stack on stderr.
describe('a command whose reader has gone away', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-epipe-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('exits 0 and says nothing of EPIPE', async () => {
    const flags = JSON.parse(readFileSync('scripts/node-flags.json', 'utf8')) as string[];
    const proc = spawn(process.execPath, [...flags, 'dist/main.js', 'users', 'list'], {
      env: { PATH: process.env.PATH ?? '', GATEHOUSE_DATA_DIR: dataDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    proc.stdout.destroy(); // the read end closed before the child writes a byte
    let stderr = '';
    proc.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const code = await new Promise<number | null>((done) => proc.on('exit', done));
    expect(stderr).not.toMatch(/EPIPE|Error/);
    expect(code).toBe(0);
  });
});
