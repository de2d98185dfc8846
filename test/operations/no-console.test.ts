import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

// A debug line must not ship again (one printed on every plugin page and in the console's
// bundle): the linter refuses `console` in src/, console/ and firmware-bridge/ (console.error,
// the toolkit's report of a plugin's mistakes in the browser, excepted; the appliance logs with
// pino and the CLI writes to stdout). Checked with this repository's biome.json on a copy.

describe('the linter on console calls', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-lint-'));
  const config = JSON.parse(readFileSync('biome.json', 'utf8')) as Record<string, unknown>;
  delete config.vcs;
  delete config.$schema;
  writeFileSync(join(dir, 'biome.json'), JSON.stringify(config));
  symlinkSync(resolve('node_modules'), join(dir, 'node_modules'));
  for (const folder of ['src/plugins/toolkit', 'console/src', 'test'])
    mkdirSync(join(dir, folder), { recursive: true });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const lint = (file: string, code: string) => {
    writeFileSync(join(dir, file), code);
    return spawnSync(
      process.execPath,
      [resolve('node_modules/@biomejs/biome/bin/biome'), 'lint', '--max-diagnostics=5', file],
      { cwd: dir, encoding: 'utf8' },
    );
  };

  it('fails on console.log in the appliance and the console, not in tests, and lets console.error through', () => {
    for (const file of ['src/plugins/toolkit/probe.ts', 'console/src/probe.ts']) {
      const run = lint(file, "export const probe = (x: number): void => {\n  console.log('zz scan', x);\n};\n");
      expect(run.status, file).toBe(1);
      expect(run.stdout + run.stderr).toContain('noConsole');
    }
    expect(
      lint(
        'src/plugins/toolkit/ok.ts',
        "export const report = (x: number): void => {\n  console.error('bad', x);\n};\n",
      ).status,
    ).toBe(0);
    expect(
      lint('test/probe.ts', "export const probe = (x: number): void => {\n  console.log('seed', x);\n};\n").status,
    ).toBe(0);
  });
});
