// A TcpProxy (test/helpers/tcp-proxy.ts) in its own process for bench:cloud-sync, so forwarding
// the link's bytes does not share an event loop with the bench's MQTT clients. argv: the target
// port. IPC: {mode} sets the mode, {target} the target port; each is acknowledged.
import { type ProxyMode, TcpProxy } from '../test/helpers/tcp-proxy.js';

const proxy = new TcpProxy(Number(process.argv[2]));
const port = await proxy.start();
process.send!({ port });
process.on('message', (m: { mode?: ProxyMode; target?: number }) => {
  if (m.mode) proxy.set(m.mode);
  if (m.target) proxy.targetPort = m.target;
  process.send!({ ok: true });
});
process.on('disconnect', () => process.exit(0));
