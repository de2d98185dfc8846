// What the store inspector accepts as a value (docs/plugins.md; contract: "What the service does" 5,
// "Manifest top level"). An edit may only leave the store in a state some manifest could have produced, so every
// edit, from the value editor or the trigger-state simulator, goes through applyEdit: checked against its section's
// types, then written with the store's update* action (in place: bound elements stay subscribed).
//
// How typed text is read:
// - stringsList, assetList hold text only: the text as typed is the value, quotes included (`42` is the text "42").
// - pluginVars, triggerState are typed: the text is read as JSON (`12`, `true`, `null`, `"Hall A"`); text that is
//   not JSON is taken as a string (`Hall A`), unless it begins with `"`, `[` or `{` (meant as JSON: its syntax
//   error is shown) or is empty (ambiguous: write `""`).
import { invalidJson } from './json-syntax.js';
import type { PluginStore } from './store.js';
import type { StateValue, StoreSection } from './types.js';

/** The four store sections, in the contract's order. */
export const SECTIONS: readonly StoreSection[] = ['pluginVars', 'stringsList', 'assetList', 'triggerState'];

/** Any value of any section (StateValue is the widest of the four). */
export type StoreValue = StateValue;

export type ParsedEdit = { ok: true; value: StoreValue } | { ok: false; message: string };

export function isTextSection(section: StoreSection): boolean {
  return section === 'stringsList' || section === 'assetList';
}

/** One line telling what the section's editor accepts (shown under the input). */
export function sectionHint(section: StoreSection): string {
  if (isTextSection(section)) return 'Text, taken as typed.';
  const types = section === 'triggerState' ? '12, true, null, "text"' : '12, true, "text"';
  return `JSON: ${types}; text without quotes is taken as text.`;
}

/** The value as the list shows it: JSON, so "0" and 0 differ. */
export function displayValue(value: StoreValue): string {
  return JSON.stringify(value);
}

/** The editor's starting text; parseEdit(section, editText(section, v)) gives v back. */
export function editText(section: StoreSection, value: StoreValue): string {
  return isTextSection(section) && typeof value === 'string' ? value : JSON.stringify(value);
}

/** Why `value` cannot be in `section` (manifest types, spec: "Manifest top level"), or null when it can. */
export function refusal(section: StoreSection, value: unknown): string | null {
  const kind =
    value === null ? 'null' : Array.isArray(value) ? 'a list' : typeof value === 'object' ? 'an object' : typeof value;
  if (kind === 'number' && !Number.isFinite(value)) return 'Numbers must be finite (as in the manifest).';
  const allowed: Record<StoreSection, readonly string[]> = {
    pluginVars: ['string', 'number', 'boolean'],
    stringsList: ['string'],
    assetList: ['string'],
    triggerState: ['string', 'number', 'boolean', 'null'],
  };
  if (allowed[section].includes(kind)) return null;
  const wanted = {
    pluginVars: 'text, a number or a boolean',
    stringsList: 'text',
    assetList: 'text (a URL or path)',
    triggerState: 'text, a number, a boolean or null',
  }[section];
  const why = kind === 'null' ? ' (only triggerState values may be null)' : '';
  return `${section} values are ${wanted}, not ${kind}${why}.`;
}

/** Reads the editor's text for `section` (rules at the top of this file) and checks the result. */
export function parseEdit(section: StoreSection, text: string): ParsedEdit {
  if (isTextSection(section)) return { ok: true, value: text };
  const trimmed = text.trim();
  if (trimmed === '')
    return { ok: false, message: `Empty: write "" for empty text${section === 'triggerState' ? ', or null' : ''}.` };
  let value: unknown;
  try {
    value = JSON.parse(trimmed);
  } catch (err) {
    if (/^["[{]/.test(trimmed)) return { ok: false, message: `${invalidJson(trimmed, err)}.` };
    value = text;
  }
  const refused = refusal(section, value);
  return refused === null ? { ok: true, value: value as StoreValue } : { ok: false, message: refused };
}

/**
 * Writes `value` to `section[key]` through the store's update* action, or returns why not: a value the section
 * cannot hold, or a key the section no longer has (a hot reload removed it while it was being edited).
 */
export function applyEdit(store: PluginStore, section: StoreSection, key: string, value: StoreValue): string | null {
  const refused = refusal(section, value);
  if (refused !== null) return refused;
  if (!Object.hasOwn(store[section], key))
    return `${section} has no key ${JSON.stringify(key)} any more (the manifest was reloaded).`;
  // refusal() has narrowed the value to the section's type.
  if (section === 'pluginVars') store.updateSetting(key, value as string | number | boolean);
  else if (section === 'stringsList') store.updateString(key, value as string);
  else if (section === 'assetList') store.updateAsset(key, value as string);
  else store.updateState(key, value);
  return null;
}

/** The four sections as JSON text (the copy-store button). */
export function storeJson(store: PluginStore): string {
  const sections = Object.fromEntries(SECTIONS.map((section) => [section, store[section]]));
  return JSON.stringify(sections, null, 2);
}
