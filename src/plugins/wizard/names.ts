// How the wizard names what it writes into a dependency (docs/plugins.md; contract:
// "Dependency object", "Endpoints"): operation paths relative to the API version root with the
// project's parameters as {teamSlug}/{projectSlug} (callApi fills those from the plugin's context),
// other path parameters under a readable snake_case name ({accessPointId} → {access_point}, the
// key the plugin passes in additionalData), and a tag's model and permission key.

/** `/api/v1/projects/{a}/{b}` and below: a project's resources, whatever the document calls the two slugs. */
const PROJECT_PREFIX = /^\/v1\/projects\/\{[^}]+\}\/\{[^}]+\}(?=\/|$)/;
const PROJECT_ROOT = '/v1/projects/{teamSlug}/{projectSlug}';

/** `accessPointId` → `access_point`, `teamSlug` → `team_slug`, `id` stays `id`. */
export function readableParameter(name: string): string {
  const snake = snakeCase(name);
  const bare = snake.replace(/_id$/, '');
  return bare === '' ? snake : bare;
}

export function snakeCase(text: string): string {
  return text
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/[^A-Za-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .toLowerCase();
}

/**
 * The operation's path as the manifest writes it, or null when callApi cannot call it: callApi
 * sends `<baseUrl>/api<path>`, so only what the appliance serves under `/api/` can be a
 * dependency's operation (not /health, /webhook/v1/..., the Pusher HTTP API).
 */
export function manifestPath(apiPath: string): string | null {
  if (!apiPath.startsWith('/api/')) return null;
  const relative = apiPath.slice('/api'.length);
  const prefix = PROJECT_PREFIX.exec(relative);
  const head = prefix ? PROJECT_ROOT : '';
  const tail = prefix ? relative.slice(prefix[0].length) : relative;
  // Never {teamSlug}/{projectSlug} outside the prefix: callApi would fill them from the context.
  const taken = new Set(['teamSlug', 'projectSlug']);
  const renamed = tail.replace(/\{([^}]+)\}/g, (_all, name: string) => {
    let readable = readableParameter(name);
    if (taken.has(readable)) readable = name === readable ? `${readable}_2` : name;
    taken.add(readable);
    return `{${readable}}`;
  });
  return head + renamed;
}

const RESOURCE_ACTIONS: Record<string, [collection: string | null, item: string | null]> = {
  get: ['index', 'show'],
  post: ['store', null],
  put: [null, 'update'],
  patch: [null, 'update'],
  delete: [null, 'destroy'],
};

/**
 * An operation id in the Laravel resource style for an operation the document gives no
 * operationId: `<resources>.<index|show|store|update|destroy>` by the path's shape, the static
 * segments after the project prefix joined by dots (`attendees.credentials.index`); any other
 * shape `<resources>.<method>`.
 */
export function derivedOperationId(method: string, path: string): string {
  const rest = path.replace(PROJECT_PREFIX, '').replace(/^\/v1(?=\/|$)/, '');
  const segments = rest.split('/').filter(Boolean);
  const statics = segments.filter((s) => !s.startsWith('{'));
  const resource = statics.length > 0 ? statics.join('.') : 'root';
  const last = segments.at(-1);
  const isItem = last?.startsWith('{') ?? false;
  const action = RESOURCE_ACTIONS[method]?.[isItem ? 1 : 0] ?? method;
  return `${resource}.${action}`;
}

/** `Access points` → `AccessPoint`: the tag's words in PascalCase, the last one singular. */
export function modelOf(tag: string): string {
  const words = tag.split(/[^A-Za-z0-9]+/).filter(Boolean);
  const last = words.pop();
  if (last === undefined) return 'Resource';
  return [...words, singular(last)].map((w) => w[0]!.toUpperCase() + w.slice(1)).join('');
}

function singular(word: string): string {
  if (/ics$/i.test(word) || /ss$/i.test(word)) return word; // analytics, access
  if (/ies$/i.test(word)) return `${word.slice(0, -3)}y`;
  if (/(ch|sh|x|ss)es$/i.test(word)) return word.slice(0, -2);
  if (/s$/i.test(word)) return word.slice(0, -1);
  return word;
}

/** `Access points` → `access_points`: the permission key, the default identifier, and the stem of the permissions. */
export function permissionKeyOf(tag: string): string {
  return snakeCase(tag) || 'resource';
}

/** Does a socket event belong to the model? `AccessPointUpdated` to `AccessPoint`, not `AccessPointsX` or `Access`. */
export function eventOfModel(event: string, model: string): boolean {
  return event.startsWith(model) && (event.length === model.length || /[A-Z]/.test(event[model.length]!));
}
