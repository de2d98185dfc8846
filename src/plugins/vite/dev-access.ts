// What `gatehouse plugin dev` lets a client of the dev server have (docs/plugins.md "Dev server
// and hot reload"; docs/security.md "The plugin dev server"). Any program on the developer's
// machine, and any web page their browser has open, can reach the dev server's port: so the
// plugin's API token is never served (it was in `virtual:gatehouse/plugin`); the dev server
// adds it to the requests it forwards to the appliance, only on the appliance's API paths and
// only for requests that come from the dev page's own origin. And /@fs serves the plugin's
// folder and the toolkit's files only, never the rest of the checkout (its data/ holds the
// appliance's database when `npm start` runs from it).
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { join } from 'node:path';
import type { ProxyOptions } from 'vite';
import { checkoutRoot } from '../checkout.js';

/** The appliance's paths a plugin page calls with the token:
 * callApi (/api) and pusher-js' channel auth (/broadcasting). */
const API_PATHS = ['/api/', '/broadcasting/'];

/** Whether a URL names this dev server (the Host the request was sent to; Vite's allowedHosts has checked it). */
function isOwnOrigin(value: string, host: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.host === host;
  } catch {
    return false;
  }
}

/**
 * A request the dev page made: a browser says so in Sec-Fetch-Site (sent to localhost and to
 * https), or, over plain http to a LAN address where it sends no fetch metadata, in Origin (every
 * request but a GET's) or Referer (a GET's). A request that says nothing — another program — or
 * names another origin is not the page's. Programs can send these headers too: what this keeps
 * from them is the token itself, and what keeps other sites out is the browser.
 */
export function fromDevPage(req: IncomingMessage): boolean {
  const host = req.headers.host;
  if (!host) return false;
  const { origin, referer } = req.headers;
  if (origin !== undefined && !isOwnOrigin(origin, host)) return false;
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined) return site === 'same-origin';
  if (origin !== undefined) return true;
  return referer !== undefined && isOwnOrigin(referer, host);
}

const isApiPath = (url: string | undefined): boolean => url !== undefined && API_PATHS.some((p) => url.startsWith(p));

/**
 * Vite's own rule for the Host header (its allowedHosts, not exported): localhost and its
 * subdomains, an IP address, or the host the dev server was told to listen on. Vite applies it to
 * every request and its hot-reload socket, but not to a WebSocket its proxy forwards.
 */
export function allowedHost(header: string | undefined, listenHost: string | undefined): boolean {
  if (!header) return false;
  let hostname: string;
  try {
    hostname = new URL(`http://${header}`).hostname.replace(/^\[|\]$/g, '').toLowerCase();
  } catch {
    return false;
  }
  return (
    hostname === 'localhost' ||
    hostname.endsWith('.localhost') ||
    isIP(hostname) !== 0 ||
    (listenHost !== undefined && hostname === listenHost.toLowerCase())
  );
}

/**
 * The proxy table: /api and /broadcasting with the token added as above, /sanctum and the Pusher
 * WebSocket as they are; the WebSocket only for a Host Vite would allow (a DNS-rebinding page
 * would otherwise open the appliance's socket through the dev server).
 */
export function applianceProxy(
  target: string,
  token: string | undefined,
  listenHost?: string,
): Record<string, ProxyOptions> {
  const withToken: ProxyOptions = {
    target,
    changeOrigin: true,
    configure: (proxy) => {
      if (!token) return;
      proxy.on('proxyReq', (proxyReq, req) => {
        // A request that brings its own credential (a page that signed a person in) keeps it.
        if (req.headers.authorization === undefined && isApiPath(req.url) && fromDevPage(req))
          proxyReq.setHeader('authorization', `Bearer ${token}`);
      });
    },
  };
  return {
    '/api': withToken,
    '/broadcasting': withToken,
    // The cookie-session flow (docs/auth.md) for a plugin signed in as a person, such as the console.
    '/sanctum': { target, changeOrigin: true },
    '^/app/': {
      target: target.replace(/^http/, 'ws'),
      ws: true,
      changeOrigin: true,
      configure: (proxy) => {
        proxy.on('proxyReqWs', (proxyReq, req, socket) => {
          if (allowedHost(req.headers.host, listenHost)) return;
          proxyReq.destroy(); // before it is sent: nothing reaches the appliance
          socket.end('HTTP/1.1 403 Forbidden\r\nConnection: close\r\n\r\n');
        });
      },
    },
  };
}

/** Vite's server.fs: the plugin's folder and the toolkit's files; databases and secrets refused even there. */
export function servedFiles(root: string): { strict: true; allow: string[]; deny: string[] } {
  return {
    strict: true,
    allow: [root, join(checkoutRoot(), 'src/plugins/toolkit')],
    // Vite's own defaults, and the appliance's database and its WAL should a data folder sit inside the plugin.
    deny: ['.env', '.env.*', '*.{crt,pem,key}', '**/.git/**', '**/*.db', '**/*.db-wal', '**/*.db-shm', '**/*.sqlite*'],
  };
}
