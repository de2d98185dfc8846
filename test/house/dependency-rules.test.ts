import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The rules that keep the house (.dependency-cruiser.cjs; docs/architecture.md). A rule that
// never fires proves nothing, so each is first shown to catch its own breach in a small tree
// made for it, then the real tree is checked to hold none.

const ROOT = resolve(import.meta.dirname, '../..');
const CONFIG = join(ROOT, '.dependency-cruiser.cjs');
const DEPCRUISE = join(ROOT, 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs');

interface Violation {
  from: string;
  to: string;
  rule: { name: string };
}

async function cruise(cwd: string, folders: string[]): Promise<Violation[]> {
  // Exit status 1 when there are violations: the JSON report is on stdout either way.
  const stdout = await new Promise<string>((done, fail) =>
    execFile(
      process.execPath,
      [DEPCRUISE, ...folders, '--config', CONFIG, '--output-type', 'json'],
      { cwd, maxBuffer: 64 * 1024 * 1024 },
      (err, out) => (out ? done(out) : fail(err)),
    ),
  );
  return (JSON.parse(stdout) as { summary: { violations: Violation[] } }).summary.violations;
}

/** Each file of the fixture and what it imports. */
const FIXTURE: Record<string, string[]> = {
  'src/journal/log.ts': ['./journal.js'], // a cycle: log -> journal -> log
  'src/journal/journal.ts': ['./log.js'],
  'src/venue/zones.ts': ['../http/route.js'], // the domain importing a transport
  'src/http/route.ts': [],
  'src/events/bus.ts': ['../venue/zones.js'], // the bus importing a feature
  'src/resources/zone.ts': ['../clock.js'], // a resource importing something of ours
  'src/clock.ts': [],
  'src/http/pipeline.ts': ['../../sync/protocol.js'], // the core importing a wing
  'src/services.ts': ['../sync/protocol.js'], // the composition root may
  'sync/protocol.ts': ['../src/clock.js'], // a wing imports the core freely
};

describe('the dependency rules', () => {
  let fixture: string;

  beforeAll(async () => {
    fixture = await mkdtemp(join(tmpdir(), 'gatehouse-house-'));
    await writeFile(join(fixture, 'tsconfig.json'), JSON.stringify({ compilerOptions: { module: 'NodeNext' } }));
    for (const [file, imports] of Object.entries(FIXTURE)) {
      await mkdir(dirname(join(fixture, file)), { recursive: true });
      const lines = imports.map((path, i) => `import { x as x${i} } from '${path}';\nvoid x${i};\n`);
      await writeFile(join(fixture, file), `${lines.join('')}export const x = 1;\n`);
    }
  });
  afterAll(async () => {
    await rm(fixture, { recursive: true, force: true });
  });

  it('catch a cycle and each forbidden import in a tree made to break them, and nothing else', async () => {
    const found = (await cruise(fixture, ['src', 'sync'])).map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`);
    expect(found.sort()).toEqual(
      [
        'core-below-features: src/events/bus.ts -> src/venue/zones.ts',
        'core-not-wings: src/http/pipeline.ts -> sync/protocol.ts',
        'domain-not-transport: src/venue/zones.ts -> src/http/route.ts',
        'resources-are-leaves: src/resources/zone.ts -> src/clock.ts',
        'no-circular: src/journal/journal.ts -> src/journal/log.ts', // once for the whole cycle
      ].sort(),
    );
  });

  it('find nothing in the appliance itself', async () => {
    const found = await cruise(ROOT, ['src', 'sync', 'firmware-bridge']);
    expect(found.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`)).toEqual([]);
  }, 120_000);
});
