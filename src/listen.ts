import type { Server } from 'node:net';
import { configLeaves } from './config/overlay.js';

// Opening a listening port, for every listener of the appliance (HTTP, HTTPS, MQTT, MQTT over
// TLS). A port another process holds is the commonest failed start there is (a second
// Gatehouse, a mosquitto on 1883): the error names the port, the setting and the environment
// variable that move it, so the log's last line says what to do (docs/operations.md).

export class ListenError extends Error {
  constructor(
    message: string,
    readonly port: number,
    readonly setting: string,
  ) {
    super(message);
    this.name = 'ListenError';
  }
}

/** Listens on `port` at `host`; `setting` is the config key that chose the port (`mqtt.port`). */
export function listen(server: Server, port: number, host: string | undefined, setting: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const failed = (err: NodeJS.ErrnoException) => reject(listenError(err, port, host, setting));
    server.once('error', failed);
    server.listen(port, host, () => {
      server.off('error', failed);
      resolve();
    });
  });
}

function listenError(err: NodeJS.ErrnoException, port: number, host: string | undefined, setting: string): Error {
  const leaf = configLeaves.find((l) => l.path.join('.') === setting);
  const move = leaf ? `set ${leaf.env} (or ${setting} in the config file, or --${leaf.flag})` : `set ${setting}`;
  const where = `port ${port}${host ? ` on ${host}` : ''}`;
  if (err.code === 'EADDRINUSE') {
    return new ListenError(
      `${where} is already in use (${setting}): another Gatehouse may be running here, or another server holds it; stop it, or ${move} to another port`,
      port,
      setting,
    );
  }
  if (err.code === 'EACCES')
    return new ListenError(
      `${where} may not be opened by this user (${setting}): ${move} to a port above 1023`,
      port,
      setting,
    );
  if (err.code === 'EADDRNOTAVAIL')
    return new ListenError(`${where}: no interface of this machine has that address (http.host)`, port, setting);
  return err;
}
