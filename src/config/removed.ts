import { type ConfigLeaf, coerceLeaf, getPath } from './overlay.js';

// Settings a release removed, with where their job went (docs/config.md: removed settings). One
// still set in a file, a variable or a flag is taken out before validation, so it is not a bare
// "unrecognized key": set to what every box now does anyway it is taken as nothing, set to
// anything else start-up stops naming the setting, where it came from and what replaced it
// (silently dropping an operator's choice would change what the doors do without a word).

interface RemovedSetting extends ConfigLeaf {
  /** What replaced it, for the message. */
  instead: string;
  /** The value that asks for what every box now does: accepted, and ignored. */
  harmless: unknown;
}

export const REMOVED_SETTINGS: readonly RemovedSetting[] = [
  {
    path: ['access', 'antiPassback'],
    env: 'GATEHOUSE_ACCESS_ANTI_PASSBACK',
    flag: 'access-anti-passback',
    kind: 'boolean',
    nullable: false,
    harmless: false,
    instead: 'anti-passback is a choice of each access zone now (its anti_passback field; docs/engine.md)',
  },
];

/**
 * Takes every removed setting out of the file's object (in place, with parents it leaves empty),
 * the environment and the flags, layered as load.ts layers the rest. Answers a problem for each
 * whose final value is not its harmless one, and the flags left for the other settings.
 */
export function takeRemoved(
  file: Record<string, unknown>,
  fileName: string | undefined,
  env: NodeJS.ProcessEnv,
  flags: readonly string[],
): { problems: string[]; flags: string[] } {
  const problems: string[] = [];
  let rest = [...flags];
  for (const setting of REMOVED_SETTINGS) {
    let value: unknown;
    let from: string | undefined;
    const inFile = getPath(file, setting.path);
    if (inFile !== undefined) {
      value = inFile;
      from = fileName;
      deletePath(file, setting.path);
    }
    const raw = env[setting.env];
    if (raw !== undefined) {
      value = coerceLeaf(setting, raw);
      from = setting.env;
    }
    const taken = takeFlag(rest, setting);
    rest = taken.rest;
    if (taken.raw !== undefined) {
      value = coerceLeaf(setting, taken.raw);
      from = `--${setting.flag}`;
    }
    if (from === undefined || value === setting.harmless) continue;
    problems.push(
      `${setting.path.join('.')} = ${JSON.stringify(value)}${from ? ` (from ${from})` : ''}: removed: ${setting.instead}`,
    );
  }
  return { problems, flags: rest };
}

/** The setting's flag taken out of `flags` (`--name`, `--name=value`,
 * `--name value` as load.ts reads a flag); its last value. */
function takeFlag(flags: string[], setting: RemovedSetting): { rest: string[]; raw: string | undefined } {
  const rest: string[] = [];
  let raw: string | undefined;
  for (let i = 0; i < flags.length; i++) {
    const arg = flags[i]!;
    if (arg === `--${setting.flag}`) {
      const next = flags[i + 1];
      if (next === undefined || next.startsWith('--')) raw = 'true';
      else {
        raw = next;
        i++;
      }
    } else if (arg.startsWith(`--${setting.flag}=`)) raw = arg.slice(setting.flag.length + 3);
    else rest.push(arg);
  }
  return { rest, raw };
}

function deletePath(target: Record<string, unknown>, path: readonly string[]): void {
  const [key, ...below] = path;
  if (key === undefined) return;
  if (below.length === 0) {
    delete target[key];
    return;
  }
  const child = target[key];
  if (typeof child !== 'object' || child === null || Array.isArray(child)) return;
  deletePath(child as Record<string, unknown>, below);
  if (Object.keys(child).length === 0) delete target[key];
}
