// The webhooks screen's logic (docs/console.md "Webhooks"), apart from Vue so
// the tests can read it: the shapes the appliance answers, the log filters as the API takes them,
// the allowlist as typed and its 422s under the field, the outgoing event catalogue.

export type SourceKind =
  | 'access-event'
  | 'gateway-status'
  | 'registration-partner'
  | 'attendee-sync'
  | 'upload-finalized';
export const SOURCE_KINDS: readonly SourceKind[] = [
  'access-event',
  'gateway-status',
  'registration-partner',
  'attendee-sync',
  'upload-finalized',
];

/** docs/webhooks-incoming.md "Sources": the endpoint each kind signs for. */
export const ENDPOINTS: Record<SourceKind, string> = {
  'access-event': '/webhook/v1/access-event',
  'gateway-status': '/webhook/v1/mqtt-gateway-status',
  'registration-partner': '/webhook/v1/registration-partner',
  'attendee-sync': '/webhook/v1/attendee-sync',
  'upload-finalized': '/webhook/v1/large-upload-finalized',
};

/**
 * docs/webhooks-outgoing.md "Catalogue" (src/feed/catalogue.ts, which the console cannot import:
 * the test checks the two agree). `webhook.test` is sent only by "Send test event".
 */
export const OUTGOING_EVENTS = [
  'access.granted',
  'access.denied',
  'attendee.created',
  'attendee.updated',
  'attendee.deleted',
  'attendee.imported',
  'sync.link_down',
  'sync.link_up',
  'sync.conflict',
  'credential.created',
  'credential.revoked',
  'access_point.updated',
  'access_point.deleted',
  'zone.capacity_reached',
  'gateway.online',
  'gateway.offline',
  'reader.offline',
  'webhook.endpoint_disabled',
] as const;

export interface WebhookSource {
  id: number;
  kind: SourceKind;
  name: string;
  ip_allowlist: string[];
  enabled: boolean;
  rate_limit_per_minute: number;
  previous_secret_expires_at: string | null;
  endpoint: string;
  created_at: string;
}

export interface LogEntry {
  id: string;
  endpoint: string;
  method: string;
  status: number;
  source_ip: string;
  received_at: string;
  response_time_ms: number;
  source_id: number | null;
  reason: string | null;
  body_head: string | null;
}

export interface Subscription {
  id: number;
  url: string;
  events: string[];
  project_id: number;
  active: boolean;
  disabled_reason: 'manual' | 'gone' | 'failing' | null;
  signature_scheme: 'sha256' | 'standard';
  failing_since: string | null;
  created_at: string;
}

export interface Attempt {
  at: string;
  status_code: number | null;
  duration_ms: number;
  error: string | null;
}

export interface Delivery {
  id: number;
  delivery_id: string;
  subscription_id: number;
  event: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  last_status_code: number | null;
  response_time_ms: number | null;
  next_attempt_at: string | null;
  payload: Record<string, unknown>;
  attempt_history: Attempt[];
  created_at: string;
}

/** A page as the appliance answers it (callApi with `{envelope: true}`). */
export interface Page<T> {
  data: T[];
  meta: { current_page: number; per_page: number; total: number };
}

/** An answer that carries a secret shown once beside the resource. */
export interface WithSecret<T> {
  data: T;
  secret: string;
}

/** The allowlist as typed: one entry a line (commas and spaces separate too); empty means any address. */
export function parseAllowlist(text: string): string[] {
  return text
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/**
 * A 422's field errors keyed by the form's fields: `ip_allowlist.1` and `events.0` are the
 * allowlist's and the events' (each message naming the entry it is about, as typed).
 */
export function formErrors(
  errors: Record<string, string[]>,
  entries: Record<string, readonly string[]> = {},
): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [key, messages] of Object.entries(errors)) {
    const [field, index] = key.split('.', 2) as [string, string | undefined];
    const entry = index !== undefined && /^\d+$/.test(index) ? entries[field]?.[Number(index)] : undefined;
    const text = messages.map((m) => (entry !== undefined ? `“${entry}”: ${m}` : m));
    (out[field] ??= []).push(...text);
  }
  return out;
}

/** The request log's filters as the form holds them. */
export interface LogFilters {
  endpoint: string;
  sourceId: string;
  result: '' | 'success' | 'failure';
  status: string;
  /** `datetime-local` values (wall time in the project's time zone) or ''. */
  from: string;
  to: string;
}

export const noLogFilters = (): LogFilters => ({
  endpoint: '',
  sourceId: '',
  result: '',
  status: '',
  from: '',
  to: '',
});

/** GET .../incoming-webhooks's query for the filters (docs/webhooks-incoming.md "The request log"). */
export function logQuery(
  f: LogFilters,
  timeZone: string | undefined,
  page: number,
  perPage: number,
): Record<string, string | number> {
  const q: Record<string, string | number> = { page, per_page: perPage };
  if (f.endpoint) q.endpoint = f.endpoint;
  if (f.sourceId) q.source_id = Number(f.sourceId);
  if (f.result) q.result = f.result;
  if (f.status.trim()) q.status = f.status.trim();
  if (f.from) q.from = zonedToIso(f.from, timeZone);
  if (f.to) q.to = zonedToIso(f.to, timeZone);
  return q;
}

/** How far `timeZone`'s wall clock is ahead of UTC at `at` (ms). */
function zoneOffset(at: number, timeZone: string): number {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  }).formatToParts(at);
  const n = (type: string) => Number(parts.find((p) => p.type === type)?.value);
  return (
    Date.UTC(n('year'), n('month') - 1, n('day'), n('hour'), n('minute'), n('second')) - Math.floor(at / 1000) * 1000
  );
}

/**
 * A `datetime-local` value (`2026-11-26T14:30`) read as wall time in `timeZone` (the project's:
 * the times shown are in it), as an ISO 8601 instant; without a zone the browser's.
 */
export function zonedToIso(local: string, timeZone?: string): string {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?$/.exec(local);
  if (!m) throw new Error(`not a date and time: ${local}`);
  const [y, mo, d, h, mi, s] = m.slice(1).map((v) => Number(v ?? 0)) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  if (!timeZone) return new Date(y, mo - 1, d, h, mi, s).toISOString();
  const wall = Date.UTC(y, mo - 1, d, h, mi, s);
  let at = wall - zoneOffset(wall, timeZone);
  const again = wall - zoneOffset(at, timeZone); // across a DST change the offset at the instant itself
  if (again !== at) at = again;
  return new Date(at).toISOString();
}

/** The delivery log's filters. */
export interface DeliveryFilters {
  subscriptionId: string;
  status: '' | 'pending' | 'delivered' | 'failed';
  event: string;
}

export const noDeliveryFilters = (): DeliveryFilters => ({ subscriptionId: '', status: '', event: '' });

export function deliveryQuery(f: DeliveryFilters, page: number, perPage: number): Record<string, string | number> {
  const q: Record<string, string | number> = { page, per_page: perPage };
  if (f.subscriptionId) q.subscription_id = Number(f.subscriptionId);
  if (f.status) q.status = f.status;
  if (f.event) q.event = f.event;
  return q;
}

/** 2xx: the request was accepted (docs/webhooks-incoming.md: `result=success`). */
export const succeeded = (status: number) => status >= 200 && status <= 299;

/** The pages a total makes. */
export const pageCount = (total: number, perPage: number) => Math.max(1, Math.ceil(total / perPage));

/** A payload as readable JSON. */
export const pretty = (value: unknown) => JSON.stringify(value, null, 2);

/** A date-time formatter in the project's time zone (the browser's when the zone is unknown to it). */
export function dateTimeFormat(timeZone: string | undefined): Intl.DateTimeFormat {
  const options: Intl.DateTimeFormatOptions = {
    year: 'numeric',
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  };
  try {
    return new Intl.DateTimeFormat(undefined, { ...options, timeZone });
  } catch {
    return new Intl.DateTimeFormat(undefined, options);
  }
}

/** What went wrong with a write, for the page: the message, and a 422's errors keyed by the form's fields. */
export function explain(
  err: unknown,
  entries: Record<string, readonly string[]> = {},
): { message: string; errors: Record<string, string[]> } {
  const e = err as { status?: number; errors?: Record<string, string[]>; message?: string } | null;
  const errors = e?.status === 422 && e.errors ? formErrors(e.errors, entries) : {};
  return { message: e?.message ?? String(err), errors };
}

/** Focuses the form's first invalid field (after a 422), or else its alert. */
export function focusProblem(form: HTMLElement | null): void {
  const target =
    form?.querySelector<HTMLElement>('[aria-invalid="true"]') ?? form?.querySelector<HTMLElement>('[role="alert"]');
  target?.focus();
}
