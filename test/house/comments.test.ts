import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

// Comments a reader of the repository can follow: they cite what the repository holds (docs/…, a
// file path), never an issue number, DESIGN.md or the spec files outside it; and a comment line
// fits the formatter's width (biome.json: 120), which the formatter itself leaves to us.

const root = join(import.meta.dirname, '..', '..');
const WIDTH = 120;
/** Citations of what a reader does not have. `aedes issue #1060` (an upstream issue) does not match. */
const FOREIGN = [/\bissues? \d+/i, /\bDESIGN(\.md|:)/, /shared\/spec\//, /event-platform-api\.md/];

interface Comment {
  line: number;
  text: string;
  /** The whole line is comment (not code with a comment after it). */
  whole: boolean;
}

/** Files under `dir` (relative to the root) whose names end with one of `ends`. */
function files(dir: string, ends: readonly string[]): string[] {
  const found: string[] = [];
  const walk = (path: string) => {
    for (const name of readdirSync(path)) {
      if (name === 'node_modules' || name === 'dist') continue;
      const full = join(path, name);
      if (statSync(full).isDirectory()) walk(full);
      else if (ends.some((end) => name.endsWith(end))) found.push(full);
    }
  };
  walk(join(root, dir));
  return found;
}

const REGEX_BEFORE = new Set([
  '(',
  ',',
  '=',
  ':',
  '[',
  '!',
  '&',
  '|',
  '?',
  '{',
  '}',
  ';',
  '+',
  '-',
  '*',
  '%',
  '<',
  '>',
  '~',
  '^',
]);

/** The comments of TypeScript / JavaScript source, line by line; strings, templates and regex literals skipped. */
function commentsOf(source: string, firstLine = 1): Comment[] {
  const comments: Comment[] = [];
  let line = firstLine;
  let i = 0;
  let lineStart = 0;
  const templates: number[] = []; // brace depth of each `${` we are inside
  let lastSignificant = '';
  const isWholeLine = (at: number) => source.slice(lineStart, at).trim() === '';
  const push = (text: string, whole: boolean) => {
    comments.push({ line, text, whole });
  };
  const newline = () => {
    line++;
    lineStart = i + 1;
  };
  const skipTemplate = () => {
    // i is just past a backtick or a `}` that closes `${`
    while (i < source.length) {
      const c = source[i];
      if (c === '\\') {
        i += 2;
        continue;
      }
      if (c === '\n') newline();
      if (c === '`') {
        i++;
        return;
      }
      if (c === '$' && source[i + 1] === '{') {
        templates.push(0);
        i += 2;
        return;
      }
      i++;
    }
  };
  while (i < source.length) {
    const c = source[i] ?? '';
    if (c === '\n') {
      newline();
      i++;
      continue;
    }
    if (c === '/' && source[i + 1] === '/') {
      const end = source.indexOf('\n', i);
      const stop = end === -1 ? source.length : end;
      push(source.slice(i, stop), isWholeLine(i));
      i = stop;
      continue;
    }
    if (c === '/' && source[i + 1] === '*') {
      const whole = isWholeLine(i);
      const end = source.indexOf('*/', i + 2);
      const stop = end === -1 ? source.length : end + 2;
      const after = source.slice(stop, source.indexOf('\n', stop) === -1 ? source.length : source.indexOf('\n', stop));
      const parts = source.slice(i, stop).split('\n');
      parts.forEach((part, k) => {
        push(part, k === 0 ? whole : true);
        if (k < parts.length - 1) line++;
      });
      if (parts.length > 1) lineStart = source.lastIndexOf('\n', stop) + 1;
      if (after.trim() !== '' && comments.length > 0) {
        const last = comments[comments.length - 1];
        if (last) last.whole = false;
      }
      i = stop;
      continue;
    }
    if (c === "'" || c === '"') {
      i++;
      while (i < source.length && source[i] !== c && source[i] !== '\n') i += source[i] === '\\' ? 2 : 1;
      i++;
      lastSignificant = c;
      continue;
    }
    if (c === '`') {
      i++;
      skipTemplate();
      lastSignificant = '`';
      continue;
    }
    if (
      c === '/' &&
      (lastSignificant === '' ||
        REGEX_BEFORE.has(lastSignificant) ||
        /\b(return|typeof|in|of)$/.test(source.slice(lineStart, i).trimEnd()))
    ) {
      // a regex literal: to its closing slash, not one inside a character class
      i++;
      let inClass = false;
      while (i < source.length && source[i] !== '\n') {
        const r = source[i];
        if (r === '\\') {
          i += 2;
          continue;
        }
        if (r === '[') inClass = true;
        else if (r === ']') inClass = false;
        else if (r === '/' && !inClass) break;
        i++;
      }
      i++;
      lastSignificant = '/';
      continue;
    }
    const depth = templates.length - 1;
    if (depth >= 0) {
      if (c === '{') templates[depth] = (templates[depth] ?? 0) + 1;
      if (c === '}') {
        if (templates[depth] === 0) {
          templates.pop();
          i++;
          skipTemplate();
          lastSignificant = '`';
          continue;
        }
        templates[depth] = (templates[depth] ?? 1) - 1;
      }
    }
    if (c.trim() !== '') lastSignificant = /[\w$]/.test(c) ? 'a' : c;
    i++;
  }
  return comments;
}

/** A .vue file's comments: its scripts' and its template's `<!-- -->`. */
function vueComments(source: string): Comment[] {
  const comments: Comment[] = [];
  const lineOf = (at: number) => source.slice(0, at).split('\n').length;
  for (const match of source.matchAll(/<script[^>]*>([\s\S]*?)<\/script>/g)) {
    const start = (match.index ?? 0) + match[0].indexOf('>') + 1;
    comments.push(...commentsOf(match[1] ?? '', lineOf(start)));
  }
  for (const match of source.matchAll(/<!--([\s\S]*?)-->/g)) {
    comments.push({ line: lineOf(match.index ?? 0), text: match[0], whole: true });
  }
  return comments;
}

function commentsOfFile(path: string): Comment[] {
  const source = readFileSync(path, 'utf8');
  return path.endsWith('.vue') ? vueComments(source) : commentsOf(source);
}

const SOURCE_ENDS = ['.ts', '.mts', '.mjs', '.js', '.vue'];

describe('comments', () => {
  it('reads comments apart from strings, templates and regex literals', () => {
    const found = commentsOf(
      [
        "const a = 'issue 1 // not a comment'; // a comment",
        `const b = \`x \${c /* in code */} // issue 2\`;`,
        'const r = /\\/\\/ issue 3/; /* block',
        ' * more */',
      ].join('\n'),
    );
    expect(found.map((c) => [c.line, c.text, c.whole])).toEqual([
      [1, '// a comment', false],
      [2, '/* in code */', false],
      [3, '/* block', false],
      [4, ' * more */', true],
    ]);
  });

  it('cite no issue number, DESIGN.md or spec file in src/, sync/, firmware-bridge/ and console/src', () => {
    const found: string[] = [];
    for (const dir of ['src', 'sync', 'firmware-bridge', 'console/src']) {
      for (const path of files(dir, SOURCE_ENDS)) {
        for (const comment of commentsOfFile(path)) {
          if (FOREIGN.some((pattern) => pattern.test(comment.text)))
            found.push(`${relative(root, path)}:${comment.line}: ${comment.text.trim()}`);
        }
      }
    }
    expect(found).toEqual([]);
  });

  it('fit in 120 characters a line in src/, sync/ and firmware-bridge/', () => {
    const found: string[] = [];
    for (const dir of ['src', 'sync', 'firmware-bridge']) {
      for (const path of files(dir, SOURCE_ENDS)) {
        const lines = readFileSync(path, 'utf8').split('\n');
        for (const comment of commentsOfFile(path)) {
          const text = lines[comment.line - 1] ?? '';
          if (comment.whole && text.length > WIDTH)
            found.push(`${relative(root, path)}:${comment.line}: ${text.length} characters`);
        }
      }
    }
    expect(found).toEqual([]);
  });
});

describe('docs', () => {
  it('cite no issue number, DESIGN.md or spec file in docs/*.md and README.md', () => {
    const found: string[] = [];
    const pages = [...files('docs', ['.md']), join(root, 'README.md')];
    for (const path of pages) {
      readFileSync(path, 'utf8')
        .split('\n')
        .forEach((text, k) => {
          if (FOREIGN.some((pattern) => pattern.test(text)))
            found.push(`${relative(root, path)}:${k + 1}: ${text.trim()}`);
        });
    }
    expect(found).toEqual([]);
  });
});
