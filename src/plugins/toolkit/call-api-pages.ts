// callApi on a collection (docs/plugins.md "callApi"): the appliance answers a list a page at a time
// ({data, meta: {current_page, per_page, total}}, 15 a page unless asked; docs/rest.md), and a plugin
// that asks for `access-points.index` means every access point. A call that names no page is sent as
// written; when its answer is a page that does not hold the whole list, the list is read again from
// its start 100 a page (the appliance's largest) to its end. A list too long to hold is refused after
// its first page, saying how to page it, rather than cut short: a door display missing a door is
// worse than one that says so. Only an answer that is a page is paged: a GET of one thing
// (`/me`, `.../sync/status`) is sent and answered exactly as before.
import { PluginApiError } from './call-api-error.js';

/** What one call gathers at most: beyond either, `list_too_long`. 100 a page is the appliance's largest page. */
export const CALL_API_LIMITS = { maxItems: 10_000, maxPages: 100, perPage: 100 } as const;

interface Page {
  data: unknown[];
  meta: { current_page: number; per_page: number; total: number };
}

/** `page` or `per_page` in the call: the plugin pages the list itself, one page per call. */
export const asksForOnePage = (data: Record<string, unknown>): boolean =>
  data.page !== undefined || data.per_page !== undefined;

function isPage(json: unknown): json is Page {
  if (typeof json !== 'object' || json === null || !Array.isArray((json as { data?: unknown }).data)) return false;
  const meta = (json as { meta?: Record<string, unknown> }).meta;
  return (
    typeof meta === 'object' &&
    meta !== null &&
    [meta.current_page, meta.per_page, meta.total].every((n) => typeof n === 'number' && Number.isInteger(n) && n >= 0)
  );
}

const idOf = (item: unknown): unknown =>
  typeof item === 'object' && item !== null ? (item as { id?: unknown }).id : undefined;

function tooLong(what: string, count: number): PluginApiError {
  const { maxItems, perPage } = CALL_API_LIMITS;
  return new PluginApiError(
    'list_too_long',
    `${what} lists ${count} items, more than the ${maxItems} callApi gathers in one call: ask for one page at a time with {page, per_page} in additionalData (per_page at most ${perPage}).`,
  );
}

export type Whole = { kind: 'list'; items: unknown[]; pages: number; first: Page } | { kind: 'answer'; json: unknown };

/**
 * A whole list as `{envelope: true}` gives it: the first answer with every item in `data`, `meta.total`
 * the items gathered and `meta.pages` the requests made; the first page's other `meta` (such as
 * bridge-devices' `hid`) kept, its `current_page`, `per_page` and `links` dropped (they describe a page).
 */
export function wholeEnvelope(whole: Extract<Whole, { kind: 'list' }>): unknown {
  const { links: _links, ...answer } = whole.first as Page & { links?: unknown };
  const { current_page: _page, per_page: _perPage, ...meta } = whole.first.meta;
  return { ...answer, data: whole.items, meta: { ...meta, total: whole.items.length, pages: whole.pages } };
}

/**
 * Every item of the list `fetchPage` reads (`what` names it in errors): `fetchPage({})` is the call as
 * the plugin wrote it, `fetchPage({per_page, page})` a page of it. An answer that is not a page (one
 * resource, a plain list, CSV text) is handed back as it came. The pages are read one after another,
 * not as one snapshot: an item added meanwhile may shift another onto the next page, so an item seen
 * twice (by its `id`) is kept once; one deleted meanwhile may move an unread one back, which the next
 * call sees.
 */
export async function everyItem(
  fetchPage: (page: Record<string, number>) => Promise<unknown>,
  what: string,
): Promise<Whole> {
  const { maxItems, maxPages, perPage } = CALL_API_LIMITS;
  const first = await fetchPage({});
  if (!isPage(first)) return { kind: 'answer', json: first };
  const tooMany = (page: Page) => page.meta.total > maxItems || Math.ceil(page.meta.total / perPage) > maxPages;
  if (tooMany(first)) throw tooLong(what, first.meta.total);
  if (first.data.length >= first.meta.total) return { kind: 'list', items: first.data, pages: 1, first };
  const items: unknown[] = [];
  const seen = new Set<unknown>();
  let requests = 1;
  let total = first.meta.total;
  for (let n = 1; ; n++) {
    if (n > maxPages) throw tooLong(what, total);
    const page = await fetchPage({ per_page: perPage, page: n });
    requests += 1;
    if (!isPage(page)) break;
    total = page.meta.total;
    if (tooMany(page)) throw tooLong(what, total);
    for (const item of page.data) {
      const id = idOf(item);
      if (id !== undefined && id !== null) {
        if (seen.has(id)) continue;
        seen.add(id);
      }
      items.push(item);
    }
    if (page.data.length === 0 || n * page.meta.per_page >= page.meta.total) break;
  }
  if (items.length > maxItems) throw tooLong(what, items.length);
  return { kind: 'list', items, pages: requests, first };
}
