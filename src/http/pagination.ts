import type { Context } from 'koa';
import { z } from 'zod';

// Collections: {data, meta{current_page, per_page, total}, links{first, last, prev, next}}
// (spec: Response envelopes). ?page= from 1, ?per_page= default 15, maximum 100 (docs/rest.md).
export const DEFAULT_PER_PAGE = 15;
export const MAX_PER_PAGE = 100;

export const pageQuery = z.object({
  page: z.coerce.number().int().min(1).default(1),
  per_page: z.coerce.number().int().min(1).max(MAX_PER_PAGE).default(DEFAULT_PER_PAGE),
});

export type PageQuery = z.output<typeof pageQuery>;

export const window = (q: PageQuery) => ({ offset: (q.page - 1) * q.per_page, limit: q.per_page });

export function collectionSchema<T extends z.ZodType>(item: T) {
  const link = z.string().nullable();
  return z.object({
    data: z.array(item),
    meta: z.object({ current_page: z.number().int(), per_page: z.number().int(), total: z.number().int() }),
    links: z.object({ first: z.string(), last: z.string(), prev: link, next: link }),
  });
}

export function paginate<T>(ctx: Context, q: PageQuery, items: T[], total: number) {
  const last = Math.max(1, Math.ceil(total / q.per_page));
  const url = (page: number) => {
    const params = new URLSearchParams(ctx.querystring);
    params.set('page', String(page));
    params.set('per_page', String(q.per_page));
    return `${ctx.protocol}://${ctx.host}${ctx.path}?${params.toString()}`;
  };
  return {
    data: items,
    meta: { current_page: q.page, per_page: q.per_page, total },
    links: {
      first: url(1),
      last: url(last),
      prev: q.page > 1 ? url(Math.min(q.page - 1, last)) : null,
      next: q.page < last ? url(q.page + 1) : null,
    },
  };
}
