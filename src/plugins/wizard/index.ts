// `gatehouse plugin add-dependency [<dir>] [--url U] [--token T] [--tag TAG --operations a,b
// --events E,F --identifier ID] [--replace]` (docs/plugins.md "The wizard"; spec: "Dependency object"): loads the
// appliance's OpenAPI and AsyncAPI documents, has the user choose
// (prompts, or the flags when --tag is given) and writes the dependency into app-manifest.json.
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { CliError } from '../../cli/commands.js';
import type { PluginDependency } from '../toolkit/types.js';
import { buildCatalogue, type Catalogue } from './catalogue.js';
import { DEFAULT_URL, loadDocuments } from './documents.js';
import {
  type Choices,
  findTag,
  generateDependency,
  identifierProblem,
  nothingChosen,
  pickEvents,
  pickOperations,
} from './generate.js';
import { askChoices, terminalPrompts, type WizardPrompts } from './prompts.js';
import { MANIFEST_FILE, readManifestFile, writeDependency } from './write-manifest.js';

export type { WizardPrompts } from './prompts.js';

/** What a test (or another caller) replaces: where relative folders start, the environment, the prompts, fetch. */
export interface WizardIo {
  cwd?: string;
  env?: Record<string, string | undefined>;
  prompts?: WizardPrompts;
  fetch?: typeof fetch;
}

export interface AddDependencyResult {
  file: string;
  dependency: PluginDependency;
  /** A dependency with this identifier was there and was replaced (--replace). */
  replaced: boolean;
  /** What looks mismatched in the manifest and was left as it is (write-manifest.ts); never a refusal. */
  warnings: string[];
}

const options = {
  url: { type: 'string' },
  token: { type: 'string' },
  tag: { type: 'string' },
  operations: { type: 'string' },
  events: { type: 'string' },
  identifier: { type: 'string' },
  replace: { type: 'boolean' },
} as const;

type Flags = ReturnType<typeof parseArgs<{ options: typeof options; allowPositionals: true }>>['values'];

export async function runAddDependency(args: string[], io: WizardIo = {}): Promise<AddDependencyResult> {
  const { values, positionals } = parseArgs({ args, options, allowPositionals: true, strict: true });
  if (positionals.length > 1)
    throw new CliError(`add-dependency takes one plugin folder, got ${positionals.length}: ${positionals.join(' ')}`);
  const dir = resolve(io.cwd ?? process.cwd(), positionals[0] ?? '.');
  const env = io.env ?? process.env;
  const replace = values.replace ?? false;
  const interactive = values.tag === undefined;
  if (interactive && [values.operations, values.events, values.identifier].some((v) => v !== undefined)) {
    throw new CliError('--operations, --events and --identifier go with --tag (without --tag the wizard asks)');
  }
  let prompts = io.prompts;
  if (interactive && !prompts) {
    if (!process.stdin.isTTY)
      throw new CliError(
        'no terminal to ask in: pass --tag (with --operations, --events, --identifier) to run without prompts',
      );
    prompts = await terminalPrompts();
  }

  // The manifest first: a missing or broken one is reported before the appliance is asked anything.
  const { manifest } = await readManifestFile(dir);
  const taken = manifest.dependencies.map((d) => d.identifier);
  const url = values.url ?? DEFAULT_URL;
  const catalogue = buildCatalogue(
    await loadDocuments({ url, token: values.token ?? env.GATEHOUSE_TOKEN, ...(io.fetch ? { fetch: io.fetch } : {}) }),
  );
  if (catalogue.tags.length === 0)
    throw new CliError(`the OpenAPI document of ${url} has no operation under /api/ for callApi to call`);

  const choices =
    interactive && prompts
      ? await asked(catalogue, prompts, taken, replace)
      : fromFlags(catalogue, values, taken, replace);
  const dependency = generateDependency(catalogue, choices);
  const written = await writeDependency(dir, dependency, replace);
  return { file: written.file, dependency, replaced: written.replaced, warnings: written.warnings };
}

/** The non-interactive form, for scripts and CI: --tag alone takes all its operations and its model's events. */
function fromFlags(catalogue: Catalogue, values: Flags, taken: readonly string[], replace: boolean): Choices {
  const tag = findTag(catalogue, values.tag!);
  const operations = pickOperations(tag, values.operations);
  const events = pickEvents(catalogue, tag, values.events);
  if (nothingChosen(operations, events))
    throw new CliError(`nothing to add: no operation and no event chosen for "${tag.name}"`);
  // No numbered default here, unlike the prompt's: a script run twice must fail, not add a second copy.
  const identifier = (values.identifier ?? tag.permissionKey).trim();
  const problem = identifierProblem(identifier, taken, replace);
  if (problem) throw new CliError(problem);
  return { tag, operations, events, identifier };
}

async function asked(
  catalogue: Catalogue,
  prompts: WizardPrompts,
  taken: readonly string[],
  replace: boolean,
): Promise<Choices> {
  try {
    return await askChoices(catalogue, prompts, taken, replace);
  } catch (err) {
    // Ctrl+C in a prompt (@inquirer/core's ExitPromptError).
    if ((err as Error).name === 'ExitPromptError') throw new CliError(`cancelled; ${MANIFEST_FILE} unchanged`);
    throw err;
  }
}
