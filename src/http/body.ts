import type { Context } from 'koa';
import getRawBody from 'raw-body';
import { AppError } from '../errors.js';
import { JsonDepthError, MAX_JSON_DEPTH, parseJson } from '../json-depth.js';
import type { BodyKind } from './route.js';

export interface ParsedBody {
  /** The exact bytes received (signed webhooks verify over these, never a re-serialisation). */
  raw: Buffer;
  value: unknown;
}

function hasBody(ctx: Context): boolean {
  const length = ctx.get('content-length');
  return ctx.get('transfer-encoding') !== '' || (length !== '' && length !== '0');
}

const isJsonType = (type: string) => type === 'application/json' || /^application\/[\w.+-]+\+json$/.test(type);

/** `answered`: the request already has its answer (a webhook retry): the body is not parsed. */
export type BeforeParse = 'parse' | 'answered';

/** The whole body within `timeoutMs` of the start of reading, or 408 (docs/security.md, attack 12: a body
 * sent slowly, or stopped halfway, held its connection for Node's 300 s request timeout). A total
 * deadline, not an idle one, so a byte every few seconds does not keep it open either. The
 * answer closes the connection: the rest of that body is never read. */
async function rawBodyWithin(ctx: Context, limit: number, timeoutMs: number): Promise<Buffer> {
  const reading = getRawBody(ctx.req, { limit, length: ctx.get('content-length') || undefined });
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(new AppError('request_timeout', { seconds: timeoutMs / 1000 }, { headers: { Connection: 'close' } })),
      timeoutMs,
    );
  });
  reading.catch(() => undefined); // after the deadline, the socket's end rejects it: nobody waits for it then
  try {
    return await Promise.race([reading, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** Reads and parses the body a route accepts: 415 for a content type it does not take, 413
 * over the limit, 408 when it does not arrive within `timeoutMs`, 400 for JSON that does not
 * parse or nests deeper than `maxDepth` (src/json-depth.ts). An absent body parses as undefined. */
export async function readBody(
  ctx: Context,
  kind: BodyKind,
  limit: number,
  timeoutMs: number,
  beforeParse?: (raw: Buffer) => Promise<BeforeParse>,
  maxDepth = MAX_JSON_DEPTH,
): Promise<ParsedBody> {
  if (!hasBody(ctx)) {
    await beforeParse?.(Buffer.alloc(0));
    return { raw: Buffer.alloc(0), value: undefined };
  }
  const type = (ctx.get('content-type').split(';')[0] ?? '').trim().toLowerCase();
  const other = kind === 'form' ? 'application/x-www-form-urlencoded' : kind === 'json-or-csv' ? 'text/csv' : null;
  if (!isJsonType(type) && type !== other) {
    throw new AppError('unsupported_media_type', {
      type: type || '(none)',
      expected: other ? `application/json or ${other}` : 'application/json',
    });
  }
  let raw: Buffer;
  try {
    raw = await rawBodyWithin(ctx, limit, timeoutMs);
  } catch (err) {
    if (err instanceof AppError) throw err;
    const e = err as { type?: string; status?: number };
    if (e.type === 'entity.too.large') throw new AppError('payload_too_large', { limit });
    throw err;
  }
  // Signed webhooks: checked over the exact bytes, before their contents.
  if ((await beforeParse?.(raw)) === 'answered' || raw.length === 0) return { raw, value: undefined };
  if (type === 'text/csv') return { raw, value: raw.toString('utf8') };
  if (!isJsonType(type)) return { raw, value: Object.fromEntries(new URLSearchParams(raw.toString('utf8'))) };
  try {
    // A leading BOM is tolerated in parsing; `raw` keeps it for signature checks.
    return { raw, value: parseJson(raw.toString('utf8').replace(/^\uFEFF/, ''), maxDepth) };
  } catch (err) {
    throw new AppError('malformed_json', {
      detail: err instanceof JsonDepthError ? `${err.message}.` : (err as Error).message,
    });
  }
}
