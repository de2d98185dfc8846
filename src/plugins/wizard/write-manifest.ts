// Puts a dependency into app-manifest.json as a person would edit it: only the `dependencies` array
// is edited (json-edits.ts), so every other key, the key order, the indent and the line ends stay
// byte for byte. The top-level `permissions` are the device capabilities the plugin needs (spec:
// "Manifest top level": camera, bluetooth, notifications), not a copy of a dependency's: what a
// token may do is the appliance's to answer, so they are left alone; a copy there is only warned of. The result is
// validated with the toolkit's own parser before anything is written, and written to a temporary file renamed over the
// manifest, so a crash or a full disk never leaves half a manifest behind.
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
  /** What looks mismatched and is left as it is: the dependency's
   * permissions repeated in the manifest's `permissions`. */
  warnings: string[];
}

export async function readManifestFile(dir: string): Promise<ManifestFile> {
  const file = join(dir, MANIFEST_FILE);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT')
      throw new CliError(
        `no ${MANIFEST_FILE} in ${dir} (run gatehouse plugin init there, or name the plugin's folder)`,
      );
    throw new CliError(`cannot read ${file}: ${(err as Error).message}`);
  }
  const parsed = parseManifestText(text);
  if (!parsed.ok)
    throw new CliError(
      `${file} is not a valid manifest; fix it first:\n${parsed.errors.map((e) => `  ${e.path}: ${e.message}`).join('\n')}`,
    );
  return { file, text, manifest: parsed.manifest };
}

/** The manifest text with the dependency appended, or put in
 * the place of the one with its identifier when `replace`. */
export function withDependency(
  source: string,
  manifest: PluginManifest,
  dependency: PluginDependency,
  replace: boolean,
): Edited {
  const bom = source.startsWith('\uFEFF') ? '\uFEFF' : '';
  let text = source.slice(bom.length);
  const style = styleOf(text);
  const index = manifest.dependencies.findIndex((d) => d.identifier === dependency.identifier);
  if (index >= 0 && !replace)
    throw new CliError(
      `a dependency "${dependency.identifier}" is already in ${MANIFEST_FILE} (pass --replace to replace it)`,
    );
  text =
    index >= 0
      ? replaceInArray(text, 'dependencies', index, dependency, style)
      : appendToArray(text, 'dependencies', dependency, style);
  return { text: bom + text, replaced: index >= 0, warnings: permissionWarnings(manifest, dependency) };
}

/** A warning, never a refusal: the dependency's permissions in the
 * manifest's top-level list (as earlier wizards wrote them) do no harm. */
function permissionWarnings(manifest: PluginManifest, dependency: PluginDependency): string[] {
  const repeated = dependency.permissions.filter((p) => manifest.permissions.includes(p));
  if (repeated.length === 0) return [];
  return [
    `${MANIFEST_FILE}'s "permissions" lists ${repeated.map((p) => `"${p}"`).join(', ')} of the dependency "${dependency.identifier}": that list is the device capabilities the plugin needs (camera, bluetooth, notifications); what the token may do is the appliance's to answer (401 / 403), so it is not needed there`,
  ];
}

/**
 * Reads the manifest again (it may have changed while the prompts waited), edits, validates the
 * result and replaces the file atomically.
 */
export async function writeDependency(
  dir: string,
  dependency: PluginDependency,
  replace: boolean,
): Promise<{ file: string } & Omit<Edited, 'text'>> {
  const { file, text, manifest } = await readManifestFile(dir);
  const edited = withDependency(text, manifest, dependency, replace);
  const check = parseManifestText(edited.text);
  if (!check.ok)
    throw new CliError(
      `${file} unchanged: the edited manifest would not be valid:\n${check.errors.map((e) => `  ${e.path}: ${e.message}`).join('\n')}`,
    );
  await writeAtomically(file, edited.text);
  return { file, replaced: edited.replaced, warnings: edited.warnings };
}

/** A temporary file next to it (same file system, so the rename is
 * atomic), with the manifest's mode, flushed, then renamed over it. */
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
