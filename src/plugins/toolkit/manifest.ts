// Validates app-manifest.json (docs/plugins.md; contract: "Manifest top level", "Dependency object")
// into a full PluginManifest, with errors that name the JSON path and the problem. The same schema
// generates the JSON Schema editors use through `$schema`. Bundled into plugins: zod and types only.
import { z } from 'zod';
import type { PluginManifest } from './types.js';
import { invalidJson } from './json-syntax.js';

export interface ManifestError {
  /** JSONPath-like: `$`, `$.settings.volume`, `$.dependencies[0].operations["access-points.show"]`. */
  path: string;
  message: string;
}

export type ManifestResult = { ok: true; manifest: PluginManifest } | { ok: false; errors: ManifestError[] };

export const MANIFEST_SCHEMA_ID = 'urn:gatehouse:plugin:app-manifest';

// spec: "Dependency object", operations: `<method>:<path>`, method lower case, path from the API version root.
const OPERATION = /^(get|post|put|patch|delete):\/\S*$/;
const OPERATION_MESSAGE =
  'operation must be "<method>:<path>" with a lower-case method, e.g. "get:/v1/projects/{teamSlug}/{projectSlug}/access-points"';

const textMap = () => z.record(z.string(), z.string());

const dependencyShape = {
  identifier: z
    .string()
    .min(1, { error: 'identifier must not be empty' })
    .describe('Unique name of the dependency, passed to callApi(operationId, identifier, data).'),
  model: z.string().describe('Resource name in the API, e.g. "AccessPoint".'),
  permissionKey: z.string().describe('Key for access control.'),
  permissions: z
    .array(z.string())
    .default(() => [])
    .describe('Permissions required to use the dependency, e.g. "view_access_points", "manage_access_points".'),
  operations: z
    .record(z.string(), z.string().regex(OPERATION, { error: OPERATION_MESSAGE }))
    .default(() => ({}))
    .describe(
      'Operation id (e.g. "access-points.show") to "<method>:<path>", e.g. "get:/v1/projects/{teamSlug}/{projectSlug}/access-points/{access_point}".',
    ),
  events: textMap()
    .default(() => ({}))
    .describe('Socket event name to socket event name, e.g. "AccessPointUpdated".'),
};

const dependencySchema = z
  .strictObject(dependencyShape)
  .describe('A service API resource the plugin calls with callApi and whose socket events it hears.');

/** Identifiers are how callApi finds a dependency, so a second use is an error naming both places.
 * Runs even when some dependency is invalid (see `when` below), so it sees raw elements. */
function uniqueIdentifiers(dependencies: readonly unknown[], ctx: z.RefinementCtx): void {
  const first = new Map<string, number>();
  dependencies.forEach((dependency, index) => {
    const identifier =
      typeof dependency === 'object' && dependency !== null && 'identifier' in dependency
        ? dependency.identifier
        : undefined;
    if (typeof identifier !== 'string' || identifier === '') return;
    const earlier = first.get(identifier);
    if (earlier === undefined) first.set(identifier, index);
    else
      ctx.addIssue({
        code: 'custom',
        path: [index, 'identifier'],
        message: `duplicate identifier "${identifier}": dependencies[${earlier}] and dependencies[${index}] both use it`,
      });
  });
}

const manifestShape = {
  $schema: z.string().optional().describe('The JSON Schema this file follows, for editor completion and checks.'),
  settings: z
    .record(z.string(), z.union([z.string(), z.number(), z.boolean()]))
    .default(() => ({}))
    .describe(
      'Setting name to value (string, number or boolean), configurable per deployment; the store section pluginVars.',
    ),
  strings: z
    .object({
      default: textMap()
        .default(() => ({}))
        .describe('String key to text; the store section stringsList.'),
    })
    .catchall(textMap().describe('More string key to text tables, e.g. per language.'))
    .default(() => ({ default: {} }))
    .describe('Texts shown by svc-string elements.'),
  assets: textMap()
    .default(() => ({}))
    .describe('Asset key to URL or path (images, video, animation); the store section assetList.'),
  triggerState: z
    .record(z.string(), z.union([z.boolean(), z.number(), z.string(), z.null()]))
    .default(() => ({}))
    .describe(
      'State key to runtime value (boolean, number, string or null) that may change while running; the store section triggerState.',
    ),
  dependencies: z
    .array(dependencySchema)
    .superRefine(uniqueIdentifiers, { when: (payload) => Array.isArray(payload.value) })
    .default(() => [])
    .describe('Service API resources the plugin uses, each with a unique identifier.'),
  permissions: z
    .array(z.string())
    .default(() => [])
    .describe('Capabilities the plugin needs, e.g. "camera", "bluetooth", "notifications".'),
};

export const manifestSchema = z
  .strictObject(manifestShape)
  .describe('A Gatehouse plugin manifest (app-manifest.json). Keys are case-sensitive.');

export function parseManifest(input: unknown): ManifestResult {
  const result = manifestSchema.safeParse(input, { reportInput: true });
  if (result.success) return { ok: true, manifest: result.data };
  return { ok: false, errors: result.error.issues.flatMap(toErrors) };
}

export function parseManifestText(text: string): ManifestResult {
  const source = text.replace(/^\uFEFF/, ''); // editors on Windows may save a byte-order mark
  let input: unknown;
  try {
    input = JSON.parse(source);
  } catch (err) {
    return { ok: false, errors: [{ path: '$', message: invalidJson(source, err) }] };
  }
  return parseManifest(input);
}

/** draft 2020-12, for the `$schema` of app-manifest.json. Inputs, so sections with defaults are optional. */
export function manifestJsonSchema(): Record<string, unknown> {
  const { $schema, ...rest } = z.toJSONSchema(manifestSchema, { target: 'draft-2020-12', io: 'input' });
  return { $schema, $id: MANIFEST_SCHEMA_ID, title: 'Gatehouse plugin manifest (app-manifest.json)', ...rest };
}

function toErrors(issue: z.core.$ZodIssue): ManifestError[] {
  if (issue.code === 'unrecognized_keys') {
    // The only strict objects are the top level and a dependency.
    const known = Object.keys(issue.path.length === 0 ? manifestShape : dependencyShape);
    return issue.keys.map((key) => ({ path: jsonPath([...issue.path, key]), message: unknownKey(key, known) }));
  }
  return [{ path: jsonPath(issue.path), message: messageOf(issue) }];
}

function messageOf(issue: z.core.$ZodIssue): string {
  if (issue.code === 'invalid_type') return expected([issue.expected], issue.input);
  if (issue.code === 'invalid_union') {
    const options = issue.errors.map((errors) => errors[0]);
    if (options.every((option) => option?.code === 'invalid_type' && option.path.length === 0)) {
      return expected(
        options.map((option) => (option?.code === 'invalid_type' ? option.expected : '')),
        issue.input,
      );
    }
  }
  return issue.message;
}

const TYPE_NAMES: Record<string, string> = { record: 'object' };

/** `expected a string, number or boolean, got an object`. */
function expected(types: string[], input: unknown): string {
  const names = types.map((type) => TYPE_NAMES[type] ?? type);
  const last = names.pop() ?? 'value';
  const list = names.length > 0 ? `${names.join(', ')} or ${last}` : last;
  if (input === undefined) return `required: expected ${withArticle(list)}`;
  return `expected ${withArticle(list)}, got ${describeValue(input)}`;
}

function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
  return withArticle(typeof value);
}

function withArticle(noun: string): string {
  if (noun === 'null') return noun;
  return /^[aeiou]/.test(noun) ? `an ${noun}` : `a ${noun}`;
}

function unknownKey(key: string, known: string[]): string {
  const loose = (name: string) => name.toLowerCase().replace(/[^a-z0-9]/g, '');
  const meant = known.find((name) => loose(name) === loose(key));
  if (meant !== undefined) return `unknown key "${key}" (keys are case-sensitive: did you mean "${meant}"?)`;
  return `unknown key "${key}" (known keys: ${known.join(', ')})`;
}

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

function jsonPath(path: readonly PropertyKey[]): string {
  return path.reduce<string>((out, key) => {
    if (typeof key === 'number') return `${out}[${key}]`;
    const name = String(key);
    return IDENTIFIER.test(name) ? `${out}.${name}` : `${out}[${JSON.stringify(name)}]`;
  }, '$');
}
