import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { accessPointsDependency } from './fixtures.js';
import {
  MANIFEST_SCHEMA_ID,
  manifestJsonSchema,
  parseManifest,
  parseManifestText,
} from '../../src/plugins/toolkit/manifest.js';

const SCHEMA_FILE = fileURLToPath(new URL('../../src/plugins/toolkit/app-manifest.schema.json', import.meta.url));
const BIOME = fileURLToPath(new URL('../../node_modules/@biomejs/biome/bin/biome', import.meta.url));
const OPERATION_MESSAGE =
  'operation must be "<method>:<path>" with a lower-case method, e.g. "get:/v1/projects/{teamSlug}/{projectSlug}/access-points"';

const accessPoints = accessPointsDependency;

const example = {
  $schema: './node_modules/gatehouse/src/plugins/toolkit/app-manifest.schema.json',
  settings: { primaryColor: '#0a7c5a', volume: 80, showLogo: true },
  strings: { default: { welcome: 'Welcome', scanPrompt: 'Scan your ticket' }, fr: { welcome: 'Bienvenue' } },
  assets: { logo: '/dashboard-assets/images/logo.png', intro: 'https://cdn.example.com/intro.mp4' },
  triggerState: { doorOpen: false, queueLength: 0, mode: 'idle', lastScan: null },
  dependencies: [accessPoints],
  permissions: ['camera', 'bluetooth', 'notifications'],
};

const errorsOf = (input: unknown) => {
  const result = parseManifest(input);
  if (result.ok) throw new Error('expected the manifest to be rejected');
  return result.errors;
};

describe('plugin manifest', () => {
  it("accepts the spec's access-point dependency example as it is", () => {
    const result = parseManifestText(JSON.stringify(example, null, 2));
    expect(result).toEqual({ ok: true, manifest: example });
  });

  it('fills every missing section with an empty default', () => {
    expect(parseManifest({})).toEqual({
      ok: true,
      manifest: {
        settings: {},
        strings: { default: {} },
        assets: {},
        triggerState: {},
        dependencies: [],
        permissions: [],
      },
    });
    const result = parseManifest({
      strings: { fr: { welcome: 'Bienvenue' } },
      dependencies: [{ identifier: 'doors', model: 'Door', permissionKey: 'doors' }],
    });
    expect(result.ok && result.manifest.strings).toEqual({ default: {}, fr: { welcome: 'Bienvenue' } });
    expect(result.ok && result.manifest.dependencies).toEqual([
      { identifier: 'doors', model: 'Door', permissionKey: 'doors', permissions: [], operations: {}, events: {} },
    ]);
  });

  it('gives each section its own default object, not one shared between results', () => {
    const first = parseManifest({});
    const second = parseManifest({});
    expect(first.ok && second.ok && first.manifest.settings !== second.manifest.settings).toBe(true);
  });

  it('allows $schema and requires it to be a string', () => {
    expect(parseManifest({ $schema: './app-manifest.schema.json' })).toMatchObject({
      ok: true,
      manifest: { $schema: './app-manifest.schema.json' },
    });
    expect(errorsOf({ $schema: 1 })).toEqual([{ path: '$.$schema', message: 'expected a string, got a number' }]);
  });

  it('rejects a manifest that is not an object', () => {
    expect(errorsOf([])).toEqual([{ path: '$', message: 'expected an object, got an array' }]);
    expect(errorsOf(null)).toEqual([{ path: '$', message: 'expected an object, got null' }]);
  });

  it('rejects a setting that is an object, naming the setting', () => {
    expect(errorsOf({ settings: { volume: { level: 3 } } })).toEqual([
      { path: '$.settings.volume', message: 'expected a string, number or boolean, got an object' },
    ]);
  });

  it('rejects numbers that are not finite', () => {
    expect(errorsOf({ settings: { volume: Number.POSITIVE_INFINITY }, triggerState: { count: Number.NaN } })).toEqual([
      { path: '$.settings.volume', message: 'expected a string, number or boolean, got Infinity' },
      { path: '$.triggerState.count', message: 'expected a boolean, number, string or null, got NaN' },
    ]);
  });

  it('rejects a trigger state that is an array', () => {
    expect(errorsOf({ triggerState: { doorOpen: [true] } })).toEqual([
      { path: '$.triggerState.doorOpen', message: 'expected a boolean, number, string or null, got an array' },
    ]);
  });

  it('rejects strings.default that is not an object, and non-text in other string tables', () => {
    expect(errorsOf({ strings: { default: 'Welcome' } })).toEqual([
      { path: '$.strings.default', message: 'expected an object, got a string' },
    ]);
    expect(errorsOf({ strings: { 'fr-CA': { welcome: 1 } } })).toEqual([
      { path: '$.strings["fr-CA"].welcome', message: 'expected a string, got a number' },
    ]);
  });

  it('rejects an asset that is not a string', () => {
    expect(errorsOf({ assets: { logo: { url: '/logo.png' } } })).toEqual([
      { path: '$.assets.logo', message: 'expected a string, got an object' },
    ]);
  });

  it('rejects an operation with an upper-case method or without a colon, quoting the operation id in the path', () => {
    const operations = {
      'access-points.show': 'GET:/v1/projects/{teamSlug}/{projectSlug}/access-points/{access_point}',
      'access-points.index': 'get/v1/access-points',
      ok: 'get:/v1',
    };
    expect(errorsOf({ dependencies: [{ ...accessPoints, operations }] })).toEqual([
      { path: '$.dependencies[0].operations["access-points.show"]', message: OPERATION_MESSAGE },
      { path: '$.dependencies[0].operations["access-points.index"]', message: OPERATION_MESSAGE },
    ]);
  });

  it('rejects an operation whose path does not begin with / or whose method is unknown', () => {
    const operations = { relative: 'get:v1/access-points', head: 'head:/v1', spaced: 'get:/v1/access points' };
    expect(errorsOf({ dependencies: [{ ...accessPoints, operations }] }).map((error) => error.path)).toEqual([
      '$.dependencies[0].operations.relative',
      '$.dependencies[0].operations.head',
      '$.dependencies[0].operations.spaced',
    ]);
  });

  it('rejects a top-level key in the wrong case, suggesting the key it probably meant', () => {
    expect(errorsOf({ Settings: { volume: 3 }, triggerstate: {}, extra: 1 })).toEqual([
      { path: '$.Settings', message: 'unknown key "Settings" (keys are case-sensitive: did you mean "settings"?)' },
      {
        path: '$.triggerstate',
        message: 'unknown key "triggerstate" (keys are case-sensitive: did you mean "triggerState"?)',
      },
      {
        path: '$.extra',
        message:
          'unknown key "extra" (known keys: $schema, settings, strings, assets, triggerState, dependencies, permissions)',
      },
    ]);
  });

  it('rejects an unknown dependency key, suggesting the dependency key it probably meant', () => {
    expect(errorsOf({ dependencies: [{ ...accessPoints, permission_key: 'x' }] })).toEqual([
      {
        path: '$.dependencies[0].permission_key',
        message: 'unknown key "permission_key" (keys are case-sensitive: did you mean "permissionKey"?)',
      },
    ]);
  });

  it('rejects duplicate dependency identifiers, naming both indexes', () => {
    expect(errorsOf({ dependencies: [accessPoints, { ...accessPoints, model: 'Door' }] })).toEqual([
      {
        path: '$.dependencies[1].identifier',
        message: 'duplicate identifier "access_points": dependencies[0] and dependencies[1] both use it',
      },
    ]);
  });

  it('reports duplicate identifiers alongside the other problems of the same file', () => {
    const errors = errorsOf({
      settings: { volume: {} },
      dependencies: [accessPoints, { identifier: 'access_points', model: 'Door' }],
    });
    expect(errors).toContainEqual({
      path: '$.settings.volume',
      message: 'expected a string, number or boolean, got an object',
    });
    expect(errors).toContainEqual({ path: '$.dependencies[1].permissionKey', message: 'required: expected a string' });
    expect(errors).toContainEqual({
      path: '$.dependencies[1].identifier',
      message: 'duplicate identifier "access_points": dependencies[0] and dependencies[1] both use it',
    });
  });

  it('rejects an empty identifier and a dependency that is not an object', () => {
    expect(errorsOf({ dependencies: [{ ...accessPoints, identifier: '' }, 'access_points'] })).toEqual([
      { path: '$.dependencies[0].identifier', message: 'identifier must not be empty' },
      { path: '$.dependencies[1]', message: 'expected an object, got a string' },
    ]);
  });

  it('reports invalid JSON with its line and column', () => {
    const text = '{\n  "settings": {\n    "volume": 3,\n  }\n}\n';
    expect(parseManifestText(text)).toEqual({
      ok: false,
      errors: [
        { path: '$', message: 'invalid JSON at line 4, column 3: expected a double-quoted property name, got "}"' },
      ],
    });
    expect(parseManifestText('{"settings": {"volume": }}')).toEqual({
      ok: false,
      errors: [
        {
          path: '$',
          message:
            'invalid JSON at line 1, column 25: expected a value (object, array, string, number, true, false or null), got "}"',
        },
      ],
    });
    expect(parseManifestText('{"permissions": ["camera"]')).toEqual({
      ok: false,
      errors: [
        { path: '$', message: "invalid JSON at line 1, column 27: expected ',' or '}', got the end of the text" },
      ],
    });
    expect(parseManifestText('{} {}')).toEqual({
      ok: false,
      errors: [
        {
          path: '$',
          message: 'invalid JSON at line 1, column 4: expected the end of the text after the JSON value, got "{"',
        },
      ],
    });
  });

  it('reads text with a byte-order mark and validates it like an object', () => {
    expect(parseManifestText('\uFEFF{"permissions": ["camera"]}')).toMatchObject({
      ok: true,
      manifest: { permissions: ['camera'] },
    });
    expect(parseManifestText('{"Settings": {}}')).toEqual({
      ok: false,
      errors: [
        { path: '$.Settings', message: 'unknown key "Settings" (keys are case-sensitive: did you mean "settings"?)' },
      ],
    });
  });
});

describe('app-manifest JSON Schema', () => {
  const schema = manifestJsonSchema();

  it('is the checked-in app-manifest.schema.json', () => {
    if (process.env.UPDATE_SCHEMA) {
      writeFileSync(SCHEMA_FILE, `${JSON.stringify(schema, null, 2)}\n`);
      execFileSync(process.execPath, [BIOME, 'format', '--write', SCHEMA_FILE]); // biome keeps short arrays on one line
    }
    const checkedIn: unknown = JSON.parse(readFileSync(SCHEMA_FILE, 'utf8'));
    expect(
      checkedIn,
      'app-manifest.schema.json is stale: run UPDATE_SCHEMA=1 npx vitest run test/plugins/manifest.test.ts',
    ).toEqual(schema);
  });

  it('is draft 2020-12 with an id, a title, closed top level and help on each key', () => {
    expect(schema).toMatchObject({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      $id: MANIFEST_SCHEMA_ID,
      title: expect.any(String),
      type: 'object',
      additionalProperties: false,
    });
    const properties = schema.properties as Record<string, { description?: string }>;
    expect(Object.keys(properties)).toEqual([
      '$schema',
      'settings',
      'strings',
      'assets',
      'triggerState',
      'dependencies',
      'permissions',
    ]);
    for (const [key, property] of Object.entries(properties)) expect(property.description, key).toMatch(/\w/);
    expect(schema).not.toHaveProperty('required');
  });

  const ajv = new Ajv2020({ allErrors: true, allowUnionTypes: true });
  const validate = ajv.compile(schema);

  it('validates the example manifest and an empty one', () => {
    expect(validate(example), ajv.errorsText(validate.errors)).toBe(true);
    expect(validate({}), ajv.errorsText(validate.errors)).toBe(true);
  });

  it('rejects what parseManifest rejects: wrong case, bad operations, object settings, array states', () => {
    const bad = (manifest: unknown) =>
      validate(manifest) ? [] : (validate.errors ?? []).map((error) => `${error.instancePath} ${error.keyword}`);
    expect(bad({ Settings: {} })).toEqual([' additionalProperties']);
    expect(bad({ dependencies: [{ ...accessPoints, operations: { 'access-points.index': 'GET:/v1' } }] })).toEqual([
      '/dependencies/0/operations/access-points.index pattern',
    ]);
    expect(bad({ settings: { volume: {} }, triggerState: { doorOpen: [] } })).toEqual([
      '/settings/volume type',
      '/triggerState/doorOpen type',
    ]);
    expect(bad({ dependencies: [{ identifier: 'doors' }] })).toEqual([
      '/dependencies/0 required',
      '/dependencies/0 required',
    ]);
  });
});
