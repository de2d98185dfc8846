// `gatehouse plugin init <dir> [--yes] [--name N]` (docs/plugins.md): writes a new plugin
// (templates.ts). Asks for the name unless --yes; refuses a folder that has files in it.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { CliError } from '../../cli/commands.js';
import { checkoutRoot } from '../checkout.js';
import { scaffoldFiles } from './templates.js';

const NPM_NAME = /^(?:@[a-z0-9-~][a-z0-9-._~]*\/)?[a-z0-9-~][a-z0-9-._~]*$/;

function nameError(name: string): string | null {
  if (name.length === 0 || name.length > 214) return 'a name has 1 to 214 characters';
  return NPM_NAME.test(name) ? null : `"${name}" is not an npm package name (lower case letters, digits, - . _ ~)`;
}

/** The version range this checkout's toolkit was built with, so the plugin gets a matching Vue and Pinia. */
function rangeOf(root: string, dep: string): string {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  return pkg.dependencies[dep] ?? 'latest';
}

export async function runInit(args: string[]): Promise<{ dir: string; files: string[]; next: string[] }> {
  const { values: v, positionals } = parseArgs({
    args,
    options: { yes: { type: 'boolean', short: 'y' }, name: { type: 'string' } },
    allowPositionals: true,
    strict: true,
  });
  if (!positionals[0]) throw new CliError("the new plugin's folder is required: gatehouse plugin init <dir>");
  const dir = resolve(positionals[0]);
  if (existsSync(dir) && readdirSync(dir).length > 0)
    throw new CliError(`${dir} is not empty; init writes a new plugin into an empty or new folder`);
  let name =
    v.name ??
    basename(dir)
      .toLowerCase()
      .replace(/[^a-z0-9-._~]+/g, '-');
  if (!v.yes && v.name === undefined) {
    const { input } = await import('@inquirer/prompts');
    name = await input({
      message: 'Plugin name (npm package name)',
      default: name,
      validate: (value) => nameError(value) ?? true,
    });
  }
  const problem = nameError(name);
  if (problem) throw new CliError(`--name: ${problem}`);

  const root = checkoutRoot();
  const files = scaffoldFiles({
    name,
    checkout: relative(dir, root) || '.',
    vueVersion: rangeOf(root, 'vue'),
    piniaVersion: rangeOf(root, 'pinia'),
  });
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), content, { flag: 'wx' });
  }
  const shown = relative(process.cwd(), dir) || '.';
  return {
    dir,
    files: Object.keys(files).sort(),
    next: [
      `cd ${shown}`,
      'npm install',
      'npm run dev -- --url http://127.0.0.1:8080 --token "$TOKEN"',
      'npm run build',
    ],
  };
}
