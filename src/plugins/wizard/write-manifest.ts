// Puts a dependency into app-manifest.json as a person would edit it: only the `dependencies` array
// (and `permissions`, below) is edited (json-edits.ts), so every other key, the key order, the
// indent and the line ends stay byte for byte. The result is validated with the toolkit's own parser
// before anything is written, and written to a temporary file renamed over the manifest, so a
// crash or a full disk never leaves half a manifest behind.
import { randomBytes } from 'node:crypto';
import { open, readFile, rename, stat, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { CliError } from '../../cli/commands.js';
import { parseManifestText } from '../toolkit/manifest.js';
import type { PluginDependency, PluginManifest } from '../toolkit/types.js';
import { appendToArray, replaceInArray, styleOf } from './json-edits.js';

export const MANIFEST_FILE = 'app-manifest.json';

export interface ManifestFile {
  file: string;
  text: string;
  manifest: PluginManifest;
}

export interface Edited {
  text: string;
  replaced: boolean;
  /** Added to the manifest's `permissions`: callApi refuses a dependency whose permissions the plugin does not hold. */
  permissionsAdded: string[];
}

export async function readManifestFile(dir: string): Promise<ManifestFile> {
  const file = join(dir, MANIFEST_FILE);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new CliError(`no ${MANIFEST_FILE} in ${dir} (run gatehouse plugin init there, or name the plugin's folder)`);
    throw new CliError(`cannot read ${file}: ${(err as Error).message}`);
  }
  const parsed = parseManifestText(text);
  if (!parsed.ok) throw new CliError(`${file} is not a valid manifest; fix it first:\n${parsed.errors.map((e) => `  ${e.path}: ${e.message}`).join('\n')}`);
  return { file, text, manifest: parsed.manifest };
}

/** The manifest text with the dependency appended, or put in the place of the one with its identifier when `replace`. */
export function withDependency(source: string, manifest: PluginManifest, dependency: PluginDependency, replace: boolean): Edited {
  const bom = source.startsWith('\uFEFF') ? '\uFEFF' : '';
  let text = source.slice(bom.length);
  const style = styleOf(text);
  const index = manifest.dependencies.findIndex((d) => d.identifier === dependency.identifier);
  if (index >= 0 && !replace) throw new CliError(`a dependency "${dependency.identifier}" is already in ${MANIFEST_FILE} (pass --replace to replace it)`);
  text = index >= 0 ? replaceInArray(text, 'dependencies', index, dependency, style) : appendToArray(text, 'dependencies', dependency, style);
  const missing = dependency.permissions.filter((p) => !manifest.permissions.includes(p));
  for (const permission of missing) text = appendToArray(text, 'permissions', permission, style);
  return { text: bom + text, replaced: index >= 0, permissionsAdded: missing };
}

/**
 * Reads the manifest again (it may have changed while the prompts waited), edits, validates the
 * result and replaces the file atomically.
 */
export async function writeDependency(dir: string, dependency: PluginDependency, replace: boolean): Promise<{ file: string } & Omit<Edited, 'text'>> {
  const { file, text, manifest } = await readManifestFile(dir);
  const edited = withDependency(text, manifest, dependency, replace);
  const check = parseManifestText(edited.text);
  if (!check.ok) throw new CliError(`${file} unchanged: the edited manifest would not be valid:\n${check.errors.map((e) => `  ${e.path}: ${e.message}`).join('\n')}`);
  await writeAtomically(file, edited.text);
  return { file, replaced: edited.replaced, permissionsAdded: edited.permissionsAdded };
}

/** A temporary file next to it (same file system, so the rename is atomic), with the manifest's mode, flushed, then renamed over it. */
export async function writeAtomically(file: string, text: string): Promise<void> {
  const temporary = join(dirname(file), `.${basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  const mode = (await stat(file)).mode & 0o777;
  try {
    const handle = await open(temporary, 'wx', mode);
    try {
      await handle.writeFile(text, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, file);
  } catch (err) {
    await unlink(temporary).catch(() => undefined);
    throw new CliError(`cannot write ${file} (it is unchanged): ${(err as Error).message}`);
  }
}
