// What the wizard offers, indexed from the two documents: the OpenAPI tags, each with its model
// and the operations callApi can call, and the socket events of the AsyncAPI document.
import type { ApiDocuments, AsyncApiDocument, OpenApiDocument } from './documents.js';
import { operationsOf } from './documents.js';
import { derivedOperationId, manifestPath, modelOf, permissionKeyOf } from './names.js';

export interface CatalogueOperation {
  /** The key in the dependency's `operations`: the document's operationId (the appliance names its operations
   * `access-points.index` ...), derived when it has none. */
  id: string;
  method: string;
  /** As the manifest writes it: `/v1/projects/{teamSlug}/{projectSlug}/access-points/{access_point}`. */
  path: string;
  /** As the document writes it: `/api/v1/projects/{teamSlug}/{projectSlug}/access-points/{accessPointId}`. */
  apiPath: string;
  summary: string;
}

export interface CatalogueTag {
  name: string;
  model: string;
  permissionKey: string;
  operations: CatalogueOperation[];
}

export interface SocketEvent {
  /** Bare (`AccessPointUpdated`), also when the appliance publishes it as
   * `<pusher.eventNamespace>\AccessPointUpdated`. */
  name: string;
  summary: string;
}

export interface Catalogue {
  tags: CatalogueTag[];
  events: SocketEvent[];
}

export function buildCatalogue(documents: ApiDocuments): Catalogue {
  return { tags: tagsOf(documents.openapi), events: socketEventsOf(documents.asyncapi) };
}

/** In the document's tag order; a tag none of whose operations callApi can call is left out. */
function tagsOf(openapi: OpenApiDocument): CatalogueTag[] {
  const byTag = new Map<string, CatalogueOperation[]>((openapi.tags ?? []).map((t) => [t.name, []]));
  const ids = new Set<string>();
  for (const [apiPath, pathItem] of Object.entries(openapi.paths)) {
    for (const [method, operation] of operationsOf(pathItem)) {
      const path = manifestPath(apiPath);
      if (path === null) continue;
      const id = uniqueId(operation.operationId || derivedOperationId(method, path), method, ids);
      const entry = { id, method, path, apiPath, summary: operation.summary ?? '' };
      for (const tag of operation.tags?.length ? operation.tags : ['default']) {
        if (!byTag.has(tag)) byTag.set(tag, []);
        byTag.get(tag)!.push(entry);
      }
    }
  }
  return [...byTag]
    .filter(([, operations]) => operations.length > 0)
    .map(([name, operations]) => ({ name, model: modelOf(name), permissionKey: permissionKeyOf(name), operations }));
}

function uniqueId(wanted: string, method: string, taken: Set<string>): string {
  let id = wanted;
  if (taken.has(id)) id = `${wanted}.${method}`;
  for (let n = 2; taken.has(id); n++) id = `${wanted}.${method}${n}`;
  taken.add(id);
  return id;
}

interface Message {
  name?: string;
  summary?: string;
}

/**
 * The events of the channels the `pusher` server carries (the WebSocket a plugin's socket joins),
 * each once: plain and sealed (encrypted-channel) messages share a name. Pusher protocol events
 * (`pusher_internal:member_added` ...) are the client library's business, not a dependency's.
 */
function socketEventsOf(asyncapi: AsyncApiDocument): SocketEvent[] {
  const events = new Map<string, SocketEvent & { exact: boolean }>();
  for (const channel of Object.values(asyncapi.channels ?? {})) {
    if (!isObject(channel) || !onPusher(channel)) continue;
    for (const ref of Object.values(isObject(channel.messages) ? channel.messages : {})) {
      const { key, value } = resolve(asyncapi, ref);
      const message = (isObject(value) ? value : {}) as Message;
      const published = message.name ?? key;
      if (!published || /^pusher(_internal)?:/.test(published)) continue;
      const name = published.slice(published.lastIndexOf('\\') + 1);
      const exact = key === name; // AccessGranted rather than AccessGrantedSealed: its summary is the plain one
      const known = events.get(name);
      if (!known || (exact && !known.exact)) events.set(name, { name, summary: message.summary ?? '', exact });
    }
  }
  return [...events.values()].map(({ exact: _exact, ...event }) => event);
}

function onPusher(channel: Record<string, unknown>): boolean {
  const servers = Array.isArray(channel.servers) ? channel.servers : [];
  return servers.some((s) => isObject(s) && s.$ref === '#/servers/pusher');
}

/** A `$ref` inside the document (`#/components/messages/AccessGranted`), followed until it is not one. */
function resolve(document: unknown, value: unknown, key = '', depth = 0): { key: string; value: unknown } {
  if (!isObject(value) || typeof value.$ref !== 'string' || !value.$ref.startsWith('#/') || depth > 8)
    return { key, value };
  const parts = value.$ref
    .slice(2)
    .split('/')
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  const target = parts.reduce<unknown>((node, part) => (isObject(node) ? node[part] : undefined), document);
  return resolve(document, target, parts.at(-1) ?? key, depth + 1);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
