// How deep the JSON an outside party sends may nest (docs/rest.md: Bodies; docs/security.md:
// Local and device inputs). V8 parses JSON nested 200,000 levels deep without complaint, but
// what walks the value afterwards recursively (JSON.stringify storing an attendee's `extra`,
// broadcasting, logging; zod) runs out of stack: a RangeError, a 500. RFC 8259 section 9 lets a
// parser limit the depth of nesting; every JSON entry point (HTTP bodies, the sync protocol,
// MQTT payloads, WebSocket messages, import files) parses through parseJson, which counts the
// nesting in one pass over the text before JSON.parse sees it, without recursion.

/** Arrays and objects inside one another, at most: far beyond any document of ours or a partner's. */
export const MAX_JSON_DEPTH = 64;
/** The sync protocol carries stored values (an attendee's
 * `extra`, up to MAX_JSON_DEPTH deep) inside its own envelope. */
export const SYNC_JSON_DEPTH = 2 * MAX_JSON_DEPTH;

export class JsonDepthError extends SyntaxError {
  constructor(readonly maxDepth: number) {
    super(`it nests arrays and objects deeper than ${maxDepth} levels`);
    this.name = 'JsonDepthError';
  }
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const OPEN_OBJECT = 0x7b;
const CLOSE_ARRAY = 0x5d;
const CLOSE_OBJECT = 0x7d;

/** Whether `text` opens more than `max` arrays and objects inside one another (brackets in strings are text). Text
 * that is not JSON may answer either way: JSON.parse judges it. */
export function nestsDeeperThan(text: string, max: number): boolean {
  if (text.length <= max) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > max) return true;
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) depth--;
  }
  return false;
}

/** JSON.parse, refusing text nested deeper than `maxDepth` with a
 * JsonDepthError (a SyntaxError, as JSON.parse's own refusals are). */
export function parseJson(text: string, maxDepth = MAX_JSON_DEPTH): unknown {
  if (nestsDeeperThan(text, maxDepth)) throw new JsonDepthError(maxDepth);
  return JSON.parse(text);
}
