import { execFileSync, spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The Docker image, without a Docker daemon (there is none here): the Dockerfile read as the
// builder reads it. The build stage's COPY lines are copied, and nothing else, into an empty
// directory (the repository's node_modules linked in for `npm ci`), and its build command run
// there: a source file the image does not copy fails the build as it would in `docker build`.
// Then the runtime stage's files, as its COPY --from=build lines name them, with production
// node_modules only, start the appliance as an unprivileged user who may write nothing but the
// data directory.

interface Stage {
  name: string | null;
  copies: { from: string | null; sources: string[]; dest: string }[];
  runs: string[];
  user: string | null;
  env: Record<string, string>;
  cmd: string[];
}

/** The Dockerfile's stages: each COPY, RUN, USER, ENV and CMD (continued lines joined). */
function stagesOf(dockerfile: string): Stage[] {
  const lines = dockerfile
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const stages: Stage[] = [];
  for (const line of lines) {
    const [word, ...rest] = line.split(/\s+/);
    const args = rest.join(' ');
    if (word === 'FROM')
      stages.push({ name: / AS (\S+)/i.exec(args)?.[1] ?? null, copies: [], runs: [], user: null, env: {}, cmd: [] });
    const stage = stages.at(-1)!;
    if (word === 'COPY') {
      const parts = rest.filter((p) => !p.startsWith('--chown'));
      const from = parts[0]?.startsWith('--from=') ? parts.shift()!.slice('--from='.length) : null;
      stage.copies.push({ from, sources: parts.slice(0, -1), dest: parts.at(-1)! });
    }
    if (word === 'RUN') stage.runs.push(args);
    if (word === 'USER') stage.user = args;
    if (word === 'ENV') for (const m of args.matchAll(/(\w+)=(\S+)/g)) stage.env[m[1]!] = m[2]!;
    if (word === 'CMD') stage.cmd = JSON.parse(args) as string[];
  }
  return stages;
}

const IGNORED = readFileSync('.dockerignore', 'utf8')
  .split('\n')
  .map((l) => l.trim())
  .filter((l) => l && !l.startsWith('#'));

/** Copies what one COPY line names from `from` into `into`, leaving out what .dockerignore keeps from the context. */
function copy(from: string, sources: string[], dest: string, into: string, context: boolean): void {
  for (const source of sources) {
    const inDir = dest.endsWith('/') || dest === '.' || sources.length > 1;
    const path = dest.replace(/^(\/app\/|\.\/?)/, '');
    const target = inDir ? join(into, path, source.split('/').at(-1)!) : join(into, path);
    cpSync(join(from, source), target, {
      recursive: true,
      filter: (src) => !context || !IGNORED.some((i) => resolve(src).startsWith(resolve(from, i))),
    });
  }
}

describe('the Docker image, stage by stage', () => {
  const stages = stagesOf(readFileSync('Dockerfile', 'utf8'));
  const build = stages.find((s) => s.name === 'build')!;
  const runtime = stages.at(-1)!;
  const root = mkdtempSync(join(tmpdir(), 'gatehouse-image-'));
  const buildDir = join(root, 'build');
  const runtimeDir = join(root, 'app');
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  beforeAll(() => {
    mkdirSync(buildDir);
    for (const c of build.copies) copy('.', c.sources, c.dest, buildDir, true);
    symlinkSync(resolve('node_modules'), join(buildDir, 'node_modules')); // what `npm ci` makes
  });

  it('builds from exactly what the build stage copies', () => {
    const steps = build.runs.filter((r) => r.includes('npm run build'));
    expect(steps.length).toBe(1);
    const command = steps[0]!
      .split('&&')
      .map((c) => c.trim())
      .find((c) => c.startsWith('npm run build'))!;
    const run = spawnSync('sh', ['-c', command], {
      cwd: buildDir,
      encoding: 'utf8',
      env: { ...process.env, NODE_ENV: 'production' },
    });
    expect(run.status, `${command} in a copy of what the Dockerfile copies:\n${run.stdout}\n${run.stderr}`).toBe(0);
    expect(existsSync(join(buildDir, 'dist/main.js'))).toBe(true);
    expect(existsSync(join(buildDir, 'dist/console/index.html'))).toBe(true);
  }, 240_000);

  it("starts from the runtime stage's files with production node_modules, as an unprivileged user who writes only the data volume", async () => {
    // The runtime stage's COPY --from=build lines, from the built copy; node_modules as `npm prune --omit=dev` leaves it.
    mkdirSync(runtimeDir);
    for (const c of runtime.copies) {
      expect(c.from).toBe('build');
      if (c.sources[0] === '/app/node_modules') continue;
      copy(
        buildDir,
        c.sources.map((s) => s.replace(/^\/app\//, '')),
        c.dest,
        runtimeDir,
        false,
      );
    }
    execFileSync('cp', ['-al', resolve('node_modules'), join(runtimeDir, 'node_modules')]);
    execFileSync('npm', ['prune', '--omit=dev', '--offline', '--no-audit', '--no-fund', '--ignore-scripts'], {
      cwd: runtimeDir,
      stdio: 'ignore',
    });
    expect(existsSync(join(runtimeDir, 'node_modules/vitest'))).toBe(false);
    // Everything read-only to the user but the data volume (RUN mkdir -p /app/data && chown).
    const data = join(runtimeDir, 'data');
    mkdirSync(data);
    chmodSync(root, 0o755);
    chmodSync(runtimeDir, 0o755);
    expect(runtime.user).toBe('node');
    execFileSync('chown', ['nobody', data]);
    const before = readdirSync(runtimeDir).sort();

    const env = {
      PATH: process.env.PATH ?? '',
      ...runtime.env,
      GATEHOUSE_DATA_DIR: data,
      GATEHOUSE_HTTP_PORT: '0',
      GATEHOUSE_MQTT_PORT: '0',
      GATEHOUSE_HTTP_HOST: '127.0.0.1',
      GATEHOUSE_ADMIN_PASSWORD: 'image password',
    };
    const proc = spawn(
      'runuser',
      ['-u', 'nobody', '--', ...runtime.cmd.map((a, i) => (i === 0 ? process.execPath : a))],
      { cwd: runtimeDir, env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    proc.stdout.on('data', (c: Buffer) => (output += c.toString()));
    proc.stderr.on('data', (c: Buffer) => (output += c.toString()));
    try {
      const url = await new Promise<string>((resolveUrl, reject) => {
        const timer = setTimeout(() => reject(new Error(`not ready:\n${output}`)), 60_000);
        const check = () => {
          const m = /Gatehouse ready at (http:\/\/\S+?)"/.exec(output);
          if (m) {
            clearTimeout(timer);
            resolveUrl(m[1]!);
          }
        };
        proc.stdout.on('data', check);
        proc.on('exit', (code) => reject(new Error(`exited ${code}:\n${output}`)));
      });
      expect((await fetch(`${url}/health`)).status).toBe(200);
      const login = await fetch(`${url}/api/v1/auth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'admin@gatehouse.local', password: 'image password', device_name: 'image' }),
      });
      expect(login.status).toBe(201);
      const { token } = (await login.json()) as { token: string };
      const page = await fetch(`${url}/`);
      expect(page.status).toBe(200); // the staff console, built into dist/console
      // USB HID works, or says why not (node-hid needs libudev and hidraw), as the list's meta tells.
      const devices = (await (
        await fetch(`${url}/api/v1/projects/default/default/bridge/devices`, {
          headers: { authorization: `Bearer ${token}` },
        })
      ).json()) as {
        meta: { hid: { available: boolean; reason: string | null } };
      };
      expect(devices.meta.hid.available || /node-hid cannot load/.test(devices.meta.hid.reason ?? '')).toBe(true);
      // Written: the data volume only.
      expect(readdirSync(runtimeDir).sort()).toEqual(before);
      expect(readdirSync(data)).toContain('gatehouse.db');
      expect(statSync(join(data, 'gatehouse.db')).uid).toBe(65534);
    } finally {
      proc.kill('SIGTERM');
      await new Promise((r) => proc.once('exit', r));
    }
    expect(output).not.toMatch(/EACCES|permission denied/i);
  }, 240_000);

  it('installs in the runtime image what node-hid loads at run time', () => {
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { dependencies: Record<string, string> };
    if (!pkg.dependencies['node-hid']) return;
    expect(runtime.runs.some((r) => /apt-get install[^&]*\blibudev1\b/.test(r))).toBe(true);
  });

  it('keeps the data directory out of the image and the build context', () => {
    expect(IGNORED).toEqual(expect.arrayContaining(['node_modules', 'dist', 'data']));
  });
});
