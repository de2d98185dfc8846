import type { Context, Next } from 'koa';

// Headers on every answer of the HTTP app (OWASP REST Security and HTTP
// Headers cheat sheets), set before the route runs so errors carry them too (the error
// envelope answers from the same context; a route may replace any of them):
// - `X-Content-Type-Options: nosniff`: a browser never guesses a type other than the one sent
//   (an exported CSV or a JSON body holding markup is never run as HTML or script);
// - `Cache-Control: no-store`: tokens, webhook secrets, reader one-time passwords, gateway
//   tokens and channel signatures are answered by the API, and the rest is the live state of
//   the doors; no answer is worth a copy in a browser or proxy cache, and a default cannot be
//   forgotten on the next route that shows a secret;
// - `Content-Security-Policy: default-src 'none'; frame-ancestors 'none'` and
//   `X-Frame-Options: DENY` (for browsers without CSP 2): nothing here may be framed by another
//   site, and a response opened in a browser loads nothing. The console's pages
//   (console-files.ts) set their own policy, keeping `frame-ancestors 'none'`, and its files
//   their own Cache-Control.

export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'X-Content-Type-Options': 'nosniff',
  'Cache-Control': 'no-store',
  'Content-Security-Policy': "default-src 'none'; frame-ancestors 'none'",
  'X-Frame-Options': 'DENY',
};

export function securityHeaders() {
  return async (ctx: Context, next: Next) => {
    ctx.set(SECURITY_HEADERS);
    await next();
  };
}
