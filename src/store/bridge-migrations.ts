import type { Migration } from './migration.js';

// Readers plugged into the box (docs/bridge.md).

export const bridgeMigrations: readonly Migration[] = [
  {
    version: 17,
    name: 'firmware bridge: devices plugged into the box',
    sql: `
      -- A serial or USB HID device that acts as a reader. Its settings (path or USB ids, framing,
      -- serial settings, feedback bytes, debounce) are one JSON document checked by
      -- src/devices/bridge-devices.ts; its live state (connected, counters) is in memory.
      CREATE TABLE bridge_devices (
        id INTEGER PRIMARY KEY,
        project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        settings TEXT NOT NULL,
        managed_by TEXT NOT NULL DEFAULT 'api' CHECK (managed_by IN ('api', 'config')),
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (project_id, name)
      );
    `,
  },
];
