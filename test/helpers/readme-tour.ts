// The README's "A five-minute tour" read as a script (test/operations/readme-tour.test.ts): its
// numbered steps, each step's commands, and the answer each command shows. The README's own
// conventions, stated above the block: a `# {...}` line right after a command is what it answers,
// `…` (or `...`) stands for what differs from run to run or is elided, and
// `export NAME='…'   # path above` takes that field of the answer above. An indented `#     note`
// is prose. Any other comment is refused, so the block cannot say something the test skips.

export interface TourUnit {
  /** 1-based line in the README, for messages. */
  line: number;
  /** The command as bash runs it (continuation lines joined as written). */
  command: string;
  /** Answer lines shown after it, without their `# `. */
  expected: string[];
  /** `export NAME='…'   # path above`: NAME takes `path` of the answer above. */
  takes?: { name: string; path: string };
}

export interface TourStep {
  n: number;
  title: string;
  units: TourUnit[];
}

const STEP = /^# (\d+)\. (.+)$/;
const TAKES = /^export (\w+)='[^']*'\s+#\s+([\w.[\]]+) above\b/;

/** The tour's steps, in order; throws naming the line when the block breaks its own conventions. */
export function tourSteps(readme: string): TourStep[] {
  const start = readme.indexOf('\n## A five-minute tour\n');
  if (start < 0) throw new Error('README.md has no "## A five-minute tour" section');
  const end = readme.indexOf('\n## ', start + 1);
  const firstLine = readme.slice(0, start).split('\n').length;
  const lines = readme.slice(start, end < 0 ? undefined : end).split('\n');
  const steps: TourStep[] = [];
  let inBlock = false;
  let last: TourUnit | null = null; // the unit answer lines attach to, until a blank line or a note
  let titleOpen = false; // the line before was the step's title or goes on with it
  for (let i = 0; i < lines.length; i++) {
    const text = lines[i]!;
    const line = firstLine + i;
    if (/^```/.test(text)) {
      inBlock = !inBlock && text.trim() === '```sh';
      last = null;
      continue;
    }
    if (!inBlock) continue;
    const step = STEP.exec(text);
    const inTitle: boolean = titleOpen;
    titleOpen = step !== null || (inTitle && /^#\s{2,}/.test(text));
    if (step) {
      steps.push({ n: Number(step[1]), title: step[2]!.trim(), units: [] });
      last = null;
    } else if (inTitle && /^#\s{2,}/.test(text)) {
      steps.at(-1)!.title += ` ${text.slice(1).trim()}`; // the title goes on over indented lines
    } else if (text.trim() === '' || /^#\s{2,}/.test(text)) {
      last = null;
    } else if (text.startsWith('# ')) {
      if (!last)
        throw new Error(
          `README.md line ${line}: a "# " line that follows no command (an answer must come right after its command; notes are indented "#     ")`,
        );
      last.expected.push(text.slice(2));
    } else if (text.startsWith('#')) {
      throw new Error(`README.md line ${line}: a comment that is neither a step, an answer nor an indented note`);
    } else {
      const current = steps.at(-1);
      if (!current) throw new Error(`README.md line ${line}: a command before step 1`);
      let command = text;
      while (command.endsWith('\\') && i + 1 < lines.length) command = `${command}\n${lines[++i]}`;
      const takes = TAKES.exec(command);
      last = { line, command, expected: [], ...(takes ? { takes: { name: takes[1]!, path: takes[2]! } } : {}) };
      current.units.push(last);
    }
  }
  return steps;
}

/** `path` (`token`, `data.reader_token`, `data[0].otp`) of `value`, or undefined. */
export function fieldAt(value: unknown, path: string): unknown {
  let at = value;
  for (const key of path.replace(/\[(\d+)\]/g, '.$1').split('.')) {
    if (at === null || typeof at !== 'object') return undefined;
    at = (at as Record<string, unknown>)[key];
  }
  return at;
}

/** The JSON documents an output holds: each line that is one, and each pretty-printed block (the CLI's). */
export function jsonDocuments(output: string): unknown[] {
  const docs: unknown[] = [];
  const lines = output.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const json = parseJson(line.trim());
    if (json !== undefined) docs.push(json);
    else if (line === '{' || line === '[') {
      const close = line === '{' ? '}' : ']';
      const endAt = lines.indexOf(close, i + 1);
      const block = endAt < 0 ? undefined : parseJson(lines.slice(i, endAt + 1).join('\n'));
      if (block !== undefined) docs.push(block);
    }
  }
  return docs;
}

function parseJson(text: string): unknown {
  if (!/^[[{]/.test(text)) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

const MORE = '\u0000more';
const ANY = '\u0000any';
const ELLIPSIS = /^(\.\.\.|…)/;

/** Shown JSON with its ellipses made JSON: `...` ending an object's keys or an array's items
 * allows more of them; `…` as a value is any value; inside a string it is a wildcard (glob()). */
function shownJson(text: string): unknown {
  let out = '';
  let inString = false;
  const open: string[] = [];
  let previous = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (inString) {
      out += c;
      if (c === '\\') out += text[++i] ?? '';
      else if (c === '"') inString = false;
      continue;
    }
    const ellipsis = ELLIPSIS.exec(text.slice(i));
    if (ellipsis) {
      if (previous === ':') out += JSON.stringify(ANY);
      else if (open.at(-1) === '{') out += `${JSON.stringify(MORE)}:0`;
      else out += JSON.stringify(MORE);
      i += ellipsis[0].length - 1;
      previous = '"';
      continue;
    }
    if (c === '"') inString = true;
    if (c === '{' || c === '[') open.push(c);
    if (c === '}' || c === ']') open.pop();
    if (!/\s/.test(c)) previous = c;
    out += c;
  }
  return JSON.parse(out) as unknown;
}

const glob = (shown: string) =>
  new RegExp(
    `^${shown
      .split(/\.\.\.|…/)
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
    's',
  );

/** Whether `actual` has what `shown` shows: the same keys (more only where `...` says so), the same values. */
export function jsonMatches(shown: unknown, actual: unknown): boolean {
  if (shown === ANY) return true;
  if (typeof shown === 'string') return typeof actual === 'string' && glob(shown).test(actual);
  if (Array.isArray(shown)) {
    if (!Array.isArray(actual)) return false;
    const more = shown.at(-1) === MORE;
    const items = more ? shown.slice(0, -1) : shown;
    if (more ? actual.length < items.length : actual.length !== items.length) return false;
    return items.every((item, i) => jsonMatches(item, actual[i]));
  }
  if (shown !== null && typeof shown === 'object') {
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return false;
    const keys = Object.keys(shown).filter((k) => k !== MORE);
    if (!(MORE in shown) && Object.keys(actual).length !== keys.length) return false;
    return keys.every(
      (k) => k in actual && jsonMatches((shown as Record<string, unknown>)[k], (actual as Record<string, unknown>)[k]),
    );
  }
  return shown === actual;
}

/** Whether some line (or pretty-printed document) of `output` is the shown answer: JSON after an
 * optional text prefix (mosquitto_sub -v prints the topic first), compared as JSON; else the line as a glob. */
export function answerShown(shown: string, output: string): boolean {
  const at = shown.search(/[[{]/);
  let json: unknown;
  try {
    json = at < 0 ? undefined : shownJson(shown.slice(at));
  } catch {
    json = undefined;
  }
  const lines = output.split(/\r?\n/).map((l) => l.trim());
  if (json === undefined) return lines.some((line) => glob(shown).test(line));
  const prefix = shown.slice(0, at);
  if (prefix === '') return jsonDocuments(output).some((doc) => jsonMatches(json, doc));
  return lines.some(
    (line) => line.startsWith(prefix) && jsonDocuments(line.slice(prefix.length)).some((doc) => jsonMatches(json, doc)),
  );
}
