import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseManifestText } from '../../src/plugins/toolkit/manifest.js';
import { runCli } from '../helpers/process.js';

// `gatehouse plugin init` and `gatehouse plugin build` as a developer runs them: a new plugin that
// installs (npm, its toolkit from this checkout) and builds; the example kiosk builds; bad input
// gets one clear line and exit code 2.

const run = promisify(execFile);

describe('gatehouse plugin init and build', () => {
  let base: string;
  beforeAll(() => {
    base = mkdtempSync(join(tmpdir(), 'gh-scaffold-'));
  });
  afterAll(() => rmSync(base, { recursive: true, force: true }));

  it('init --yes writes a plugin that npm installs and builds, its toolkit resolved from this checkout', async () => {
    const dir = join(base, 'my-kiosk');
    const init = await runCli(['plugin', 'init', dir, '--yes'], {});
    expect(init.code, init.stderr).toBe(0);
    const made = JSON.parse(init.stdout) as { files: string[]; next: string[] };
    expect(made.files).toEqual(
      expect.arrayContaining(['package.json', 'app-manifest.json', 'index.html', 'src/main.ts', 'src/App.vue']),
    );
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    expect(pkg.name).toBe('my-kiosk');
    expect(pkg.devDependencies.gatehouse).toMatch(/^file:/);
    const manifestText = readFileSync(join(dir, 'app-manifest.json'), 'utf8');
    expect(parseManifestText(manifestText).ok).toBe(true);

    const env = {
      ...process.env,
      npm_config_audit: 'false',
      npm_config_fund: 'false',
      npm_config_update_notifier: 'false',
    };
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund'], { cwd: dir, env, timeout: 180_000 });
    // The manifest's $schema is the checkout's JSON Schema once installed (editors complete and check it).
    const schemaPath = JSON.parse(manifestText).$schema as string;
    expect(JSON.parse(readFileSync(join(dir, schemaPath), 'utf8')).$id).toBe('urn:gatehouse:plugin:app-manifest');

    const built = await run('npm', ['run', 'build'], { cwd: dir, env, timeout: 180_000 });
    const summary = JSON.parse(built.stdout.slice(built.stdout.indexOf('{'))) as { files: string[] };
    expect(summary.files).toContain('index.html');
    expect(summary.files).toContain('logo.svg');
    const html = readFileSync(join(dir, 'dist/index.html'), 'utf8');
    // Relative asset paths: the build can be served under any path.
    const script = /src="(\.\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    const bundle = readFileSync(join(dir, 'dist', script!), 'utf8');
    expect(bundle).toContain('Load access points');
    expect(bundle).not.toContain('virtual:gatehouse');
  }, 300_000);

  it('builds the example door kiosk', async () => {
    const out = join(base, 'kiosk-dist');
    const built = await runCli(['plugin', 'build', 'examples/door-kiosk', '--out', out], {});
    expect(built.code, built.stderr).toBe(0);
    expect(JSON.parse(built.stdout).files).toEqual(expect.arrayContaining(['index.html', 'granted.svg', 'denied.svg']));
    expect(existsSync(join(out, 'index.html'))).toBe(true);
  }, 120_000);

  it('refuses a folder that is not empty, a bad name, and leaves the folder as it was', async () => {
    const dir = join(base, 'taken');
    mkdirSync(dir);
    writeFileSync(join(dir, 'notes.txt'), 'mine');
    const taken = await runCli(['plugin', 'init', dir, '--yes'], {});
    expect(taken.code).toBe(2);
    expect(taken.stderr).toMatch(/is not empty/);
    expect(readFileSync(join(dir, 'notes.txt'), 'utf8')).toBe('mine');

    const badName = await runCli(['plugin', 'init', join(base, 'bad'), '--yes', '--name', 'Not A Name'], {});
    expect(badName.code).toBe(2);
    expect(badName.stderr).toMatch(/--name: "Not A Name" is not an npm package name/);
    expect(existsSync(join(base, 'bad'))).toBe(false);

    const noDir = await runCli(['plugin', 'init', '--yes'], {});
    expect(noDir.code).toBe(2);
    expect(noDir.stderr).toMatch(/folder is required/);
  });

  it('build refuses a folder without a manifest and an invalid manifest, naming the problem', async () => {
    const empty = join(base, 'empty');
    mkdirSync(empty);
    const none = await runCli(['plugin', 'build', empty], {});
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/has no app-manifest\.json/);

    const dir = join(base, 'broken');
    expect((await runCli(['plugin', 'init', dir, '--yes'], {})).code).toBe(0);
    writeFileSync(join(dir, 'app-manifest.json'), '{"settings": {"volume": [1]}}');
    const invalid = await runCli(['plugin', 'build', dir], {});
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toContain('$.settings.volume');
    expect(existsSync(join(dir, 'dist'))).toBe(false);

    const unknown = await runCli(['plugin', 'publish', dir], {});
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/unknown plugin command: publish/);
  }, 120_000);
});
