// Text edits to a JSON document that touch only what they change. jsonc-parser's `modify` with
// formatting reformats the whole line an insertion starts on (a one-line neighbour such as
// `"settings": {"volume": 3},` would come out spread over lines), so these edits are computed from
// jsonc-parser's syntax tree and applied with its applyEdits, in the file's own style: its indent
// unit and line ends, one-line arrays and objects kept on one line.
import { type Edit, type Node, applyEdits, findNodeAtLocation, parseTree } from 'jsonc-parser';

export interface JsonStyle {
  /** One level of indent: the file's first indented line's (two spaces when nothing is indented). */
  unit: string;
  eol: string;
}

export function styleOf(text: string): JsonStyle {
  return { unit: /^([ \t]+)\S/m.exec(text)?.[1] ?? '  ', eol: text.includes('\r\n') ? '\r\n' : '\n' };
}

/** Appends to the array under `key` of the top-level object, adding the key when it is missing. */
export function appendToArray(text: string, key: string, value: unknown, style: JsonStyle): string {
  const root = rootOf(text);
  const array = findNodeAtLocation(root, [key]);
  if (array) {
    if (array.type !== 'array') throw new Error(`"${key}" is not an array`);
    const last = array.children?.at(-1);
    if (!last)
      return apply(text, array.offset, array.length, arrayText([value], lineIndent(text, array.offset), style));
    const item = oneLine(text, array)
      ? `, ${inline(value)}`
      : `,${style.eol}${lineIndent(text, last.offset)}${block(value, lineIndent(text, last.offset), style)}`;
    return apply(text, last.offset + last.length, 0, item);
  }
  const property = (indent: string) => `${JSON.stringify(key)}: ${arrayText([value], indent, style)}`;
  const lastProperty = root.children?.at(-1);
  if (!lastProperty)
    return apply(text, root.offset, root.length, `{${style.eol}${style.unit}${property(style.unit)}${style.eol}}`);
  if (oneLine(text, root))
    return apply(text, lastProperty.offset + lastProperty.length, 0, `, ${JSON.stringify(key)}: ${inline([value])}`);
  const indent = lineIndent(text, lastProperty.offset);
  return apply(text, lastProperty.offset + lastProperty.length, 0, `,${style.eol}${indent}${property(indent)}`);
}

/** Replaces element `index` of the array under `key` of the top-level object, in its place. */
export function replaceInArray(text: string, key: string, index: number, value: unknown, style: JsonStyle): string {
  const array = findNodeAtLocation(rootOf(text), [key]);
  const element = array?.children?.[index];
  if (!array || !element) throw new Error(`no "${key}"[${index}]`);
  const content = oneLine(text, array) ? inline(value) : block(value, lineIndent(text, element.offset), style);
  return apply(text, element.offset, element.length, content);
}

function rootOf(text: string): Node {
  const root = parseTree(text);
  if (root?.type !== 'object') throw new Error('the document is not a JSON object');
  return root;
}

/** Objects go one per line; an array of plain values stays on one line, as `["camera"]` is written. */
function arrayText(values: unknown[], indent: string, style: JsonStyle): string {
  if (values.every((v) => typeof v !== 'object' || v === null)) return inline(values);
  const inner = indent + style.unit;
  return `[${style.eol}${values.map((v) => inner + block(v, inner, style)).join(`,${style.eol}`)}${style.eol}${indent}]`;
}

/** Pretty-printed in the file's unit, its later lines at `indent`. */
function block(value: unknown, indent: string, style: JsonStyle): string {
  return JSON.stringify(value, null, style.unit)
    .split('\n')
    .join(style.eol + indent);
}

/** `{"a": 1, "b": [2]}`: strings are escaped by JSON.stringify, so no line break gets in. */
function inline(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(inline).join(', ')}]`;
  if (typeof value === 'object' && value !== null)
    return `{${Object.entries(value)
      .map(([k, v]) => `${JSON.stringify(k)}: ${inline(v)}`)
      .join(', ')}}`;
  return JSON.stringify(value);
}

function oneLine(text: string, node: Node): boolean {
  return !/[\r\n]/.test(text.slice(node.offset, node.offset + node.length));
}

/** The white space the line holding `offset` starts with. */
function lineIndent(text: string, offset: number): string {
  const start = Math.max(text.lastIndexOf('\n', offset - 1) + 1, 0);
  return /^[ \t]*/.exec(text.slice(start))![0];
}

function apply(text: string, offset: number, length: number, content: string): string {
  const edit: Edit = { offset, length, content };
  return applyEdits(text, [edit]);
}
