// callApi on a collection (docs/plugins.md "callApi"): the appliance answers a list a page at a time
// ({data, meta: {current_page, per_page, total}}, 15 a page unless asked; docs/rest.md), and a plugin
// that asks for `access-points.index` means every access point, so a call that names no page is
// read to its end, 100 a page. A list too long to hold is refused after its first page, saying how
// to page it, rather than cut short: a door display missing a door is worse than one that says so.
import { PluginApiError } from './call-api-error.js';

/** What one call gathers at most: beyond either, `list_too_long`. 100 a page is the appliance's largest page. */
export const CALL_API_LIMITS = { maxItems: 10_000, maxPages: 100, perPage: 100 } as const;

interface Page {
  data: unknown[];
  meta: { current_page: number; per_page: number; total: number };
}

/** A GET whose path ends in a fixed segment (`/access-points`, not `/access-points/{access_point}`): it may answer a list. */
export const isCollectionOperation = (path: string): boolean => !path.endsWith('}');

/** `page` or `per_page` in the call: the plugin pages the list itself, one page per call. */
export const asksForOnePage = (data: Record<string, unknown>): boolean => data.page !== undefined || data.per_page !== undefined;

function isPage(json: unknown): json is Page {
  if (typeof json !== 'object' || json === null || !Array.isArray((json as { data?: unknown }).data)) return false;
  const meta = (json as { meta?: Record<string, unknown> }).meta;
  return typeof meta === 'object' && meta !== null && [meta.current_page, meta.per_page, meta.total].every((n) => typeof n === 'number' && Number.isInteger(n) && n >= 0);
}

const idOf = (item: unknown): unknown => (typeof item === 'object' && item !== null ? (item as { id?: unknown }).id : undefined);

function tooLong(what: string, count: number): PluginApiError {
  const { maxItems, perPage } = CALL_API_LIMITS;
  return new PluginApiError(
    'list_too_long',
    `${what} lists ${count} items, more than the ${maxItems} callApi gathers in one call: ask for one page at a time with {page, per_page} in additionalData (per_page at most ${perPage}).`,
  );
}

export type Whole = { kind: 'list'; items: unknown[]; pages: number } | { kind: 'answer'; json: unknown };

/**
 * Every item of the list `fetchPage` reads (`what` names it in errors). An answer that is not a page
 * (a plain list, CSV text) is handed back as it came. The pages are read one after another, not as one
 * snapshot: an item added meanwhile may shift another onto the next page, so an item seen twice (by
 * its `id`) is kept once; one deleted meanwhile may move an unread one back, which the next call sees.
 */
export async function everyItem(fetchPage: (page: Record<string, number>) => Promise<unknown>, what: string): Promise<Whole> {
  const { maxItems, maxPages, perPage } = CALL_API_LIMITS;
  const first = await fetchPage({ per_page: perPage });
  if (!isPage(first)) return { kind: 'answer', json: first };
  const items: unknown[] = [];
  const seen = new Set<unknown>();
  const add = (page: Page) => {
    for (const item of page.data) {
      const id = idOf(item);
      if (id !== undefined && id !== null) {
        if (seen.has(id)) continue;
        seen.add(id);
      }
      items.push(item);
    }
  };
  let page: Page = first;
  let pages = 1;
  for (;;) {
    const { total, per_page } = page.meta;
    if (total > maxItems || Math.ceil(total / Math.max(1, per_page)) > maxPages) throw tooLong(what, total);
    add(page);
    if (page.data.length === 0 || pages * per_page >= total) break;
    pages += 1;
    const next = await fetchPage({ per_page: perPage, page: pages });
    if (!isPage(next)) break;
    page = next;
  }
  if (items.length > maxItems) throw tooLong(what, items.length);
  return { kind: 'list', items, pages };
}
