// `gatehouse plugin <command>`: the plugin toolkit's developer commands (docs/plugins.md). Not store
// commands: they work on a plugin's folder and talk to a running appliance over HTTP. Each command's
// module is loaded only when it runs (Vite and the prompts are heavy and not needed to start the box).
import { CliError, usage } from '../cli/commands.js';

type PluginCommand = (args: string[]) => Promise<unknown>;

const commands: Record<string, () => Promise<PluginCommand>> = {
  init: async () => (await import('./scaffold/init.js')).runInit,
  dev: async () => (await import('./vite/dev.js')).runDev,
  build: async () => (await import('./vite/dev.js')).runBuild,
  'add-dependency': async () => (await import('./wizard/index.js')).runAddDependency,
};

/**
 * Runs one plugin command. What it answers is printed as JSON (init, build, add-dependency); `dev`
 * answers only when its server stops, so it resolves to `undefined` and keeps the process running.
 */
export async function runPluginCommand(args: string[]): Promise<unknown> {
  const [name, ...rest] = args;
  const load = name === undefined ? undefined : commands[name];
  if (!load) throw new CliError(`unknown plugin command: ${name ?? ''}\n${usage}`);
  return (await load())(rest);
}
