// Loads the appliance's API descriptions: GET /api/v1/openapi.json (OpenAPI 3.1, http/openapi.ts)
// and GET /api/v1/asyncapi.json (AsyncAPI 3, http/asyncapi.ts). Both are public routes
// (http/routes/operations.ts); a token is sent as a bearer when given, for a box put behind a proxy
// that wants one. Only the parts the wizard reads are checked, so a newer document still loads.
import { z } from 'zod';
import { CliError } from '../../cli/commands.js';

const operationSchema = z.looseObject({
  operationId: z.string().optional(),
  tags: z.array(z.string()).optional(),
  summary: z.string().optional(),
});

export const openApiSchema = z.looseObject({
  openapi: z.string().regex(/^3\./),
  tags: z.array(z.looseObject({ name: z.string() })).optional(),
  paths: z.record(z.string(), z.record(z.string(), z.unknown())),
});

export const asyncApiSchema = z.looseObject({
  asyncapi: z.string().regex(/^3\./),
  servers: z.record(z.string(), z.unknown()).optional(),
  channels: z.record(z.string(), z.unknown()).optional(),
});

export type OpenApiDocument = z.infer<typeof openApiSchema>;
export type OpenApiOperation = z.infer<typeof operationSchema>;
export type AsyncApiDocument = z.infer<typeof asyncApiSchema>;

export interface ApiDocuments {
  openapi: OpenApiDocument;
  asyncapi: AsyncApiDocument;
}

export interface LoadOptions {
  url: string;
  token?: string | undefined;
  fetch?: typeof fetch;
  timeoutMs?: number;
}

export const DEFAULT_URL = 'http://127.0.0.1:8080';
const METHODS = new Set(['get', 'post', 'put', 'patch', 'delete']);

/** The operations of a path item (its parameters, servers and summary are not operations). */
export function operationsOf(pathItem: Record<string, unknown>): [method: string, operation: OpenApiOperation][] {
  return Object.entries(pathItem).flatMap(([method, value]) => {
    if (!METHODS.has(method)) return [];
    const parsed = operationSchema.safeParse(value);
    return parsed.success ? [[method, parsed.data] as [string, OpenApiOperation]] : [];
  });
}

export async function loadDocuments(options: LoadOptions): Promise<ApiDocuments> {
  let base: URL;
  try {
    base = new URL(options.url);
  } catch {
    throw new CliError(`--url ${options.url} is not a URL (for example ${DEFAULT_URL})`);
  }
  const [openapi, asyncapi] = await Promise.all([
    fetchDocument(base, 'openapi.json', openApiSchema, 'an OpenAPI 3 document', options),
    fetchDocument(base, 'asyncapi.json', asyncApiSchema, 'an AsyncAPI 3 document', options),
  ]);
  return { openapi, asyncapi };
}

async function fetchDocument<T>(
  base: URL,
  name: string,
  schema: z.ZodType<T>,
  what: string,
  options: LoadOptions,
): Promise<T> {
  const url = new URL(`api/v1/${name}`, base.href.endsWith('/') ? base : `${base.href}/`).href;
  const headers: Record<string, string> = { accept: 'application/json' };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  let res: Response;
  try {
    res = await (options.fetch ?? fetch)(url, { headers, signal: AbortSignal.timeout(options.timeoutMs ?? 10_000) });
  } catch (err) {
    throw new CliError(`cannot reach the appliance at ${base.origin}: ${reason(err)} (is it running? pass --url)`);
  }
  const text = await res.text();
  if (!res.ok) {
    const hint = res.status === 401 || res.status === 403 ? ' (pass --token or set GATEHOUSE_TOKEN)' : '';
    throw new CliError(`GET ${url} answered ${res.status}${messageOf(text)}${hint}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new CliError(`GET ${url} did not answer JSON: is ${base.origin} a Gatehouse appliance?`);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success)
    throw new CliError(`GET ${url} is not ${what}: ${parsed.error.issues[0]?.message ?? 'unexpected shape'}`);
  return parsed.data;
}

/** fetch says `fetch failed` and keeps the why (ECONNREFUSED, a timeout) in its cause. */
function reason(err: unknown): string {
  const error = err as Error & { cause?: { message?: string; code?: string } };
  if (error.name === 'TimeoutError') return 'no answer in time';
  return error.cause?.message ?? error.cause?.code ?? error.message;
}

function messageOf(text: string): string {
  try {
    const body = JSON.parse(text) as { message?: unknown };
    return typeof body.message === 'string' ? `: ${body.message}` : '';
  } catch {
    return '';
  }
}
