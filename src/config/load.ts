import { existsSync, readFileSync } from 'node:fs';
import { configSchema, type Config } from './schema.js';
import { coerceLeaf, configLeaves, getPath, setPath } from './overlay.js';
import { takeRemoved } from './removed.js';
import { redactRedisUrl } from '../cluster/redis-url.js';

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

export interface ConfigSources {
  /** Path of a JSON config file; a missing default file is not an error, a missing named one is. */
  file?: string | undefined;
  fileRequired?: boolean;
  env?: NodeJS.ProcessEnv;
  /** `--http-port 9000`, `--http-port=9000`, `--webhook-allow-insecure` */
  flags?: string[];
}

type Origin = Map<string, string>; // dotted path -> where the value came from

function readFile(file: string | undefined, required: boolean, origin: Origin): Record<string, unknown> {
  if (!file) return {};
  if (!existsSync(file)) {
    if (required) throw new ConfigError([`config file ${file} does not exist`]);
    return {};
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ConfigError([`config file ${file} is not valid JSON: ${(err as Error).message}`]);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ConfigError([`config file ${file} must hold a JSON object`]);
  }
  for (const leaf of configLeaves) {
    if (getPath(parsed, leaf.path) !== undefined) origin.set(leaf.path.join('.'), file);
  }
  return parsed as Record<string, unknown>;
}

function applyEnv(target: Record<string, unknown>, env: NodeJS.ProcessEnv, origin: Origin): void {
  for (const leaf of configLeaves) {
    const raw = env[leaf.env];
    if (raw === undefined) continue;
    setPath(target, leaf.path, coerceLeaf(leaf, raw));
    origin.set(leaf.path.join('.'), leaf.env);
  }
}

function applyFlags(target: Record<string, unknown>, flags: string[], origin: Origin): string[] {
  const problems: string[] = [];
  for (let i = 0; i < flags.length; i++) {
    const arg = flags[i]!;
    if (!arg.startsWith('--')) {
      problems.push(`unexpected argument ${JSON.stringify(arg)}`);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = arg.slice(2, eq === -1 ? undefined : eq);
    if (name === 'config') {
      if (eq === -1) i++;
      continue;
    }
    const leaf = configLeaves.find((l) => l.flag === name);
    if (!leaf) {
      problems.push(`unknown option --${name}`);
      continue;
    }
    let raw: string | undefined = eq === -1 ? undefined : arg.slice(eq + 1);
    if (raw === undefined) {
      const next = flags[i + 1];
      if (leaf.kind === 'boolean' && (next === undefined || next.startsWith('--'))) raw = 'true';
      else if (next === undefined) {
        problems.push(`option --${name} needs a value`);
        continue;
      } else {
        raw = next;
        i++;
      }
    }
    setPath(target, leaf.path, coerceLeaf(leaf, raw));
    origin.set(leaf.path.join('.'), `--${name}`);
  }
  return problems;
}

/** The config file named by --config or GATEHOUSE_CONFIG, else config/default.json. */
export function configFileFrom(flags: string[], env: NodeJS.ProcessEnv): { file: string; required: boolean } {
  for (let i = 0; i < flags.length; i++) {
    const arg = flags[i]!;
    if (arg === '--config' && flags[i + 1]) return { file: flags[i + 1]!, required: true };
    if (arg.startsWith('--config=')) return { file: arg.slice('--config='.length), required: true };
  }
  if (env.GATEHOUSE_CONFIG) return { file: env.GATEHOUSE_CONFIG, required: true };
  return { file: 'config/default.json', required: false };
}

/** Keys whose values a start-up error must not print (it goes to logs): a mistyped secret is still most of one. */
const SECRET = /secret|password|token|masterkey/i;

/** File, then environment, then flags; validated once, frozen. Throws ConfigError listing
 * every problem with its key, the value given, where it came from and what is expected. */
export function loadConfig(sources: ConfigSources = {}): Readonly<Config> {
  const origin: Origin = new Map();
  const raw = readFile(sources.file, sources.fileRequired ?? false, origin);
  const removed = takeRemoved(raw, sources.file, sources.env ?? {}, sources.flags ?? []);
  applyEnv(raw, sources.env ?? {}, origin);
  const flagProblems = applyFlags(raw, removed.flags, origin);
  const result = configSchema.safeParse(raw);
  const problems = [...removed.problems, ...flagProblems];
  if (!result.success) {
    for (const issue of result.error.issues) {
      const key = issue.path.map(String).join('.') || '(root)';
      const value = getPath(raw, issue.path);
      const from = origin.get(key);
      const keys = 'keys' in issue ? ` ${(issue.keys as string[]).join(', ')}` : '';
      const shown =
        typeof value === 'string' && SECRET.test(String(issue.path.at(-1)))
          ? `(hidden, ${value.length} characters)`
          : JSON.stringify(typeof value === 'string' && key === 'redis.url' ? redactRedisUrl(value) : value);
      problems.push(`${key}${keys} = ${shown ?? '(not set)'}${from ? ` (from ${from})` : ''}: ${issue.message}`);
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return deepFreeze(result.data!);
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}
