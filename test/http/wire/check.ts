import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { errorCatalogue, type ErrorCode } from '../../../src/errors.js';
import type { TestResponse } from '../../helpers/appliance.js';

// Judges one live answer against the served OpenAPI document, as a generated client would read
// it: the status must be declared; the body must be of a declared media type and, for JSON,
// valid against its schema (ajv, JSON Schema 2020-12); every declared header must validate and
// be there when required; and every X-* or Retry-After header sent must be declared.

export interface Operation {
  id: string;
  method: string;
  path: string;
  spec: { responses: Record<string, Response>; [key: string]: unknown };
}

interface Response {
  content?: Record<string, { schema: object }>;
  headers?: Record<string, { required?: boolean; schema: { type?: string } }>;
}

/** Every operation of the document, by operation id. */
export function operationsOf(doc: {
  paths: Record<string, Record<string, Operation['spec'] & { operationId: string }>>;
}): Map<string, Operation> {
  const out = new Map<string, Operation>();
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, spec] of Object.entries(methods))
      out.set(spec.operationId, { id: spec.operationId, method: method.toUpperCase(), path, spec });
  }
  return out;
}

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats.default(ajv);

function valid(schema: object, value: unknown): string | null {
  return ajv.validate(schema, value) ? null : ajv.errorsText(ajv.errors, { dataVar: 'body' });
}

/** A header's value as its schema types it (headers travel as text). */
const typed = (value: string, schema: { type?: string }): unknown =>
  schema.type === 'integer' || schema.type === 'number' ? Number(value) : value;

/** What is wrong with a request that succeeded, by the document: a body it does not allow, or none where it requires one. */
export function requestProblems(operation: Operation, req: { json?: unknown; raw?: string; type?: string }): string[] {
  const body = operation.spec.requestBody as
    | { required?: boolean; content: Record<string, { schema: object }> }
    | undefined;
  const sent = req.json !== undefined || (req.raw !== undefined && req.raw !== '');
  if (!sent) return body?.required ? ['succeeded without the body the document requires'] : [];
  const type = req.json !== undefined ? 'application/json' : (req.type ?? '');
  const media = body?.content[type];
  if (!media) return [`succeeded with a ${type} body the document does not take`];
  if (type === 'text/csv') return [];
  const value =
    req.json ?? (type === 'application/json' ? JSON.parse(req.raw!) : Object.fromEntries(new URLSearchParams(req.raw)));
  const error = valid(media.schema, value);
  return error ? [`succeeded with a request body the document refuses: ${error.replace(/^body/, 'request')}`] : [];
}

/** What is wrong with this answer to this operation, by the document; empty when nothing is. */
export function problemsWith(operation: Operation, res: TestResponse): string[] {
  const declared = operation.spec.responses[String(res.status)];
  if (!declared)
    return [
      `answered ${res.status}, which the document does not declare (${Object.keys(operation.spec.responses).join(', ')})`,
    ];
  const problems: string[] = [];
  const type = (res.headers.get('content-type') ?? '').split(';')[0]!.trim();
  if (res.text === '') {
    if (declared.content)
      problems.push(
        `answered ${res.status} without a body; the document declares ${Object.keys(declared.content).join(', ')}`,
      );
  } else if (!declared.content?.[type]) {
    problems.push(
      `answered ${res.status} with ${type || 'an untyped'} body; the document declares ${declared.content ? Object.keys(declared.content).join(', ') : 'none'}`,
    );
  } else if (type === 'application/json') {
    const error = valid(declared.content[type]!.schema, res.body);
    if (error) problems.push(`${res.status} body: ${error} in ${res.text.slice(0, 300)}`);
  }
  const headers = declared.headers ?? {};
  const names = new Map(Object.keys(headers).map((h) => [h.toLowerCase(), h]));
  for (const [name, header] of Object.entries(headers)) {
    const value = res.headers.get(name);
    if (value === null) {
      if (header.required) problems.push(`${res.status} lacks the ${name} header the document requires`);
      continue;
    }
    const error = valid(header.schema, typed(value, header.schema));
    if (error) problems.push(`${res.status} header ${name}: ${value}: ${error}`);
  }
  res.headers.forEach((_value, name) => {
    if (/^(x-|retry-after$)/i.test(name) && !names.has(name.toLowerCase()))
      problems.push(`${res.status} sends ${name}, which the document does not declare`);
  });
  return problems;
}

/** Whether the answer names this error: the webhook envelope's `error`, or a REST message made from the code's template. */
export function namesError(res: TestResponse, code: ErrorCode): boolean {
  const body = res.body as { error?: unknown; message?: unknown } | undefined;
  if (body?.error !== undefined) return body.error === code;
  const template = errorCatalogue[code].message
    .split(/\{\w+\}/)
    .map((part) => part.replace(/[.*+?^$()|[\]\\]/g, '\\$&'));
  return typeof body?.message === 'string' && new RegExp(`^${template.join('.*')}$`, 's').test(body.message);
}
