// From what was chosen (a tag, some of its operations, some socket events, an identifier) to the
// dependency object (docs/plugins.md; contract: "Dependency object"), and the checks the
// prompts and the flags share, so both forms refuse the same things with the same words.
import { CliError } from '../../cli/commands.js';
import type { PluginDependency } from '../toolkit/types.js';
import type { Catalogue, CatalogueTag } from './catalogue.js';
import { eventOfModel } from './names.js';

export interface Choices {
  tag: CatalogueTag;
  operations: readonly string[];
  events: readonly string[];
  identifier: string;
}

/**
 * Keys in the contract's order. Permissions: `view_<key>` when it reads (a GET, or socket events),
 * `manage_<key>` when it writes, as the contract's `view_access_points`, `manage_access_points`.
 */
export function generateDependency(catalogue: Catalogue, choices: Choices): PluginDependency {
  const { tag } = choices;
  const chosen = tag.operations.filter((o) => choices.operations.includes(o.id));
  const events = catalogue.events.filter((e) => choices.events.includes(e.name));
  const permissions: string[] = [];
  if (chosen.some((o) => o.method === 'get') || events.length > 0) permissions.push(`view_${tag.permissionKey}`);
  if (chosen.some((o) => o.method !== 'get')) permissions.push(`manage_${tag.permissionKey}`);
  return {
    identifier: choices.identifier,
    model: tag.model,
    permissionKey: tag.permissionKey,
    permissions,
    operations: Object.fromEntries(chosen.map((o) => [o.id, `${o.method}:${o.path}`])),
    // Bare on both sides, as the contract writes them: the socket side strips pusher.eventNamespace
    // (toolkit/events.ts), so the manifest works on a box with any namespace.
    events: Object.fromEntries(events.map((e) => [e.name, e.name])),
  };
}

/** By its name (any case), its model or its permission key: `"Access points"`, `AccessPoint`, `access_points`. */
export function findTag(catalogue: Catalogue, wanted: string): CatalogueTag {
  const key = wanted.trim().toLowerCase();
  const tag = catalogue.tags.find((t) => [t.name, t.model, t.permissionKey].some((n) => n.toLowerCase() === key));
  if (!tag) throw new CliError(`unknown tag "${wanted}" (tags: ${catalogue.tags.map((t) => t.name).join(', ')})`);
  return tag;
}

/** `--operations`: a comma list of operation ids of the tag, or `all` (also when not given). */
export function pickOperations(tag: CatalogueTag, list: string | undefined): string[] {
  const all = tag.operations.map((o) => o.id);
  if (list === undefined || list.trim() === 'all') return all;
  return items(list).map((id) => {
    if (!all.includes(id))
      throw new CliError(`unknown operation "${id}" in tag "${tag.name}" (its operations: ${all.join(', ')})`);
    return id;
  });
}

/** `--events`: a comma list of socket events, `none` (or empty) for none; when not given, the model's events. */
export function pickEvents(catalogue: Catalogue, tag: CatalogueTag, list: string | undefined): string[] {
  if (list === undefined) return modelEvents(catalogue, tag);
  if (list.trim() === 'none') return [];
  const names = catalogue.events.map((e) => e.name);
  return items(list).map((name) => {
    if (!names.includes(name)) throw new CliError(`unknown event "${name}" (socket events: ${names.join(', ')})`);
    return name;
  });
}

/** The events named after the tag's model: `AccessPointUpdated`, `AccessPointDeleted` for `AccessPoint`. */
export function modelEvents(catalogue: Catalogue, tag: CatalogueTag): string[] {
  return catalogue.events.filter((e) => eventOfModel(e.name, tag.model)).map((e) => e.name);
}

/** The permission key (`access_points`), or with a number when
 * a dependency already has it and it is not to be replaced. */
export function defaultIdentifier(tag: CatalogueTag, taken: readonly string[], replace: boolean): string {
  if (replace || !taken.includes(tag.permissionKey)) return tag.permissionKey;
  let n = 2;
  while (taken.includes(`${tag.permissionKey}_${n}`)) n++;
  return `${tag.permissionKey}_${n}`;
}

/** What is wrong with an identifier, or null. A used one only with --replace: callApi finds a dependency by it. */
export function identifierProblem(identifier: string, taken: readonly string[], replace: boolean): string | null {
  if (identifier === '') return 'the identifier must not be empty';
  if (/\s/.test(identifier)) return `the identifier "${identifier}" must not contain spaces`;
  if (taken.includes(identifier) && !replace)
    return `a dependency "${identifier}" is already in app-manifest.json (pass --replace to replace it, or choose another identifier)`;
  return null;
}

export function nothingChosen(operations: readonly string[], events: readonly string[]): boolean {
  return operations.length === 0 && events.length === 0;
}

function items(list: string): string[] {
  return list
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}
