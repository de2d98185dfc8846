import { loadConfig } from '../src/config/load.js';

// The settings of an appliance a bench starts: on loopback, on free ports, in its data directory.
// GATEHOUSE_* settings in the bench's own environment apply too (GATEHOUSE_STORE_CHECKPOINT_INTERVAL_MS=…
// npm run bench:engine), under what the bench itself must set.

/** The GATEHOUSE_* variables of this process's environment. */
export function settingsFromEnvironment(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(process.env).filter(
      (e): e is [string, string] => e[0].startsWith('GATEHOUSE_') && e[1] !== undefined,
    ),
  );
}

/** The config of an appliance run inside the bench's process; `extra` over the defaults. */
export function benchConfig(dataDir: string, extra: Record<string, string> = {}) {
  return loadConfig({
    env: {
      ...settingsFromEnvironment(),
      GATEHOUSE_DATA_DIR: dataDir,
      GATEHOUSE_HTTP_HOST: '127.0.0.1',
      GATEHOUSE_HTTP_PORT: '0',
      GATEHOUSE_MQTT_PORT: '0',
      GATEHOUSE_ADMIN_PASSWORD: 'bench password',
      ...extra,
    },
    flags: [],
  });
}
