import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findNodeAtLocation, parseTree } from 'jsonc-parser';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CliError } from '../../src/cli/commands.js';
import { createCallApi } from '../../src/plugins/toolkit/call-api.js';
import { parseManifestText } from '../../src/plugins/toolkit/manifest.js';
import { scaffoldFiles } from '../../src/plugins/scaffold/templates.js';
import type { PluginManifest } from '../../src/plugins/toolkit/types.js';
import { runAddDependency } from '../../src/plugins/wizard/index.js';
import { client, startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { runCli } from '../helpers/process.js';
import { accessPointsDependency } from './fixtures.js';

// The wizard against a real appliance's /api/v1/openapi.json and /api/v1/asyncapi.json, writing a
// real app-manifest.json in a temp folder: by flags, and as the built CLI (the prompts:
// wizard-prompts.test.ts).

/** Four-space indent, one-line objects, an unusual key order: what must survive byte for byte. */
const MANIFEST = `{
    "$schema": "./app-manifest.schema.json",
    "settings": {"volume": 3, "kiosk": true},
    "strings": {
        "default": {"welcome": "Welcome"}
    },
    "permissions": ["camera"],
    "dependencies": [
        {
            "identifier": "zones",
            "model": "AccessZone",
            "permissionKey": "access_zones",
            "permissions": [],
            "operations": {"access-zones.index": "get:/v1/projects/{teamSlug}/{projectSlug}/access-zones"},
            "events": {}
        }
    ],
    "triggerState": {"open": false}
}
`;
const EXISTING = MANIFEST.slice(MANIFEST.indexOf('        {'), MANIFEST.indexOf('        }') + '        }'.length);

let gh: TestAppliance;
let dir: string;
const file = () => join(dir, 'app-manifest.json');
const written = () => readFileSync(file(), 'utf8');
const dependencyOf = (text: string, identifier: string) => {
  const parsed = parseManifestText(text);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.manifest.dependencies.find((d) => d.identifier === identifier);
};

/** The text with the `dependencies` value cut out: the rest must not change. */
function outsideEdits(text: string): string {
  const root = parseTree(text)!;
  const cuts = ['dependencies'].map((key) => findNodeAtLocation(root, [key])!).sort((a, b) => b.offset - a.offset);
  return cuts.reduce((out, node) => `${out.slice(0, node.offset)}<cut>${out.slice(node.offset + node.length)}`, text);
}

async function refusal(run: Promise<unknown>): Promise<string> {
  const err = await run.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(CliError);
  return (err as Error).message;
}

/** A closed port: nothing answers there. */
async function deadUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
}

beforeAll(async () => {
  gh = await startAppliance();
});
afterAll(async () => {
  await gh.destroy();
});
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'gatehouse-wizard-'));
  writeFileSync(file(), MANIFEST);
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('plugin wizard, non-interactive (--tag)', () => {
  it("writes the spec's access-point dependency and leaves every other byte of the manifest as it was", async () => {
    const result = await runAddDependency([
      dir,
      '--url',
      gh.url,
      '--tag',
      'Access points',
      '--operations',
      'access-points.index,access-points.show,access-points.store,access-points.update,access-points.destroy',
    ]);

    const text = written();
    expect(dependencyOf(text, 'access_points')).toEqual(accessPointsDependency);
    expect(result).toEqual({ file: file(), dependency: accessPointsDependency, replaced: false, warnings: [] });
    expect(outsideEdits(text)).toBe(outsideEdits(MANIFEST));
    expect(text).toContain(EXISTING); // the dependency that was there, untouched
    // The manifest's permissions are device capabilities (spec: "Manifest top level"): left as they were.
    expect(text).toContain('    "permissions": ["camera"],\n');
    // Inserted in the file's own style: four spaces, keys in the contract's order.
    expect(text).toContain(
      '        },\n        {\n            "identifier": "access_points",\n            "model": "AccessPoint",\n            "permissionKey": "access_points",\n            "permissions": [\n                "view_access_points",',
    );
    expect(readdirSync(dir)).toEqual(['app-manifest.json']); // the temporary file was renamed, none left behind
  });

  it('writes operations callApi calls on the appliance, {teamSlug}/{projectSlug} from the context and {access_point} from the data', async () => {
    await runAddDependency([dir, '--url', gh.url, '--tag', 'access_points', '--operations', 'all']);
    const parsed = parseManifestText(written());
    if (!parsed.ok) throw new Error('invalid');
    const { dependencies } = parsed.manifest;
    const token = await gh.token();
    const callApi = createCallApi(
      () => ({ baseUrl: gh.url, teamSlug: 'default', projectSlug: 'default', token }),
      () => ({ dependencies }),
    );
    const zone = (await client(gh, token).post('/api/v1/projects/default/default/access-zones', { name: 'Hall' })).body
      .data.id as number;

    const created = await callApi<{ id: number; name: string }>('access-points.store', 'access_points', {
      name: 'Door',
      access_zone_id: zone,
      direction: 'both',
    });
    expect(
      (await callApi<{ name: string }>('access-points.show', 'access_points', { access_point: created.id })).name,
    ).toBe('Door');
    await callApi('access-points.update', 'access_points', { access_point: created.id, name: 'Front door' });
    expect((await callApi<{ name: string }[]>('access-points.index', 'access_points')).map((a) => a.name)).toEqual([
      'Front door',
    ]);
    await callApi('access-points.destroy', 'access_points', { access_point: created.id });
    expect(await callApi('access-points.index', 'access_points')).toEqual([]);
  });

  it('takes every operation of the tag and the events of its model when only --tag is given', async () => {
    const { dependency } = await runAddDependency([dir, '--url', gh.url, '--tag', 'Gateways']);
    expect(dependency).toEqual({
      identifier: 'gateways',
      model: 'Gateway',
      permissionKey: 'gateways',
      permissions: ['view_gateways', 'manage_gateways'],
      operations: {
        'gateways.index': 'get:/v1/projects/{teamSlug}/{projectSlug}/gateways',
        'gateways.store': 'post:/v1/projects/{teamSlug}/{projectSlug}/gateways',
        'gateways.show': 'get:/v1/projects/{teamSlug}/{projectSlug}/gateways/{gateway}',
        'gateways.update': 'put:/v1/projects/{teamSlug}/{projectSlug}/gateways/{gateway}',
        'gateways.destroy': 'delete:/v1/projects/{teamSlug}/{projectSlug}/gateways/{gateway}',
        'gateways.rotate-token': 'post:/v1/projects/{teamSlug}/{projectSlug}/gateways/{gateway}/token',
      },
      events: { GatewayOnline: 'GatewayOnline', GatewayOffline: 'GatewayOffline' },
    });
    expect(dependencyOf(written(), 'gateways')).toEqual(dependency);
  });

  it('writes the dependencies `plugin init` and the example kiosk ship as it would write them: the same permissionKey, permissions and names', async () => {
    const scaffold = JSON.parse(
      scaffoldFiles({ name: 'p', checkout: '.', vueVersion: '*', piniaVersion: '*' })['app-manifest.json']!,
    ) as PluginManifest;
    const kiosk = JSON.parse(readFileSync('examples/door-kiosk/app-manifest.json', 'utf8')) as PluginManifest;
    const shipped = [...scaffold.dependencies, ...kiosk.dependencies];
    expect(shipped.map((d) => d.permissionKey)).toEqual(['access_points', 'access_points', 'access_zones']);
    for (const expected of shipped) {
      writeFileSync(file(), '{}');
      const events = Object.keys(expected.events).join(',') || 'none';
      const { dependency } = await runAddDependency([
        dir,
        '--url',
        gh.url,
        '--tag',
        expected.model,
        '--operations',
        Object.keys(expected.operations).join(','),
        '--events',
        events,
        '--identifier',
        expected.identifier,
      ]);
      expect(dependency).toEqual(expected);
    }
    // Their manifests' permissions are device capabilities: none of the dependencies' permissions.
    expect([scaffold.permissions, kiosk.permissions]).toEqual([[], []]);
  });

  it('writes what --operations, --events and --identifier name; a read-only dependency asks only for view_', async () => {
    const { dependency } = await runAddDependency([
      dir,
      '--url',
      gh.url,
      '--tag',
      'Access events',
      '--operations',
      'access-events.index',
      '--events',
      'AccessGranted, AccessDenied',
      '--identifier',
      'door_log',
    ]);
    expect(dependency).toEqual({
      identifier: 'door_log',
      model: 'AccessEvent',
      permissionKey: 'access_events',
      permissions: ['view_access_events'],
      operations: { 'access-events.index': 'get:/v1/projects/{teamSlug}/{projectSlug}/access-events' },
      events: { AccessGranted: 'AccessGranted', AccessDenied: 'AccessDenied' },
    });
    const { dependency: quiet } = await runAddDependency([
      dir,
      '--url',
      gh.url,
      '--tag',
      'Access zones',
      '--operations',
      'access-zones.capacity',
      '--events',
      'none',
      '--identifier',
      'capacity',
    ]);
    expect(quiet.events).toEqual({});
    expect(quiet.operations).toEqual({
      'access-zones.capacity': 'get:/v1/projects/{teamSlug}/{projectSlug}/access-zones/{access_zone}/capacity',
    });
    expect(written()).toContain('"permissions": ["camera"],'); // device capabilities: the dependencies' permissions are theirs
  });

  it('names non-project path parameters readably, never {teamSlug}/{projectSlug} that callApi would fill from the context', async () => {
    const { dependency } = await runAddDependency([
      dir,
      '--url',
      gh.url,
      '--tag',
      'Users',
      '--operations',
      'users.show,users.projects.destroy',
      '--events',
      '',
    ]);
    expect(dependency.operations).toEqual({
      'users.show': 'get:/v1/users/{user}',
      'users.projects.destroy': 'delete:/v1/users/{user}/projects/{team_slug}/{project_slug}',
    });
  });

  it('refuses an identifier already used unless --replace, which replaces that dependency where it stands', async () => {
    const message = await refusal(
      runAddDependency([dir, '--url', gh.url, '--tag', 'Access zones', '--identifier', 'zones']),
    );
    expect(message).toBe(
      'a dependency "zones" is already in app-manifest.json (pass --replace to replace it, or choose another identifier)',
    );
    expect(written()).toBe(MANIFEST);

    await runAddDependency([
      dir,
      '--url',
      gh.url,
      '--tag',
      'Access points',
      '--operations',
      'access-points.index',
      '--events',
      '',
      '--identifier',
      'doors',
    ]);
    const result = await runAddDependency([
      dir,
      '--url',
      gh.url,
      '--tag',
      'Access zones',
      '--operations',
      'access-zones.index,access-zones.show',
      '--identifier',
      'zones',
      '--replace',
    ]);
    expect(result.replaced).toBe(true);
    const parsed = parseManifestText(written());
    if (!parsed.ok) throw new Error('invalid');
    expect(parsed.manifest.dependencies.map((d) => d.identifier)).toEqual(['zones', 'doors']);
    expect(Object.keys(parsed.manifest.dependencies[0]!.operations)).toEqual([
      'access-zones.index',
      'access-zones.show',
    ]);
  });

  it('sends the token as a bearer: --token, else GATEHOUSE_TOKEN', async () => {
    const seen: (string | null)[] = [];
    const spy: typeof fetch = (url, init) => {
      seen.push(new Headers(init?.headers).get('authorization'));
      return fetch(url, init);
    };
    await runAddDependency([dir, '--url', gh.url, '--tag', 'Forms', '--identifier', 'a'], {
      env: { GATEHOUSE_TOKEN: 'from-env' },
      fetch: spy,
    });
    await runAddDependency([dir, '--url', gh.url, '--tag', 'Forms', '--identifier', 'b', '--token', 'from-flag'], {
      env: { GATEHOUSE_TOKEN: 'from-env' },
      fetch: spy,
    });
    await runAddDependency([dir, '--url', gh.url, '--tag', 'Forms', '--identifier', 'c'], { env: {}, fetch: spy });
    expect(seen).toEqual(['Bearer from-env', 'Bearer from-env', 'Bearer from-flag', 'Bearer from-flag', null, null]);
  });
});

describe('plugin wizard, refusals', () => {
  it('refuses a folder without app-manifest.json', async () => {
    rmSync(file());
    expect(await refusal(runAddDependency([dir, '--url', gh.url, '--tag', 'Forms']))).toBe(
      `no app-manifest.json in ${dir} (run gatehouse plugin init there, or name the plugin's folder)`,
    );
  });

  it('refuses an invalid manifest before asking the appliance anything, naming each problem', async () => {
    writeFileSync(file(), '{"Settings": {}, "dependencies": [{"identifier": ""}]}');
    const message = await refusal(runAddDependency([dir, '--url', await deadUrl(), '--tag', 'Forms']));
    expect(message).toContain(`${file()} is not a valid manifest; fix it first:`);
    expect(message).toContain(
      '  $.Settings: unknown key "Settings" (keys are case-sensitive: did you mean "settings"?)',
    );
    expect(message).toContain('  $.dependencies[0].identifier: identifier must not be empty');
  });

  it('refuses an unreachable appliance, naming where it looked', async () => {
    const url = await deadUrl();
    const message = await refusal(runAddDependency([dir, '--url', url, '--tag', 'Forms']));
    expect(message).toMatch(
      new RegExp(`^cannot reach the appliance at ${url}: .*ECONNREFUSED.* \\(is it running\\? pass --url\\)$`),
    );
    expect(written()).toBe(MANIFEST);
  });

  it('refuses what the documents do not have: a tag, an operation of the tag, a socket event', async () => {
    expect(await refusal(runAddDependency([dir, '--url', gh.url, '--tag', 'Doors']))).toMatch(
      /^unknown tag "Doors" \(tags: Operations, Authentication, .*Access points, /,
    );
    expect(
      await refusal(
        runAddDependency([dir, '--url', gh.url, '--tag', 'Access points', '--operations', 'access-zones.index']),
      ),
    ).toBe(
      'unknown operation "access-zones.index" in tag "Access points" (its operations: access-points.index, access-points.store, access-points.show, access-points.update, access-points.destroy, access-points.scan)',
    );
    expect(
      await refusal(runAddDependency([dir, '--url', gh.url, '--tag', 'Access points', '--events', 'AccessPointMoved'])),
    ).toMatch(/^unknown event "AccessPointMoved" \(socket events: AccessGranted, AccessDenied, AccessPointUpdated, /);
    expect(
      await refusal(
        runAddDependency([dir, '--url', gh.url, '--tag', 'Access events', '--operations', '', '--events', 'none']),
      ),
    ).toBe('nothing to add: no operation and no event chosen for "Access events"');
    expect(written()).toBe(MANIFEST);
  });

  it('refuses the choice flags without --tag, and prompts without a terminal', async () => {
    expect(await refusal(runAddDependency([dir, '--operations', 'all']))).toBe(
      '--operations, --events and --identifier go with --tag (without --tag the wizard asks)',
    );
    expect(await refusal(runAddDependency([dir, '--url', gh.url]))).toBe(
      'no terminal to ask in: pass --tag (with --operations, --events, --identifier) to run without prompts',
    );
  });
});

describe('gatehouse plugin add-dependency (the built CLI)', () => {
  it('writes the dependency and prints the summary as JSON; a refusal is one line and exit code 2', async () => {
    const ok = await runCli(
      ['plugin', 'add-dependency', dir, '--url', gh.url, '--tag', 'Access points', '--identifier', 'doors'],
      {},
    );
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);
    const summary = JSON.parse(ok.stdout);
    expect(summary).toMatchObject({
      file: file(),
      replaced: false,
      dependency: { identifier: 'doors', model: 'AccessPoint' },
    });
    expect(dependencyOf(written(), 'doors')).toEqual(summary.dependency);

    const again = await runCli(
      ['plugin', 'add-dependency', dir, '--url', gh.url, '--tag', 'Access points', '--identifier', 'doors'],
      {},
    );
    expect(again.code).toBe(2);
    expect(again.stderr).toBe(
      'gatehouse: a dependency "doors" is already in app-manifest.json (pass --replace to replace it, or choose another identifier)\n',
    );
  });
});
