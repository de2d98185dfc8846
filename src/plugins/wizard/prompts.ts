// The interactive form: a tag (with its model), that tag's endpoints, socket events (the model's
// preselected), an identifier. The prompt functions come in from outside, so a test drives them
// through @inquirer/testing's render; the terminal's are @inquirer/prompts, loaded only here.
import type { Catalogue } from './catalogue.js';
import { type Choices, defaultIdentifier, identifierProblem, modelEvents } from './generate.js';

interface Choice {
  name: string;
  value: string;
  description?: string;
  checked?: boolean;
}

/** The three prompts the wizard asks with, as narrow as it uses them (answers are strings). */
export interface WizardPrompts {
  select(config: { message: string; choices: Choice[]; pageSize?: number }): Promise<string>;
  checkbox(config: {
    message: string;
    choices: Choice[];
    pageSize?: number;
    validate?: (chosen: readonly { value: string }[]) => boolean | string;
  }): Promise<string[]>;
  input(config: { message: string; default?: string; validate?: (value: string) => boolean | string }): Promise<string>;
}

export async function terminalPrompts(): Promise<WizardPrompts> {
  const { checkbox, input, select } = await import('@inquirer/prompts');
  return {
    select: (config) => select(config),
    checkbox: (config) => checkbox(config),
    input: (config) => input(config),
  };
}

const PAGE = 16;

export async function askChoices(
  catalogue: Catalogue,
  prompts: WizardPrompts,
  taken: readonly string[],
  replace: boolean,
): Promise<Choices> {
  const tagName = await prompts.select({
    message: 'Which part of the API? (tag → model)',
    pageSize: PAGE,
    choices: catalogue.tags.map((t) => ({
      name: `${t.name} → ${t.model}`,
      value: t.name,
      description: `${t.operations.length} endpoint(s): ${t.operations.map((o) => o.id).join(', ')}`,
    })),
  });
  const tag = catalogue.tags.find((t) => t.name === tagName)!;

  const width = Math.max(...tag.operations.map((o) => o.id.length));
  const operations = await prompts.checkbox({
    message: `Endpoints of ${tag.name} the plugin calls (space to pick, a for all)`,
    pageSize: PAGE,
    choices: tag.operations.map((o) => ({
      name: `${o.id.padEnd(width)}  ${o.method.toUpperCase().padEnd(6)} ${o.path}`,
      value: o.id,
      description: o.summary,
    })),
  });

  const preselected = modelEvents(catalogue, tag);
  const events = await prompts.checkbox({
    message: `Socket events the plugin listens to${preselected.length ? ` (${tag.model}'s are picked)` : ''}`,
    pageSize: PAGE,
    choices: catalogue.events.map((e) => ({
      name: e.name,
      value: e.name,
      description: e.summary,
      checked: preselected.includes(e.name),
    })),
    validate: (chosen) =>
      chosen.length > 0 ||
      operations.length > 0 ||
      'Pick at least one endpoint or event: a dependency with neither does nothing.',
  });

  const identifier = await prompts.input({
    message: 'Identifier (what the plugin passes to callApi)',
    default: defaultIdentifier(tag, taken, replace),
    validate: (value) => identifierProblem(value.trim(), taken, replace) ?? true,
  });
  return { tag, operations, events, identifier: identifier.trim() };
}
