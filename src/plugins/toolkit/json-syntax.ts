// Where a JSON text goes wrong, by line and column: JSON.parse words its errors per engine and
// Node 20 often gives no position, so a strict scan (RFC 8259) finds the place. Browser-safe.

/** JSON.parse words its errors per engine (Node 20 often gives no position), so a strict scan finds the place. */
export function invalidJson(text: string, err: unknown): string {
  let found: SyntaxProblem | undefined;
  try {
    found = findSyntaxError(text);
  } catch {
    found = undefined; // nested deeper than the stack: fall back to the engine's words
  }
  if (found === undefined) return `invalid JSON: ${err instanceof Error ? err.message : String(err)}`;
  const lines = text.slice(0, found.at).split('\n');
  return `invalid JSON at line ${lines.length}, column ${(lines.at(-1)?.length ?? 0) + 1}: ${found.problem}`;
}

interface SyntaxProblem {
  at: number;
  problem: string;
}

const ESCAPE = /["\\/bfnrt]|u[0-9a-fA-F]{4}/y;
const LITERAL = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null/y;

/** The offset and nature of the first JSON syntax error (RFC 8259), or undefined if there is none. */
function findSyntaxError(text: string): SyntaxProblem | undefined {
  let i = 0;
  const fail = (wanted: string): SyntaxProblem => ({
    at: i,
    problem: `expected ${wanted}, got ${i < text.length ? JSON.stringify(text[i]) : 'the end of the text'}`,
  });
  const space = (): void => {
    while (/[ \t\n\r]/.test(text[i] ?? '')) i++;
  };
  const sticky = (pattern: RegExp, at: number): boolean => {
    pattern.lastIndex = at;
    if (!pattern.test(text)) return false;
    i = pattern.lastIndex;
    return true;
  };
  const string = (): SyntaxProblem | undefined => {
    i++;
    while (i < text.length) {
      const c = text[i]!;
      if (c === '"') {
        i++;
        return undefined;
      }
      if (c < ' ') return fail("a closing '\"' (control characters in strings must be escaped)");
      if (c !== '\\') i++;
      else if (!sticky(ESCAPE, i + 1)) {
        i++;
        return fail('an escape such as \\n, \\" or \\u00e9');
      }
    }
    return fail("a closing '\"'");
  };
  const list = (close: string, item: () => SyntaxProblem | undefined): SyntaxProblem | undefined => {
    i++;
    space();
    if (text[i] === close) {
      i++;
      return undefined;
    }
    for (;;) {
      const problem = item();
      if (problem) return problem;
      space();
      if (text[i] !== ',' && text[i] !== close) return fail(`',' or '${close}'`);
      if (text[i++] === close) return undefined;
      space();
    }
  };
  const member = (): SyntaxProblem | undefined => {
    if (text[i] !== '"') return fail('a double-quoted property name');
    const problem = string();
    if (problem) return problem;
    space();
    if (text[i] !== ':') return fail("':' after the property name");
    i++;
    return value();
  };
  const value = (): SyntaxProblem | undefined => {
    space();
    if (text[i] === '{') return list('}', member);
    if (text[i] === '[') return list(']', value);
    if (text[i] === '"') return string();
    return sticky(LITERAL, i) ? undefined : fail('a value (object, array, string, number, true, false or null)');
  };
  const problem = value();
  if (problem) return problem;
  space();
  return i < text.length ? fail('the end of the text after the JSON value') : undefined;
}
