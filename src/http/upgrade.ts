import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';

// WebSocket upgrades on the HTTP port, routed by path (docs/architecture.md): the Pusher-protocol
// server at /app/{key}, MQTT over WebSocket at /mqtt. Any other path is answered 404 and closed.

export type UpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer) => void;

export class UpgradeRouter {
  readonly #routes: { matches: (path: string) => boolean; handler: UpgradeHandler }[] = [];

  /** `prefix` ending in `/` matches everything under it; otherwise the exact path. */
  add(prefix: string, handler: UpgradeHandler): void {
    const matches = prefix.endsWith('/')
      ? (path: string) => path.startsWith(prefix) && path.length > prefix.length
      : (path: string) => path === prefix;
    this.#routes.push({ matches, handler });
  }

  readonly handle: UpgradeHandler = (req, socket, head) => {
    const path = (req.url ?? '/').split('?')[0]!;
    const route = this.#routes.find((r) => r.matches(path));
    if (route && (req.headers.upgrade ?? '').toLowerCase() === 'websocket') return route.handler(req, socket, head);
    socket.end(
      'HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Type: application/json\r\nX-Content-Type-Options: nosniff\r\n\r\n{"message":"No WebSocket endpoint at this path."}',
    );
  };
}
