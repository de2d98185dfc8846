import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { sendEach, textFrame, useWsSend, writeFrames } from '../../src/realtime/fan-out.js';
import { hasShape, socketOf, WS_WRITTEN_AGAINST, wsVersion } from '../../src/realtime/ws-internals.js';

// ws's private surface (src/realtime/ws-internals.ts): the broadcast fan-out
// writes pre-built frames to the socket under each WebSocket. On the installed ws, over a real
// HTTP upgrade with a real ws client: the field is the upgrade's socket, frames written there
// arrive as messages, and the public-API fallback delivers the same messages. A ws release that
// moves the field fails the first test instead of silently stopping dashboards.

let server: Server | null = null;
const sockets: WebSocket[] = [];

/** A server-side WebSocket with the socket its upgrade came on, and the client connected to it. */
async function pair(): Promise<{ serverSide: WebSocket; upgradeSocket: Duplex; clientSide: WebSocket }> {
  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false });
  server = createServer();
  const accepted = new Promise<{ serverSide: WebSocket; upgradeSocket: Duplex }>((resolve) =>
    server!.on('upgrade', (req, socket, head) =>
      wss.handleUpgrade(req, socket, head, (ws) => resolve({ serverSide: ws, upgradeSocket: socket })),
    ),
  );
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const clientSide = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}/`);
  sockets.push(clientSide);
  await once(clientSide, 'open');
  const { serverSide, upgradeSocket } = await accepted;
  sockets.push(serverSide);
  return { serverSide, upgradeSocket, clientSide };
}

function messages(ws: WebSocket, n: number): Promise<string[]> {
  return new Promise((resolve) => {
    const got: string[] = [];
    ws.on('message', (data, isBinary) => {
      expect(isBinary).toBe(false);
      got.push(data.toString());
      if (got.length === n) resolve(got);
    });
  });
}

afterEach(async () => {
  for (const ws of sockets.splice(0)) ws.terminate();
  if (server) await new Promise((resolve) => server!.close(resolve));
  server = null;
});

describe('ws internals', () => {
  it('finds the socket of a WebSocket where the fan-out writes, on the installed ws', async () => {
    const { serverSide, upgradeSocket } = await pair();
    expect(socketOf(serverSide)).toBe(upgradeSocket);
    expect(hasShape(serverSide, upgradeSocket)).toBe(true);
    expect(wsVersion().startsWith(`${WS_WRITTEN_AGAINST}.`)).toBe(true);
  });

  it('says the shape has moved when the socket is not where it was', async () => {
    const { serverSide, upgradeSocket } = await pair();
    Object.defineProperty(serverSide, '_socket', { value: undefined, configurable: true });
    expect(hasShape(serverSide, upgradeSocket)).toBe(false);
  });

  it('delivers frames written straight to the socket as text messages, one write for several', async () => {
    const { serverSide, clientSide } = await pair();
    const payloads = ['{"event":"a"}', 'x'.repeat(300), 'y'.repeat(70_000)];
    const got = messages(clientSide, 3);
    expect(writeFrames(serverSide, Buffer.concat(payloads.map((p) => textFrame(Buffer.from(p)))))).toBe(true);
    expect(await got).toEqual(payloads);
  });

  it('delivers the same messages through ws.send once direct writes are off (the fallback)', async () => {
    const { serverSide, clientSide } = await pair();
    const payloads = ['{"event":"b"}', 'z'.repeat(200), 'w'.repeat(66_000)];
    const frames = Buffer.concat(payloads.map((p) => textFrame(Buffer.from(p))));
    const got = messages(clientSide, 3);
    expect(sendEach(serverSide, frames)).toBe(true);
    expect(await got).toEqual(payloads);
    // And writeFrames goes the same way from now on.
    useWsSend();
    Object.defineProperty(serverSide, '_socket', { value: undefined, configurable: true });
    const again = messages(clientSide, 3);
    expect(writeFrames(serverSide, frames)).toBe(true);
    expect(await again).toEqual(payloads);
  });

  it('reports a closed socket as gone rather than writing to it', async () => {
    const { serverSide, clientSide } = await pair();
    clientSide.close();
    await once(serverSide, 'close');
    expect(sendEach(serverSide, textFrame(Buffer.from('late')))).toBe(false);
  });
});
