import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkbox, input, select } from '@inquirer/prompts';
import { render } from '@inquirer/testing';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CliError } from '../../src/cli/commands.js';
import { runAddDependency, type WizardPrompts } from '../../src/plugins/wizard/index.js';
import { startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { accessPointsDependency } from './fixtures.js';

// The wizard's prompts, rendered by @inquirer/testing and answered key by key, against a real
// appliance's documents, writing a real app-manifest.json in a temp folder.

const MANIFEST =
  '{\n  "dependencies": [\n    {"identifier": "zones", "model": "AccessZone", "permissionKey": "access_zones"}\n  ]\n}\n';

let gh: TestAppliance;
let dir: string;
const file = () => join(dir, 'app-manifest.json');
const written = () => readFileSync(file(), 'utf8');

async function refusal(run: Promise<unknown>): Promise<string> {
  const err = await run.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(CliError);
  return (err as Error).message;
}

beforeAll(async () => {
  gh = await startAppliance();
});
afterAll(async () => {
  await gh.destroy();
});
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'gatehouse-wizard-prompts-'));
  writeFileSync(file(), MANIFEST);
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

type Rendered = Awaited<ReturnType<typeof render>>;

/** Prompts rendered by @inquirer/testing; `next` hands the test each prompt as it opens (or the run's failure). */
function scriptedPrompts() {
  const opened: Rendered[] = [];
  const waiting: ((prompt: Rendered) => void)[] = [];
  const open = async (prompt: any, config: any) => {
    const rendered = await render(prompt, config);
    const waiter = waiting.shift();
    if (waiter) waiter(rendered);
    else opened.push(rendered);
    return rendered.answer as Promise<any>;
  };
  const prompts: WizardPrompts = {
    select: (config) => open(select, config),
    checkbox: (config) => open(checkbox, config),
    input: (config) => open(input, config),
  };
  const next = (run: Promise<unknown>): Promise<Rendered> => {
    const prompt = opened.shift();
    if (prompt) return Promise.resolve(prompt);
    const ended = run.then(() => {
      throw new Error('the wizard ended without this prompt');
    });
    return Promise.race([new Promise<Rendered>((resolve) => waiting.push(resolve)), ended]);
  };
  return { prompts, next };
}

describe('plugin wizard, interactive', () => {
  it('asks for a tag (with its model), its endpoints, the events (the model’s picked) and an identifier, and writes that', async () => {
    writeFileSync(file(), '{\n  "dependencies": []\n}\n');
    const { prompts, next } = scriptedPrompts();
    const run = runAddDependency([dir, '--url', gh.url], { prompts });

    const tag = await next(run);
    expect(tag.getScreen()).toContain('Which part of the API? (tag → model)');
    tag.events.type('Access points');
    expect(tag.getScreen()).toContain('❯ Access points → AccessPoint');
    tag.events.keypress('enter');

    const endpoints = await next(run);
    const screen = endpoints.getScreen();
    expect(screen).toContain('Endpoints of Access points the plugin calls');
    expect(screen).toContain('access-points.index    GET    /v1/projects/{teamSlug}/{projectSlug}/access-points');
    expect(screen).toContain(
      'access-points.show     GET    /v1/projects/{teamSlug}/{projectSlug}/access-points/{access_point}',
    );
    endpoints.events.keypress('space'); // index
    endpoints.events.keypress('down');
    endpoints.events.keypress('down');
    endpoints.events.keypress('space'); // show
    endpoints.events.keypress('enter');

    const events = await next(run);
    expect(events.getScreen()).toContain("Socket events the plugin listens to (AccessPoint's are picked)");
    expect(events.getScreen()).toMatch(/◉ AccessPointUpdated/);
    expect(events.getScreen()).toMatch(/◯ AccessGranted/);
    events.events.keypress('enter');

    const identifier = await next(run);
    expect(identifier.getScreen()).toContain('Identifier (what the plugin passes to callApi) (access_points)');
    identifier.events.keypress('enter');

    const result = await run;
    expect(result.dependency).toEqual({
      ...accessPointsDependency,
      permissions: ['view_access_points'],
      operations: {
        'access-points.index': accessPointsDependency.operations['access-points.index'],
        'access-points.show': accessPointsDependency.operations['access-points.show'],
      },
    });
    expect(written()).toBe(
      `{\n  "dependencies": [\n    ${JSON.stringify(result.dependency, null, 2).replace(/\n/g, '\n    ')}\n  ]\n}\n`,
    );
  });

  it('will not take an identifier already used, and offers a free one', async () => {
    const { prompts, next } = scriptedPrompts();
    const run = runAddDependency([dir, '--url', gh.url], { prompts });
    const tag = await next(run);
    tag.events.type('Access zones');
    tag.events.keypress('enter');
    const endpoints = await next(run);
    endpoints.events.keypress('a'); // all
    endpoints.events.keypress('enter');
    (await next(run)).events.keypress('enter');

    const identifier = await next(run);
    expect(identifier.getScreen()).toContain('(access_zones)'); // not used yet: the permission key
    identifier.events.type('zones');
    identifier.events.keypress('enter');
    await identifier.nextRender();
    expect(identifier.getScreen()).toContain(
      'a dependency "zones" is already in app-manifest.json (pass --replace to replace it, or choose another identifier)',
    );
    for (let i = 0; i < 'zones'.length; i++) identifier.events.keypress('backspace');
    identifier.events.type('hall_zones');
    identifier.events.keypress('enter');

    const result = await run;
    expect(result.dependency.identifier).toBe('hall_zones');
    expect(Object.keys(result.dependency.operations)).toHaveLength(6);
    expect(written()).toContain(
      '    {"identifier": "zones", "model": "AccessZone", "permissionKey": "access_zones"},\n',
    );
  });

  it('offers a numbered identifier when the permission key is taken, and replaces instead with --replace', async () => {
    writeFileSync(file(), '{"dependencies": [{"identifier": "forms", "model": "Form", "permissionKey": "forms"}]}');
    const answer = async (args: string[]) => {
      const { prompts, next } = scriptedPrompts();
      const run = runAddDependency([dir, '--url', gh.url, ...args], { prompts });
      const tag = await next(run);
      tag.events.type('Forms');
      tag.events.keypress('enter');
      const endpoints = await next(run);
      endpoints.events.keypress('space');
      endpoints.events.keypress('enter');
      (await next(run)).events.keypress('enter');
      const identifier = await next(run);
      const screen = identifier.getScreen();
      identifier.events.keypress('enter');
      return { screen, result: await run };
    };
    const numbered = await answer([]);
    expect(numbered.screen).toContain('(forms_2)');
    expect(numbered.result).toMatchObject({ replaced: false, dependency: { identifier: 'forms_2' } });
    const replaced = await answer(['--replace']);
    expect(replaced.screen).toContain('(forms)');
    expect(replaced.result).toMatchObject({
      replaced: true,
      dependency: {
        identifier: 'forms',
        operations: { 'forms.index': 'get:/v1/projects/{teamSlug}/{projectSlug}/forms' },
      },
    });
  });

  it('asks for at least one endpoint or event', async () => {
    const { prompts, next } = scriptedPrompts();
    const run = runAddDependency([dir, '--url', gh.url], { prompts });
    const tag = await next(run);
    tag.events.type('Forms');
    tag.events.keypress('enter');
    (await next(run)).events.keypress('enter'); // no endpoint
    const events = await next(run);
    events.events.keypress('enter'); // no event either (Form has none)
    await events.nextRender();
    expect(events.getScreen()).toContain('Pick at least one endpoint or event');
    events.events.keypress('space');
    events.events.keypress('enter');
    (await next(run)).events.keypress('enter');
    expect((await run).dependency).toMatchObject({
      identifier: 'forms',
      operations: {},
      events: { AccessGranted: 'AccessGranted' },
      permissions: ['view_forms'],
    });
  });

  it('leaves the manifest as it was when the user quits (Ctrl+C)', async () => {
    const { prompts, next } = scriptedPrompts();
    const run = runAddDependency([dir, '--url', gh.url], { prompts });
    (await next(run)).events.keypress({ name: 'c', ctrl: true });
    expect(await refusal(run)).toBe('cancelled; app-manifest.json unchanged');
    expect(written()).toBe(MANIFEST);
  });
});
