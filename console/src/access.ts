// The Access screen's logic without a page (docs/console.md "Access"): the
// venue's editable resources described as fields, form values turned into the JSON bodies the
// routes validate (src/venue/*.ts), the blocklist indexed by what it names, paging, and whether
// this box may change the cloud-owned resources (docs/sync.md "What an edge may change").

export interface Attendee {
  id: number;
  first_name: string;
  last_name: string;
  email: string | null;
  attendee_type: string | null;
  external_id: string | null;
  status: 'active' | 'cancelled';
}
export interface Credential {
  id: number;
  attendee_id: number;
  value: string;
  kind: string;
  status: 'active' | 'revoked';
  valid_from: string | null;
  valid_until: string | null;
  revoked_at: string | null;
}
export interface BlocklistEntry {
  id: number;
  attendee_id: number | null;
  credential_id: number | null;
  reason: string;
  until: string | null;
}
export interface AttendeeType {
  id: number;
  name: string;
  slug: string;
}
/** A row of a venue resource (zone, access point, reader): its id and its fields. */
export type VenueRow = { id: number } & Record<string, unknown>;

export type FieldKind = 'text' | 'number' | 'checkbox' | 'select';
export interface Option {
  value: string;
  label: string;
}
/** One editable field of a venue resource, as its form shows it and its body sends it. */
export interface FieldSpec {
  key: string;
  /** Manifest string key and its English fallback. */
  label: [string, string];
  kind: FieldKind;
  /** text: '' is sent as null (an optional text such as a location), not as ''. */
  nullable?: boolean;
  /** select: the choices; `numeric` sends the value as a number (an id), '' as null. */
  options?: Option[];
  numeric?: boolean;
  /** A new row's value when not the kind's blank (an access point starts active). */
  initial?: string | boolean;
}

/** A column of a venue resource's table. */
export interface Column {
  key: string;
  label: [string, string];
  value(row: VenueRow): string;
}

export type FormValues = Record<string, string | boolean>;

/** The form's values for a row (or the defaults of a new one). */
export function formValues(fields: readonly FieldSpec[], row: Record<string, unknown> | null): FormValues {
  const values: FormValues = {};
  for (const f of fields) {
    const v = row?.[f.key];
    if (!row && f.initial !== undefined) values[f.key] = f.initial;
    else if (f.kind === 'checkbox') values[f.key] = row ? Boolean(v) : false;
    else if (f.kind === 'select' && !row) values[f.key] = f.numeric ? '' : (f.options?.[0]?.value ?? '');
    else values[f.key] = v === null || v === undefined ? '' : String(v);
  }
  return values;
}

/**
 * The JSON body of a create or an update. Values are sent as typed so that the appliance, not the
 * page, judges them: a blank required name goes as '' and comes back as its 422 under the field.
 * A number field left blank is null (no capacity: unlimited); one that is not a number is sent as
 * typed, a string, so the 422 says so.
 */
export function toBody(fields: readonly FieldSpec[], values: FormValues): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const f of fields) {
    const v = values[f.key];
    if (f.kind === 'checkbox') {
      body[f.key] = v === true;
      continue;
    }
    const text = typeof v === 'string' ? v.trim() : '';
    if (f.kind === 'number') body[f.key] = text === '' ? null : /^-?\d+(\.\d+)?$/.test(text) ? Number(text) : text;
    else if (f.kind === 'select' && f.numeric) body[f.key] = text === '' ? null : Number(text);
    else body[f.key] = text === '' && f.nullable ? null : text;
  }
  return body;
}

/** Only what changed, for a PUT (fields not sent stay as they are). */
export function changedBody(
  fields: readonly FieldSpec[],
  row: Record<string, unknown>,
  values: FormValues,
): Record<string, unknown> {
  const before = toBody(fields, formValues(fields, row));
  const after = toBody(fields, values);
  return Object.fromEntries(Object.entries(after).filter(([k, v]) => before[k] !== v));
}

/** Field errors of a 422 under the form's own keys; what names no field of the form goes to the form's message. */
export function splitErrors(
  fields: readonly FieldSpec[] | readonly string[],
  errors: Record<string, string[]>,
): { byField: Record<string, string>; other: string[] } {
  const keys = new Set(fields.map((f) => (typeof f === 'string' ? f : f.key)));
  const byField: Record<string, string> = {};
  const other: string[] = [];
  for (const [key, messages] of Object.entries(errors)) {
    if (keys.has(key)) byField[key] = messages.join(' ');
    else other.push(...messages);
  }
  return { byField, other };
}

/** The blocklist entries in force at `now`, by what they name (an entry names an attendee or one credential). */
export function blocklistIndex(entries: readonly BlocklistEntry[], now = Date.now()) {
  const attendees = new Map<number, BlocklistEntry>();
  const credentials = new Map<number, BlocklistEntry>();
  for (const e of entries) {
    if (e.until !== null && Date.parse(e.until) <= now) continue;
    if (e.credential_id !== null) credentials.set(e.credential_id, e);
    else if (e.attendee_id !== null) attendees.set(e.attendee_id, e);
  }
  return { attendees, credentials };
}

/**
 * Every row of a list, page by page (per_page 100, the appliance's maximum), at most `maxPages`:
 * zones, access points, readers and the blocklist are a venue's few dozen rows. callApi answers a
 * page's `data` only, so a short page is the last.
 */
export async function listAll<T>(
  page: (n: number, perPage: number) => Promise<T[]>,
  maxPages = 10,
  perPage = 100,
): Promise<{ items: T[]; complete: boolean }> {
  const items: T[] = [];
  for (let n = 1; n <= maxPages; n++) {
    const batch = await page(n, perPage);
    items.push(...batch);
    if (batch.length < perPage) return { items, complete: true };
  }
  return { items, complete: false };
}

/** Whether a page may have a successor: callApi keeps only `data`, so a full page says maybe. */
export const mayHaveNext = (items: readonly unknown[], perPage: number) => items.length >= perPage;

/** On an edge the cloud owns zones, access points, readers and the blocklist (docs/sync.md): GET .../sync/status says the role. */
export const cloudOwned = (status: { role?: string } | null | undefined) => status?.role === 'edge';

export const fullName = (a: Pick<Attendee, 'first_name' | 'last_name'>) => `${a.first_name} ${a.last_name}`.trim();

/** A datetime-local input's value (the browser's local time) as an instant with offset, or null when blank. */
export function instantOfLocal(value: string): string | null {
  if (!value.trim()) return null;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? value : new Date(ms).toISOString();
}
