import { z } from 'zod';

// The configuration's URLs, checked where they are read (docs/config.md).

/** `cloud.url`: one URL, several separated by commas (the environment's and a flag's form) or a list (the file's),
 * each an http(s) URL; the list out, in order. A wrong entry is named with its place in the list. */
export const cloudUrls = z.union([z.string(), z.array(z.string())]).transform((given, ctx) => {
  const urls = (typeof given === 'string' ? given.split(',') : given).map((u) => u.trim());
  if (urls.length === 0) ctx.addIssue({ code: 'custom', message: 'an empty list: give at least one URL' });
  for (const i of urls.keys()) {
    const problem = urlProblem(urls, i);
    if (problem)
      ctx.addIssue({
        code: 'custom',
        message: urls.length > 1 ? `URL ${i + 1} of ${urls.length}: ${problem}` : problem,
      });
  }
  return urls;
});

function urlProblem(urls: string[], i: number): string | null {
  const url = urls[i]!;
  if (url === '') return 'empty';
  if (!z.url({ protocol: /^https?$/ }).safeParse(url).success)
    return `${JSON.stringify(url)} is not an http:// or https:// URL`;
  const first = urls.indexOf(url);
  return first < i ? `${JSON.stringify(url)} is URL ${first + 1} again` : null;
}

/** `databaseUrl`: libpq's URL of a PostgreSQL database (postgres:// or postgresql://). */
export const databaseUrl = z
  .string()
  .trim()
  .refine((url) => /^postgres(ql)?:\/\/./.test(url), {
    message: 'a PostgreSQL URL: postgres://user:password@host:5432/database (or postgresql://…)',
  });
