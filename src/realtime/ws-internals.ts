import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';

// ws's private surface, in one place (docs/decisions.md, "Other libraries'
// internals behind one door each"): the TCP socket under a WebSocket
// (`_socket`, set by ws 8's setSocket), which the broadcast fan-out writes pre-built frames to
// (fan-out.ts; docs/performance.md: framing once per broadcast instead of once per socket).
// Nothing else in src/ names a ws private field.
//
// Written against ws 8 (package.json pins ~8.23.0: patch releases only). The first connection
// checks that the field is the very socket the upgrade came on; if it is not (a ws release
// moved it), the fan-out falls back to ws's public send() for every socket from then on, and the
// log says so once, naming ws and its version: dashboards keep receiving, more slowly, rather
// than silently receiving nothing. test/realtime/ws-internals.test.ts checks the field on a real
// connection and the fallback's frames, so `npm test` fails on a ws release that moved it.

export const WS_WRITTEN_AGAINST = '8';

/** The socket under `ws` (undefined when ws keeps it elsewhere). */
export const socketOf = (ws: WebSocket): Duplex | undefined => (ws as unknown as { _socket?: Duplex })._socket;

/** Whether ws keeps the upgrade's socket where this module reads it. */
export function hasShape(ws: WebSocket, upgradeSocket: Duplex): boolean {
  return socketOf(ws) === upgradeSocket;
}

/** ws's version as installed (read from its package.json next to its entry point). */
export function wsVersion(): string {
  try {
    const main = createRequire(import.meta.url).resolve('ws');
    return (JSON.parse(readFileSync(join(dirname(main), 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}
