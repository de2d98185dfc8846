import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

// What `npm test` needs from the system (scripts/test-tools.mjs): checked first, and a missing
// tool stops the run at once with the one line that installs it, by package name, instead of a
// dozen 10-second timeouts that never name it. Run with a PATH that has node and nothing else.

describe("the test run's check of the tools it needs", () => {
  const bare = mkdtempSync(join(tmpdir(), 'gatehouse-bare-path-'));
  symlinkSync(process.execPath, join(bare, 'node'));
  afterAll(() => rmSync(bare, { recursive: true, force: true }));
  const check = (env: Record<string, string>) =>
    spawnSync(process.execPath, ['scripts/test-tools.mjs'], { env: { ...env }, encoding: 'utf8' });

  it('stops naming each missing Debian package and the apt-get line that installs them all', () => {
    const run = check({ PATH: bare, CHROMIUM_PATH: join(bare, 'no-chromium') });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('npm test needs these Debian packages, missing here:');
    for (const pkg of [
      'openssl (openssl)',
      'mosquitto-clients (mosquitto_pub, mosquitto_sub)',
      'socat (socat)',
      'redis-server (redis-server)',
      'postgresql (psql)',
      `chromium (${join(bare, 'no-chromium')} (or set CHROMIUM_PATH))`,
    ])
      expect(run.stderr).toContain(pkg);
    expect(run.stderr).toContain(
      'apt-get update && apt-get install -y openssl mosquitto-clients socat redis-server postgresql libpq-dev chromium',
    );
  });

  it('passes on this machine, which has them', () => {
    const run = check({ PATH: process.env.PATH ?? '' });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
  });

  it('runs first in npm test, and the README and .ci/run install what it asks for', () => {
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts.test!.startsWith('node scripts/test-tools.mjs && ')).toBe(true);
    const readme = readFileSync('README.md', 'utf8');
    const ci = readFileSync('.ci/run', 'utf8');
    for (const needed of ['openssl', 'mosquitto-clients', 'socat', 'redis-server', 'chromium']) {
      expect(readme).toMatch(new RegExp(`apt-get install -y [^\\n]*\\b${needed}\\b`));
      expect(ci).toMatch(new RegExp(`apt-get install -y [^\\n]*\\b${needed}\\b`));
    }
  });
});
