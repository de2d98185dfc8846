import type { z } from 'zod';
import { configSchema } from './schema.js';

// Env and CLI overlays are derived from the schema's shape, so a key added to the schema
// gets its GATEHOUSE_* variable and --flag with nothing else to edit.
// http.port -> GATEHOUSE_HTTP_PORT and --http-port; rateLimit.bulk -> GATEHOUSE_RATE_LIMIT_BULK.

export type LeafKind = 'number' | 'boolean' | 'string';

export interface ConfigLeaf {
  path: string[];
  env: string;
  flag: string;
  kind: LeafKind;
  nullable: boolean;
}

type AnySchema = z.core.$ZodType;

function describe(schema: AnySchema): { kind: string; nullable: boolean; inner: AnySchema } {
  let nullable = false;
  let current = schema;
  for (;;) {
    const def = current._zod.def as { type: string; innerType?: AnySchema };
    if (def.type === 'nullable') nullable = true;
    if (def.innerType && ['default', 'prefault', 'nullable', 'optional'].includes(def.type)) {
      current = def.innerType;
      continue;
    }
    return { kind: def.type, nullable, inner: current };
  }
}

const snake = (s: string) => s.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase();
const kebab = (s: string) => s.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase();

function collect(schema: AnySchema, prefix: string[], out: ConfigLeaf[]): void {
  const { kind, nullable, inner } = describe(schema);
  if (kind === 'object') {
    const shape = (inner._zod.def as unknown as { shape: Record<string, AnySchema> }).shape;
    for (const [key, child] of Object.entries(shape)) collect(child, [...prefix, key], out);
    return;
  }
  const leafKind: LeafKind = kind === 'number' ? 'number' : kind === 'boolean' ? 'boolean' : 'string';
  out.push({
    path: prefix,
    env: `GATEHOUSE_${prefix.map(snake).join('_')}`,
    flag: prefix.map(kebab).join('-'),
    kind: leafKind,
    nullable,
  });
}

export const configLeaves: readonly ConfigLeaf[] = (() => {
  const out: ConfigLeaf[] = [];
  collect(configSchema, [], out);
  return out;
})();

/** Turns a string from the environment or argv into the leaf's type; leaves it a string when
 * it does not parse, so validation reports the original value. */
export function coerceLeaf(leaf: ConfigLeaf, raw: string): unknown {
  const value = raw.trim();
  if (leaf.nullable && (value === '' || value === 'null')) return null;
  if (leaf.kind === 'number' && /^-?\d+(\.\d+)?$/.test(value)) return Number(value);
  if (leaf.kind === 'boolean') {
    if (['1', 'true', 'yes', 'on'].includes(value.toLowerCase())) return true;
    if (['0', 'false', 'no', 'off'].includes(value.toLowerCase())) return false;
  }
  return value;
}

export function setPath(target: Record<string, unknown>, path: string[], value: unknown): void {
  let node = target;
  for (const key of path.slice(0, -1)) {
    const next = node[key];
    if (typeof next !== 'object' || next === null || Array.isArray(next)) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[path[path.length - 1]!] = value;
}

export function getPath(target: unknown, path: readonly PropertyKey[]): unknown {
  let node = target;
  for (const key of path) {
    if (typeof node !== 'object' || node === null) return undefined;
    node = (node as Record<PropertyKey, unknown>)[key];
  }
  return node;
}
