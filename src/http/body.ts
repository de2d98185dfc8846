import type { Context } from 'koa';
import getRawBody from 'raw-body';
import { AppError } from '../errors.js';
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

/** Reads and parses the body a route accepts: 415 for a content type it does not take, 413
 * over the limit, 400 for JSON that does not parse. An absent body parses as undefined. */
export async function readBody(ctx: Context, kind: BodyKind, limit: number, beforeParse?: (raw: Buffer) => Promise<BeforeParse>): Promise<ParsedBody> {
  if (!hasBody(ctx)) {
    await beforeParse?.(Buffer.alloc(0));
    return { raw: Buffer.alloc(0), value: undefined };
  }
  const type = (ctx.get('content-type').split(';')[0] ?? '').trim().toLowerCase();
  const other = kind === 'form' ? 'application/x-www-form-urlencoded' : kind === 'json-or-csv' ? 'text/csv' : null;
  if (!isJsonType(type) && type !== other) {
    throw new AppError('unsupported_media_type', { type: type || '(none)', expected: other ? `application/json or ${other}` : 'application/json' });
  }
  let raw: Buffer;
  try {
    raw = await getRawBody(ctx.req, { limit, length: ctx.get('content-length') || undefined });
  } catch (err) {
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
    return { raw, value: JSON.parse(raw.toString('utf8').replace(/^\uFEFF/, '')) };
  } catch (err) {
    throw new AppError('malformed_json', { detail: (err as Error).message });
  }
}
