import { createReadStream, existsSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Context, Next } from 'koa';
import { AppError } from '../errors.js';
import type { AnyRoute } from './route.js';

// The staff console (docs/console.md): the static files `scripts/build.mjs` writes to
// dist/console, served at `/` after the route table, so no REST, webhook, broadcasting, Sanctum,
// metrics or health route is ever shadowed. An unknown GET path without a file extension
// outside those prefixes is a console page (history routing): it gets index.html. Hashed
// files under assets/ are cached for a year; index.html and the unhashed files (favicon,
// manifest assets) are revalidated on every load, so a new build is picked up at once.

/** Upgrade-only paths the route table does not list (http/upgrade.ts). */
const UPGRADE_PREFIXES = ['app', 'mqtt'];

/**
 * The console's own policy (docs/security.md 12: a page sets its own and keeps frame-ancestors):
 * scripts, styles, images, fonts and connections to its own origin only (CSP 3: 'self' also
 * matches ws:/wss: to the same host, the Pusher socket at /app/{key}), nothing inline, no plugins,
 * no framing.
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const YEAR = 'public, max-age=31536000, immutable';

/** dist/console next to the bundle (dist/main.js), or the
 * project's dist/console when running from the sources (vitest). */
export function defaultConsoleDir(): string {
  const here = import.meta.url;
  return fileURLToPath(here.endsWith('.ts') ? new URL('../../dist/console', here) : new URL('./console', here));
}

/** The first path segments the route table and the upgrades own: never a console page. */
export function reservedSegments(routes: readonly AnyRoute[]): Set<string> {
  const segments = new Set(UPGRADE_PREFIXES);
  for (const route of routes) segments.add(route.path.split('/')[1] ?? '');
  segments.delete('');
  return segments;
}

export function consoleFiles(dir: string, routes: readonly AnyRoute[]) {
  const root = resolve(dir);
  const reserved = reservedSegments(routes);
  return async (ctx: Context, next: Next) => {
    await next();
    if (ctx.state.route || ctx.body !== undefined || ctx.status !== 404) return;
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return;
    let path: string;
    try {
      path = decodeURIComponent(ctx.path);
    } catch {
      return; // a malformed escape: the route-not-found answer
    }
    const first = path.split('/')[1] ?? '';
    if (reserved.has(first) || path.includes('\0')) return;
    if (!existsSync(join(root, 'index.html'))) return notBuilt(ctx);

    const file = resolve(root, `.${path}`);
    const inside = file === root || file.startsWith(root + sep);
    const named =
      inside &&
      !file
        .slice(root.length)
        .split(sep)
        .some((part) => part.startsWith('.'));
    if (!named) return; // a dot file or a path out of the folder: the route-not-found answer
    const found = await stat(file).catch(() => null);
    if (found?.isFile()) return send(ctx, file, found, file.startsWith(join(root, 'assets') + sep));
    // A console page (history routing): any path whose last segment has no extension.
    if (extname(path) !== '') return;
    const index = join(root, 'index.html');
    const indexStat = await stat(index);
    send(ctx, index, indexStat, false);
  };
}

function send(ctx: Context, file: string, info: { size: number; mtimeMs: number }, hashed: boolean): void {
  ctx.state.console = true;
  ctx.type = extname(file) || 'application/octet-stream';
  ctx.set('Cache-Control', hashed ? YEAR : 'no-cache');
  if (ctx.type.startsWith('text/html')) ctx.set('Content-Security-Policy', CONSOLE_CSP);
  ctx.set('ETag', `W/"${info.size.toString(16)}-${Math.floor(info.mtimeMs).toString(16)}"`);
  ctx.status = 200;
  if (ctx.fresh) {
    ctx.status = 304;
    return;
  }
  // HEAD: Koa sends the headers only; no stream is opened that nobody would read.
  ctx.body = ctx.method === 'HEAD' ? Buffer.alloc(0) : createReadStream(file);
  ctx.length = info.size;
}

/** 503 before the console was built: a short page for a browser, the error envelope for anything else. */
function notBuilt(ctx: Context): void {
  const error = new AppError('console_not_built');
  if (!ctx.accepts('json', 'html') || ctx.accepts('json', 'html') === 'json') throw error;
  ctx.status = error.status;
  ctx.type = 'html';
  ctx.set('Retry-After', '60');
  ctx.body = `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>Gatehouse: console not built</title></head><body><h1>The staff console is not built</h1><p>${error.message}</p></body></html>\n`;
}
