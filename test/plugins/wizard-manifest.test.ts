import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CliError } from '../../src/cli/commands.js';
import { parseManifestText } from '../../src/plugins/toolkit/manifest.js';
import type { PluginDependency } from '../../src/plugins/toolkit/types.js';
import { withDependency, writeDependency } from '../../src/plugins/wizard/write-manifest.js';
import { accessPointsDependency } from './fixtures.js';

// How the wizard edits app-manifest.json: only the dependencies array, in the file's own indent and
// line ends; the rest byte for byte. The top-level `permissions` are the device capabilities the
// plugin needs (spec: "Manifest top level"), never a copy of a dependency's.

const small: PluginDependency = {
  identifier: 'zones',
  model: 'AccessZone',
  permissionKey: 'access_zones',
  permissions: ['view_access_zones'],
  operations: {},
  events: {},
};

function edit(text: string, dependency: PluginDependency, replace = false) {
  const parsed = parseManifestText(text);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  const edited = withDependency(text, parsed.manifest, dependency, replace);
  expect(parseManifestText(edited.text).ok).toBe(true);
  return edited;
}

describe('withDependency', () => {
  it('writes in tabs and CRLF when the file has them, and keeps a byte-order mark', () => {
    const text =
      '\uFEFF{\r\n\t"settings": {\r\n\t\t"volume": 3\r\n\t},\r\n\t"permissions": [\r\n\t\t"camera"\r\n\t]\r\n}\r\n';
    const { text: out } = edit(text, small);
    expect(out).toBe(
      '\uFEFF{\r\n\t"settings": {\r\n\t\t"volume": 3\r\n\t},\r\n\t"permissions": [\r\n\t\t"camera"\r\n\t],\r\n\t"dependencies": [\r\n\t\t{\r\n\t\t\t"identifier": "zones",\r\n\t\t\t"model": "AccessZone",\r\n\t\t\t"permissionKey": "access_zones",\r\n\t\t\t"permissions": [\r\n\t\t\t\t"view_access_zones"\r\n\t\t\t],\r\n\t\t\t"operations": {},\r\n\t\t\t"events": {}\r\n\t\t}\r\n\t]\r\n}\r\n',
    );
  });

  it('adds the dependencies key to a manifest that has none, and no permissions key', () => {
    const edited = edit('{}', small);
    expect(JSON.parse(edited.text)).toEqual({ dependencies: [small] });
    expect(edited).toMatchObject({ replaced: false, warnings: [] });
  });

  it("leaves the manifest's permissions as they are, and warns when they repeat the dependency's", () => {
    const seed = '{\n  "permissions": ["camera"],\n  "dependencies": []\n}\n';
    const clean = edit(seed, accessPointsDependency);
    expect(clean.text.split('\n')[1]).toBe('  "permissions": ["camera"],');
    expect(clean.warnings).toEqual([]);
    const repeated = '{\n  "permissions": ["view_access_points", "camera"],\n  "dependencies": []\n}\n';
    const edited = edit(repeated, accessPointsDependency);
    expect(edited.text.split('\n')[1]).toBe('  "permissions": ["view_access_points", "camera"],');
    expect(edited.warnings).toEqual([
      'app-manifest.json\'s "permissions" lists "view_access_points" of the dependency "access_points": that list is the device capabilities the plugin needs (camera, bluetooth, notifications); what the token may do is the appliance\'s to answer (401 / 403), so it is not needed there',
    ]);
  });

  it('replaces a dependency where it stands and leaves its neighbours as they were written', () => {
    const text =
      '{\n  "dependencies": [\n    {"identifier": "zones", "model": "Old", "permissionKey": "old"},\n    {"identifier": "doors", "model": "AccessPoint", "permissionKey": "x"}\n  ],\n  "permissions": ["camera"]\n}\n';
    const edited = edit(text, small, true);
    expect(edited.replaced).toBe(true);
    expect(edited.text).toContain(
      '\n    {"identifier": "doors", "model": "AccessPoint", "permissionKey": "x"}\n  ],\n  "permissions": ["camera"]\n}\n',
    );
    expect(JSON.parse(edited.text).dependencies[0]).toEqual(small);
  });

  it('appends after a one-line neighbour without spreading it over lines, and to a one-line array on its line', () => {
    const doors = '{"identifier": "doors", "model": "AccessPoint", "permissionKey": "x"}';
    const text = `{\n  "settings": {"volume": 3},\n  "dependencies": [\n    ${doors}\n  ]\n}\n`;
    expect(edit(text, small).text).toBe(
      `{\n  "settings": {"volume": 3},\n  "dependencies": [\n    ${doors},\n    ${JSON.stringify(small, null, 2).replace(/\n/g, '\n    ')}\n  ]\n}\n`,
    );
    expect(edit(`{"dependencies": [${doors}]}`, small).text).toBe(
      `{"dependencies": [${doors}, {"identifier": "zones", "model": "AccessZone", "permissionKey": "access_zones", "permissions": ["view_access_zones"], "operations": {}, "events": {}}]}`,
    );
  });

  it('refuses a used identifier without replace', () => {
    const text = '{"dependencies": [{"identifier": "zones", "model": "Old", "permissionKey": "old"}]}';
    expect(() => edit(text, small)).toThrow(CliError);
  });
});

describe('writeDependency', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-wizard-manifest-'));
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('reads the manifest again at write time, so an edit made while the prompts waited is kept', async () => {
    const file = join(dir, 'app-manifest.json');
    writeFileSync(file, '{\n  "settings": {"volume": 3}\n}\n');
    chmodSync(file, 0o640);
    writeFileSync(file, '{\n  "settings": {"volume": 4}\n}\n'); // someone saved meanwhile
    const result = await writeDependency(dir, small, false);
    expect(result).toEqual({ file, replaced: false, warnings: [] });
    expect(readFileSync(file, 'utf8')).toMatch(/^\{\n {2}"settings": \{"volume": 4\},\n {2}"dependencies": \[\n/);
    expect(statSync(file).mode & 0o777).toBe(0o640); // the new file has the manifest's mode
    expect(readdirSync(dir)).toEqual(['app-manifest.json']);
  });
});
