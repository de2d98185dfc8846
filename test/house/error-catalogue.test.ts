import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AppError, type ErrorCode, errorCatalogue, formatMessage, validationError } from '../../src/errors.js';

// The one error catalogue (src/errors.ts), as Fastify keeps its errors: each entry gives a status
// and a message, and docs/errors.md documents every code the code can answer, no more, no fewer.

const ROOT = join(import.meta.dirname, '..', '..');
const SOURCE_DIRS = ['src', 'sync', 'firmware-bridge'];

/** Where the envelope is built with a code: an AppError, a body that repeats its code, a refusal of a
 * reader's scan, a route's declared condition, or an {error: code} body written by hand. A code passed
 * on in a variable (an MQTT scan's answer, a webhook refusal) is typed ErrorCode, so tsc checks it. */
const CODE_SITES = [
  /new AppError\(\s*'(\w+)'/g,
  /body: \{\s*code: '(\w+)'/g,
  /refusal(?:\(|: \{\s*code: )'(\w+)'/g,
  /\bcode: '(\w+)'(?: as const)?,\s*when:/g,
  /\berror: '([a-z]+(?:_[a-z]+)+)'/g,
];

/** The codes named at envelope-building sites of one source file. */
function codesIn(source: string): string[] {
  return CODE_SITES.flatMap((site) => [...source.matchAll(site)].map((m) => m[1]!));
}

/** The rows of docs/errors.md's table: `code` and status. */
function documentedCodes(markdown: string): Map<string, number> {
  const rows = [...markdown.matchAll(/^\| `(\w+)` \| (\d{3}) \|/gm)];
  return new Map(rows.map((m) => [m[1]!, Number(m[2])]));
}

/** What is wrong between the catalogue, the codes built in the sources and the docs' table. */
function catalogueProblems(
  catalogue: Readonly<Record<string, { status: number }>>,
  builtCodes: ReadonlyMap<string, string>,
  documented: ReadonlyMap<string, number>,
): string[] {
  const problems: string[] = [];
  for (const [code, file] of builtCodes)
    if (!Object.hasOwn(catalogue, code)) problems.push(`${code} (${file}) is not in the catalogue`);
  for (const [code, { status }] of Object.entries(catalogue)) {
    const said = documented.get(code);
    if (said === undefined) problems.push(`${code} is not documented`);
    else if (said !== status) problems.push(`${code} is documented as ${said}, the catalogue says ${status}`);
  }
  for (const code of documented.keys())
    if (!Object.hasOwn(catalogue, code)) problems.push(`${code} is documented but no longer exists`);
  return problems;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Every code built at an envelope site in src/, sync/ and firmware-bridge/, with a file that builds it. */
function builtCodes(): Map<string, string> {
  const codes = new Map<string, string>();
  for (const file of SOURCE_DIRS.flatMap((dir) => sourceFiles(join(ROOT, dir))))
    for (const code of codesIn(readFileSync(file, 'utf8'))) if (!codes.has(code)) codes.set(code, relative(ROOT, file));
  return codes;
}

describe('error catalogue', () => {
  it('gives each entry a 4xx or 5xx status, a message and the JSON envelope', () => {
    for (const [code, entry] of Object.entries(errorCatalogue)) {
      expect(entry.status, code).toBeGreaterThanOrEqual(400);
      expect(entry.status, code).toBeLessThan(600);
      const err = new AppError(code as ErrorCode, {
        path: '/x',
        resource: 'Thing',
        method: 'GET',
        allowed: 'POST',
        limit: 1,
        type: 't',
        expected: 'e',
        detail: 'd',
        identifier: 'R1',
        appId: '1',
        header: 'X-Svc-Signature',
        address: '10.0.0.9',
        seconds: 300,
        types: 'Guest (guest)',
        table: 'attendees',
      });
      expect(err.body.message, code).toBe(err.message);
      expect(err.message, code).not.toMatch(/\{\w+\}/);
    }
    expect(formatMessage('{resource} not found.', { resource: 'User' })).toBe('User not found.');
  });

  it("builds Laravel's 422 message: the first error and how many more", () => {
    expect(validationError({ a: ['A is bad.'] }).body.message).toBe('A is bad.');
    expect(validationError({ a: ['A is bad.', 'A again.'], b: ['B is bad.'] }).body.message).toBe(
      'A is bad. (and 2 more errors)',
    );
    expect(validationError({ a: ['A is bad.'], b: ['B is bad.'] }).body.message).toBe('A is bad. (and 1 more error)');
  });

  it('documents in docs/errors.md every code the catalogue and the envelope sites can answer, and no other', () => {
    const built = builtCodes();
    // The walk finds the sites it must: a plain throw, a body repeating its code, a declared condition.
    for (const code of ['route_not_found', 'edge_suspended', 'event_log_behind', 'reader_unassigned'])
      expect(built.has(code), code).toBe(true);
    const documented = documentedCodes(readFileSync(join(ROOT, 'docs', 'errors.md'), 'utf8'));
    expect(catalogueProblems(errorCatalogue, built, documented)).toEqual([]);
  });

  it('is linked from docs/rest.md and the README', () => {
    expect(readFileSync(join(ROOT, 'docs', 'rest.md'), 'utf8')).toContain('(errors.md)');
    expect(readFileSync(join(ROOT, 'README.md'), 'utf8')).toContain('(docs/errors.md)');
  });
});

describe('the catalogue check itself', () => {
  const docs = ['| code | status | when |', '|---|---|---|', '| `gone` | 404 | x |', '| `late` | 503 | y |'].join('\n');

  it('reads the codes built at each kind of envelope site', () => {
    const sample = [
      "throw new AppError(\n  'conflict', { detail });",
      "new AppError('edge_suspended', {}, { body: { code: 'edge_suspended', reason } })",
      "return { ok: false, refusal: refusal('reader_unassigned', id) };",
      "{ ok: false, refusal: { code: 'validation_failed', message } }",
      "busy: {\n  code: 'store_busy',\n  when: 'the lock',\n}",
      "ctx.body = { error: 'too_many_failures', message };",
      "ctx.addIssue({ code: 'custom', message });",
    ].join('\n');
    expect(codesIn(sample).sort()).toEqual(
      [
        'conflict',
        'edge_suspended',
        'edge_suspended',
        'reader_unassigned',
        'validation_failed',
        'store_busy',
        'too_many_failures',
      ].sort(),
    );
  });

  it('fails a code without docs, a documented code that no longer exists, a wrong status, a stray code', () => {
    const catalogue = { late: { status: 500 }, added: { status: 400 } };
    const built = new Map([['invented', 'src/x.ts']]);
    expect(catalogueProblems(catalogue, built, documentedCodes(docs))).toEqual([
      'invented (src/x.ts) is not in the catalogue',
      'late is documented as 503, the catalogue says 500',
      'added is not documented',
      'gone is documented but no longer exists',
    ]);
  });

  it('passes when the catalogue, the sources and the docs agree', () => {
    const catalogue = { gone: { status: 404 }, late: { status: 503 } };
    expect(catalogueProblems(catalogue, new Map([['late', 'src/x.ts']]), documentedCodes(docs))).toEqual([]);
  });
});
