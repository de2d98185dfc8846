import type { z } from 'zod';

// The one error catalogue: every error the HTTP layer can answer, with its status and
// message template. Laravel's conventions where the REST contract fixes them (docs/rest.md:
// 401 'Unauthenticated.', 403 'Invalid ability provided.', 419 'Token Mismatch', 422 {message, errors}).
// docs/errors.md documents each code; test/house/error-catalogue.test.ts checks each entry, and that
// the page lists every code built here or at another envelope site, and no other.

export const errorCatalogue = {
  malformed_json: { status: 400, message: 'The request body is not valid JSON: {detail}' },
  not_a_token: {
    status: 400,
    message: 'This request is not made with a token; end a cookie session with DELETE /api/v1/auth/session.',
  },
  not_a_session: {
    status: 400,
    message: 'This request is not made with a cookie session; revoke a token with DELETE /api/v1/auth/token.',
  },
  unauthenticated: { status: 401, message: 'Unauthenticated.' },
  // An edge whose issuer lost access to its project, until an administrator re-confirms it
  // (docs/sync.md: edges and their issuers); the body adds code and reason.
  edge_suspended: { status: 401, message: 'Unauthenticated.' },
  unable_to_authenticate: { status: 401, message: 'Unable to authenticate' },
  invalid_signature: { status: 401, message: '{detail}' },
  missing_signature: {
    status: 401,
    message: 'The {header} header is missing: sign the raw body with the source secret (sha256=<hex HMAC-SHA256>).',
  },
  stale_timestamp: { status: 401, message: '{detail}' },
  address_not_allowed: { status: 403, message: 'The address {address} is not in the allowlist of the webhook source.' },
  // Only while the first request with the same signed body is still being handled: a retry of an
  // answered one gets that answer again (webhooks/replay-window.ts).
  request_in_progress: {
    status: 409,
    message: 'An identical signed request is still being handled; send it again shortly to get its answer.',
  },
  // Before anything else, for an address whose webhook requests failed too often (webhooks/failure-throttle.ts).
  too_many_failures: {
    status: 429,
    message: 'Too many failed webhook requests from {address}; try again in {seconds} s.',
  },
  invalid_ability: { status: 403, message: 'Invalid ability provided.' },
  missing_ability: { status: 401, message: 'Unauthenticated.' },
  metrics_loopback_only: {
    status: 403,
    message: 'Metrics are served to clients on this box only (metrics.access is "loopback").',
  },
  forbidden: { status: 403, message: 'This action is unauthorized.' },
  channel_forbidden: { status: 403, message: 'This action is unauthorized.' },
  unknown_app: { status: 404, message: 'No app with id {appId} on this server.' },
  route_not_found: { status: 404, message: 'The route {path} could not be found.' },
  not_found: { status: 404, message: '{resource} not found.' },
  method_not_allowed: {
    status: 405,
    message: 'The {method} method is not supported for route {path}. Supported methods: {allowed}.',
  },
  request_timeout: { status: 408, message: 'The request body did not arrive within {seconds} s.' },
  conflict: { status: 409, message: '{detail}' },
  unknown_reader: { status: 404, message: 'No reader has the identifier "{identifier}".' },
  reader_unassigned: {
    status: 409,
    message: 'The reader "{identifier}" is not assigned to an access point: scans there are not decided.',
  },
  ambiguous_reader: {
    status: 409,
    message:
      'The reader identifier "{identifier}" is used in more than one project; sign the request with a webhook source of one project.',
  },
  unknown_project: { status: 404, message: 'No project "{identifier}": team_slug and project_slug name none.' },
  source_project_mismatch: {
    status: 403,
    message: 'The webhook source that signed this request belongs to another project.',
  },
  project_required: {
    status: 409,
    message: 'More than one project exists: sign the request with a webhook source, which names its project.',
  },
  unknown_registration: {
    status: 404,
    message: 'No attendee has the registration id "{identifier}"; the event was not applied or recorded.',
  },
  registration_exists: {
    status: 409,
    message: 'The registration "{identifier}" already has an attendee; send registration.updated to change it.',
  },
  unknown_gateway: { status: 404, message: 'No gateway has the identifier "{identifier}".' },
  ambiguous_gateway: {
    status: 409,
    message:
      'The gateway identifier "{identifier}" is used in more than one project; sign the request with a webhook source of one project.',
  },
  payload_too_large: { status: 413, message: 'The request body exceeds the limit of {limit} bytes.' },
  unsupported_media_type: { status: 415, message: 'Unsupported content type "{type}": send {expected}.' },
  token_mismatch: { status: 419, message: 'Token Mismatch' },
  validation_failed: { status: 422, message: 'The given data was invalid.' },
  // Deleting a zone would end the access of the types that grant it: the operator learns which
  // first (docs/venue.md: access zones; errors.attendee_types names each type).
  zone_granted: {
    status: 422,
    message: 'The access zone is still granted by the attendee types {types}: take it out of their zone_ids first.',
  },
  too_many_requests: { status: 429, message: 'Too Many Attempts.' },
  login_locked: { status: 429, message: 'Too many failed logins for this account: try again in {seconds} s.' },
  server_error: { status: 500, message: 'Server Error' },
  not_ready: { status: 503, message: 'Service Unavailable' },
  // GET / before scripts/build.mjs wrote dist/console (docs/console.md).
  console_not_built: {
    status: 503,
    message:
      'The staff console is not built on this appliance: run npm run build (npm start does), then reload this page.',
  },
  store_busy: {
    status: 503,
    message:
      'The store is busy with other writes and this change could not be made within {seconds} s; nothing of it was written. Try again shortly.',
  },
  scan_answer_timeout: {
    status: 503,
    message:
      'The scan was not answered within {seconds} s (it was waiting on {detail}); send it again with the same request_id after Retry-After.',
  },
  sync_not_linked: {
    status: 503,
    message:
      'This edge has not reached its cloud yet, so it cannot number new attendees or credentials; try again once it has (GET .../sync/status).',
  },
  id_space_exhausted: {
    status: 503,
    message: 'No id is left for a new row of {table} on this appliance; nothing was written.',
  },
  sync_not_cloud: {
    status: 404,
    message: 'This appliance is not a cloud: it serves no sync edges (GATEHOUSE_ROLE=cloud).',
  },
  sync_protocol_unsupported: { status: 409, message: '{detail}' },
  // Before the body is read (docs/sync.md: limits): the edge sends the batch again after Retry-After.
  sync_upload_busy: {
    status: 503,
    message: 'The cloud cannot take this batch now: {detail}. Nothing of it was read; send it again after Retry-After.',
  },
  // docs/credentials.md: the key lifecycle. Rotate first, so a project always has a key to sign with.
  signing_key_in_use: {
    status: 409,
    message: "This key is its project's signing key: rotate (POST .../credential-keys) before retiring it.",
  },
  // docs/credentials.md: the trust model. Only a cloud or a standalone box holds private keys.
  signing_not_on_edge: {
    status: 409,
    message: 'An edge holds public keys only: make signing keys and signed credentials on the cloud.',
  },
  edge_read_only: { status: 409, message: 'This edge replicates {resource} from its cloud: change them on the cloud.' },
  event_log_behind: {
    status: 503,
    message:
      'Some answered scans are not in the access-event log yet (its journal has been behind for {seconds} s or more); try again shortly.',
  },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof errorCatalogue;

export function formatMessage(template: string, params: Record<string, string | number> = {}): string {
  return template.replace(/\{(\w+)\}/g, (whole, key: string) => (key in params ? String(params[key]) : whole));
}

/** A domain or protocol error that is safe to show: one middleware turns it into JSON. */
export class AppError extends Error {
  readonly status: number;
  readonly expose = true;
  readonly headers: Record<string, string>;
  readonly body: Record<string, unknown>;

  constructor(
    readonly code: ErrorCode,
    params: Record<string, string | number> = {},
    extra: { headers?: Record<string, string>; body?: Record<string, unknown> } = {},
  ) {
    const entry = errorCatalogue[code];
    super(formatMessage(entry.message, params));
    this.status = entry.status;
    this.headers = extra.headers ?? {};
    this.body = { message: this.message, ...extra.body };
  }
}

export const notFound = (resource: string) => new AppError('not_found', { resource });

export type FieldErrors = Record<string, string[]>;

/** An empty field-error map without a prototype: field names come from request keys, and a
 * plain object already "has" `constructor`, `__proto__` and `toString` (docs/security.md, attack 6: those
 * keys made `errors[field] ??= []` throw, a 500 before any login). */
export function emptyFieldErrors(): FieldErrors {
  return Object.create(null) as FieldErrors;
}

/** Adds a message to a field of a map made by emptyFieldErrors(). */
export function addFieldError(errors: FieldErrors, field: string, message: string): void {
  (Object.hasOwn(errors, field) ? errors[field]! : (errors[field] = [])).push(message);
}

/** 422 in Laravel's shape: the first message, plus " (and N more errors)". */
export function validationError(errors: FieldErrors): AppError {
  const messages = Object.values(errors).flat();
  const first = messages[0] ?? errorCatalogue.validation_failed.message;
  const more = messages.length - 1;
  const message = more > 0 ? `${first} (and ${more} more error${more === 1 ? '' : 's'})` : first;
  return new AppError('validation_failed', {}, { body: { message, errors } });
}

/** Field errors keyed by dotted path (`readers.0.id`), as Laravel names them. */
export function fieldErrorsFromZod(error: z.ZodError, prefix?: string): FieldErrors {
  const errors = emptyFieldErrors();
  const add = (path: readonly PropertyKey[], text: (field: string) => string) => {
    const field = [prefix, ...path.map(String)].filter(Boolean).join('.') || 'body';
    addFieldError(errors, field, text(field));
  };
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) add([...issue.path, key], (f) => `The ${f} field is not allowed.`);
    } else if (issue.code === 'invalid_type' && / received undefined$/.test(issue.message)) {
      // zod 4 leaves issue.input out: only its message tells a missing field from a wrong type.
      add(issue.path, (f) => `The ${f} field is required.`);
    } else {
      add(issue.path, (f) => `The ${f} field is invalid: ${issue.message}.`.replace(/\.\.$/, '.'));
    }
  }
  return errors;
}

/** The value, or 404 '{resource} not found.' when there is none. */
export function found<T>(value: T | null | undefined, resource: string): T {
  if (value === null || value === undefined) throw notFound(resource);
  return value;
}
