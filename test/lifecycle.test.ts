import { createServer, connect, type Server } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { Gatehouse } from '../src/app.js';
import { loadConfig } from '../src/config/load.js';
import { Lifecycle, type Module, module } from '../src/lifecycle.js';
import { startAppliance } from './helpers/appliance.js';

function recordingLog() {
  const lines: { level: number; module?: string; msg: string }[] = [];
  const log = pino({ level: 'debug' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  return { log, lines };
}

const refused = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });

describe('the lifecycle', () => {
  it('starts modules in order and stops them in reverse', async () => {
    const calls: string[] = [];
    const m = (name: string) =>
      module(
        name,
        () => calls.push(`start ${name}`),
        () => calls.push(`stop ${name}`),
      );
    const lifecycle = new Lifecycle(pino({ level: 'silent' }));
    await lifecycle.start([m('a'), m('b')]);
    await lifecycle.start([m('c')]);
    expect(lifecycle.started).toEqual(['a', 'b', 'c']);
    await lifecycle.stop();
    expect(calls).toEqual(['start a', 'start b', 'start c', 'stop c', 'stop b', 'stop a']);
    expect(lifecycle.started).toEqual([]);
  });

  it('stops every module even when one fails to stop, and logs that one by name', async () => {
    const stopped: string[] = [];
    const { log, lines } = recordingLog();
    const lifecycle = new Lifecycle(log);
    const failing: Module = {
      name: 'b',
      start() {},
      stop() {
        throw new Error('stuck');
      },
    };
    await lifecycle.start([
      module(
        'a',
        () => {},
        () => stopped.push('a'),
      ),
      failing,
      module(
        'c',
        () => {},
        async () => void stopped.push('c'),
      ),
    ]);
    await lifecycle.stop();
    expect(stopped).toEqual(['c', 'a']);
    expect(lines.filter((l) => l.level === 50)).toEqual([
      expect.objectContaining({ module: 'b', msg: 'module failed to stop' }),
    ]);
  });

  it('stops what started, in reverse, when a module fails to start, and throws its error', async () => {
    const calls: string[] = [];
    const lifecycle = new Lifecycle(pino({ level: 'silent' }));
    const failing = module('b', () => {
      throw new Error('port in use');
    });
    await expect(
      lifecycle.start([
        module(
          'a',
          () => calls.push('start a'),
          () => calls.push('stop a'),
        ),
        failing,
        module('c', () => calls.push('start c')),
      ]),
    ).rejects.toThrow('port in use');
    expect(calls).toEqual(['start a', 'stop a']);
    expect(lifecycle.started).toEqual([]);
  });
});

describe('the appliance lifecycle', () => {
  it('runs the store first and HTTP last, removes every bus listener and closes every port on stop', async () => {
    const gh = await startAppliance();
    const { app } = gh;
    expect(app.modules[0]).toBe('store');
    expect(app.modules.slice(-3)).toEqual(['http', 'expired sessions', 'ready']);
    expect(app.modules.indexOf('access-event journal')).toBeLessThan(app.modules.indexOf('mqtt'));
    const bus = app.services.bus;
    expect(bus.listenerCount).toBeGreaterThan(0);
    const ports = [app.httpPort, app.mqtt.ports.tcp];
    await gh.destroy();
    expect(app.modules).toEqual([]);
    expect(bus.listenerCount).toBe(0);
    for (const port of ports) expect(await refused(port)).toBe(true);
  });

  it('refuses to start when a module cannot, leaving nothing running: the HTTP port never opens and the store closes', async () => {
    const blocker: Server = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const taken = (blocker.address() as { port: number }).port;
    const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-lifecycle-'));
    const config = loadConfig({
      env: {
        GATEHOUSE_DATA_DIR: dataDir,
        GATEHOUSE_HTTP_HOST: '127.0.0.1',
        GATEHOUSE_HTTP_PORT: '0',
        GATEHOUSE_MQTT_PORT: String(taken),
        GATEHOUSE_ADMIN_PASSWORD: 'correct horse battery',
      },
    });
    const app = new Gatehouse(config, { log: pino({ level: 'silent' }) });
    try {
      await expect(app.start()).rejects.toThrow(/is already in use \(mqtt\.port\)/);
      expect(app.modules).toEqual([]);
      expect(app.httpPort).toBe(0);
      expect(app.store.isOpen).toBe(false);
      expect(app.services.bus.listenerCount).toBe(0);
    } finally {
      blocker.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
