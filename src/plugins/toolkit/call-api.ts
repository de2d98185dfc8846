// callApi(operationId, identifier, additionalData) (spec: Endpoints; docs/plugins.md "callApi"): the
// dependency is found by its identifier and the operation in ITS `operations` map — the manifest
// is the contract, so an operation the plugin did not declare is never called. What is known wrong
// before asking is refused before any request: an unknown identifier or operation, a path
// parameter missing. What the token may do is the appliance's to say (its 401 / 403 come back as
// `api` errors): the manifest's top-level `permissions` are the device capabilities the contract names
// (`camera`, `bluetooth`, `notifications`), not a copy of its dependencies'. {teamSlug} and
// {projectSlug} come from the plugin's context, other path parameters from additionalData; what is
// left of additionalData goes as the query (GET, DELETE) or as the JSON body. A list is read to
// its end (call-api-pages.ts) unless the call names a page. Browser-safe: fetch only.
import { PluginApiError } from './call-api-error.js';
import { asksForOnePage, everyItem, wholeEnvelope } from './call-api-pages.js';
import type { PluginDependency } from './types.js';

export { PluginApiError, type PluginApiErrorCode } from './call-api-error.js';
export { CALL_API_LIMITS } from './call-api-pages.js';

export interface PluginContext {
  /** The appliance: `http://box:8080` (the dev server proxies it); '' for the page's own origin. */
  baseUrl: string;
  teamSlug: string;
  projectSlug: string;
  /** The plugin's API token (Bearer), or null for a cookie session. */
  token: string | null;
  fetch?: typeof fetch;
}

export interface CallApiSource {
  dependencies: readonly PluginDependency[];
}

export interface CallApiOptions {
  /**
   * Resolve to the whole answer instead of its `data`: what an answer carries beside it, such as a
   * secret shown once (`{data, secret}`) or a page's `meta` (its total). A whole list (no page asked)
   * resolves to `{data: [every item], meta: {total, pages, ...}}` (call-api-pages.ts wholeEnvelope).
   */
  envelope?: boolean;
}

const OPERATION = /^(get|post|put|patch|delete):(\/\S*)$/;

/** The XSRF-TOKEN cookie's value (URL-decoded, as Laravel sets it), or null outside a page or without it. */
export function xsrfCookie(
  cookies: string | undefined = typeof document === 'undefined' ? undefined : document.cookie,
): string | null {
  const raw = cookies ? /(?:^|;\s*)XSRF-TOKEN=([^;]*)/.exec(cookies)?.[1] : undefined;
  if (!raw) return null;
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/** callApi bound to a context and to where the manifest's
 * dependencies are read (live: a reloaded manifest applies at once). */
export function createCallApi(context: () => PluginContext, source: () => CallApiSource) {
  return async function callApi<T = unknown>(
    operationId: string,
    identifier: string,
    additionalData: Record<string, unknown> = {},
    options: CallApiOptions = {},
  ): Promise<T> {
    const { dependencies } = source();
    const dependency = dependencies.find((d) => d.identifier === identifier);
    if (!dependency)
      throw new PluginApiError(
        'unknown_dependency',
        `No dependency "${identifier}" in app-manifest.json (declared: ${dependencies.map((d) => d.identifier).join(', ') || 'none'}).`,
      );
    const operation = dependency.operations[operationId];
    if (operation === undefined) {
      throw new PluginApiError(
        'unknown_operation',
        `Dependency "${identifier}" has no operation "${operationId}" (declared: ${Object.keys(dependency.operations).join(', ') || 'none'}).`,
      );
    }
    const match = OPERATION.exec(operation);
    if (!match)
      throw new PluginApiError(
        'invalid_operation',
        `Operation "${operationId}" of "${identifier}" is "${operation}": expected "<method>:<path>".`,
      );

    const ctx = context();
    const method = match[1]!.toUpperCase();
    const rest: Record<string, unknown> = { ...additionalData };
    const path = match[2]!.replace(/\{([^}]+)\}/g, (_all, name: string) => {
      const value = name === 'teamSlug' ? ctx.teamSlug : name === 'projectSlug' ? ctx.projectSlug : rest[name];
      if (value === undefined || value === null || value === '') {
        throw new PluginApiError(
          'missing_parameter',
          `Operation "${operationId}" of "${identifier}" needs the path parameter "${name}" in additionalData.`,
        );
      }
      delete rest[name];
      return encodeURIComponent(String(value));
    });
    const request = { ctx, method, path };
    if (method === 'GET' && !asksForOnePage(rest)) {
      // Every item, page after page: a list the plugin did not ask a page of is never cut short.
      const whole = await everyItem((page) => send(request, { ...rest, ...page }), `${operationId} of "${identifier}"`);
      if (whole.kind === 'answer') return answerOf<T>(whole.json, options);
      return (options.envelope ? wholeEnvelope(whole) : whole.items) as T;
    }
    return answerOf<T>(await send(request, rest), options);
  };
}

/** The answer's `data` (spec: "Returns the data member"), or the
 * whole answer with {envelope: true}; a 204 resolves to null. */
function answerOf<T>(json: unknown, options: CallApiOptions): T {
  if (options.envelope) return json as T;
  return (typeof json === 'object' && json !== null && 'data' in json ? (json as { data: unknown }).data : json) as T;
}

/** One request: `data` as the query (GET, DELETE) or the JSON body;
 * resolves to the parsed answer, rejects with an `api` or `network` error. */
async function send(
  request: { ctx: PluginContext; method: string; path: string },
  data: Record<string, unknown>,
): Promise<unknown> {
  const { ctx, method, path } = request;
  // Paths are relative to the API's version root (/v1/...), which the appliance serves under /api.
  let url = `${ctx.baseUrl.replace(/\/+$/, '')}/api${path}`;
  const headers: Record<string, string> = { accept: 'application/json' };
  if (ctx.token) headers.authorization = `Bearer ${ctx.token}`;
  else if (method !== 'GET') {
    // A cookie session (docs/auth.md "Cookie sessions"): every POST, PUT, PATCH and DELETE echoes
    // the readable XSRF-TOKEN cookie in X-XSRF-TOKEN, as Axios does, or the appliance answers 419.
    const xsrf = xsrfCookie();
    if (xsrf) headers['x-xsrf-token'] = xsrf;
  }
  let body: string | undefined;
  if (method === 'GET' || method === 'DELETE') {
    const query = new URLSearchParams();
    for (const [key, value] of Object.entries(data)) {
      if (value === undefined) continue;
      if (Array.isArray(value)) for (const v of value) query.append(`${key}[]`, String(v));
      else query.append(key, typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value));
    }
    if ([...query].length > 0) url += `?${query}`;
  } else {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(data);
  }

  let res: Response;
  try {
    res = await (ctx.fetch ?? fetch)(url, {
      method,
      headers,
      ...(body === undefined ? {} : { body }),
      credentials: ctx.token ? 'omit' : 'include',
    });
  } catch (err) {
    throw new PluginApiError('network', `${method} ${path} did not reach the appliance: ${(err as Error).message}`);
  }
  const text = await res.text();
  let json: unknown = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = text;
  }
  if (!res.ok) {
    const envelope = (typeof json === 'object' && json !== null ? json : {}) as { message?: unknown; errors?: unknown };
    const message =
      typeof envelope.message === 'string' ? envelope.message : `${method} ${path} answered ${res.status}`;
    const errors =
      typeof envelope.errors === 'object' && envelope.errors !== null
        ? (envelope.errors as Record<string, string[]>)
        : {};
    throw new PluginApiError('api', message, res.status, errors, json);
  }
  return json;
}
