import type { Clock } from '../clock.js';
import type { BridgePaths } from './bridge-paths.js';
import { iso } from '../clock.js';
import { AppError, found, validationError } from '../errors.js';
import type { EventBus } from '../events/bus.js';
import { commit } from '../events/unit-of-work.js';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import {
  type BridgeDevice,
  type BridgeDeviceSettings,
  type BridgeFraming,
  type CreateBridgeDevice,
  DEVICE_DEFAULTS,
  type UpdateBridgeDevice,
} from '../resources/bridge-device.js';

// Readers plugged into the box (docs/bridge.md): a serial port or a USB HID device
// that acts as a reader. This is their record (REST and the config file); the ports themselves
// are opened by firmware-bridge/, which listens for bridge_device.saved / .deleted and reports
// each device's live state (connected, counters) back for the answers. The settings' schema and
// the answer's shape are in resources/bridge-device.ts.

interface Row {
  id: number;
  project_id: number;
  name: string;
  settings: string;
  managed_by: 'api' | 'config';
  created_at: string;
  updated_at: string;
}

/** Creates the device's reader when it is missing (Readers.create, or a refusal on an edge). */
export type EnsureReader = (
  projectId: number,
  identifier: string,
  accessPointId: number | null,
  framing: BridgeFraming,
) => void;

export class BridgeDevices {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly bus: EventBus,
    private readonly ensureReader: EnsureReader,
    /** The files a device may name (bridge-paths.ts). */
    private readonly paths: BridgePaths,
    /** Why the bridge could not decode with these settings (a keymap it refuses), or null. */
    private readonly checkDecoder: (settings: BridgeDeviceSettings) => string | null = () => null,
  ) {}

  list(projectId: number | null, offset = 0, limit = 1_000_000): { items: BridgeDevice[]; total: number } {
    const where = projectId === null ? '' : 'WHERE project_id = ?';
    const args = projectId === null ? [] : [projectId];
    const rows = statement(this.db, `SELECT * FROM bridge_devices ${where} ORDER BY id LIMIT ? OFFSET ?`).all(
      ...args,
      limit,
      offset,
    ) as Row[];
    const total = (
      statement(this.db, `SELECT count(*) AS n FROM bridge_devices ${where}`).get(...args) as { n: number }
    ).n;
    return { items: rows.map(deviceOf), total };
  }

  get(projectId: number, id: number): BridgeDevice {
    return deviceOf(
      found(
        statement(this.db, 'SELECT * FROM bridge_devices WHERE project_id = ? AND id = ?').get(projectId, id) as
          | Row
          | undefined,
        'Bridge device',
      ),
    );
  }

  byId(id: number): BridgeDevice | null {
    const row = statement(this.db, 'SELECT * FROM bridge_devices WHERE id = ?').get(id) as Row | undefined;
    return row ? deviceOf(row) : null;
  }

  create(projectId: number, body: CreateBridgeDevice, managedBy: 'api' | 'config' = 'api'): BridgeDevice {
    const { name: _name, ...given } = stripUndefined(body);
    const settings = complete({ ...DEVICE_DEFAULTS, ...given } as BridgeDeviceSettings);
    this.#check(projectId, body.name, settings, null);
    return commit(this.db, this.bus, (work) => {
      const now = iso(this.clock.now());
      const { lastInsertRowid } = statement(
        this.db,
        'INSERT INTO bridge_devices (project_id, name, settings, managed_by, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)',
      ).run(projectId, body.name, JSON.stringify(settings), managedBy, now, now);
      const device = this.get(projectId, Number(lastInsertRowid));
      work.emit('bridge_device.saved', { projectId, id: device.id });
      return device;
    });
  }

  /** Merges the body into the device's settings. A device from the config file is changed there (409), unless
   * `managedBy` says the config file does it. */
  update(projectId: number, id: number, body: UpdateBridgeDevice, managedBy: 'api' | 'config' = 'api'): BridgeDevice {
    const current = this.get(projectId, id);
    if (current.managedBy !== managedBy) throw configManaged(current);
    const { name: newName, ...changes } = stripUndefined(body);
    const deviceName = newName ?? current.name;
    const feedback = { ...current.feedback, ...changes.feedback };
    const settings = complete({ ...settingsOf(current), ...changes, feedback } as BridgeDeviceSettings);
    this.#check(projectId, deviceName, settings, id);
    return commit(this.db, this.bus, (work) => {
      statement(this.db, 'UPDATE bridge_devices SET name = ?, settings = ?, updated_at = ? WHERE id = ?').run(
        deviceName,
        JSON.stringify(settings),
        iso(this.clock.now()),
        id,
      );
      work.emit('bridge_device.saved', { projectId, id });
      return this.get(projectId, id);
    });
  }

  delete(projectId: number, id: number, managedBy: 'api' | 'config' = 'api'): void {
    commit(this.db, this.bus, (work) => {
      const current = this.get(projectId, id);
      if (current.managedBy !== managedBy) throw configManaged(current);
      statement(this.db, 'DELETE FROM bridge_devices WHERE id = ?').run(id);
      work.emit('bridge_device.deleted', { projectId, id });
    });
  }

  /** The config file's devices (at start): each created or updated
   * by name; config devices no longer in the file deleted. */
  applyConfig(devices: readonly { projectId: number; body: CreateBridgeDevice }[]): void {
    const keep = new Set<number>();
    for (const { projectId, body } of devices) {
      const existing = statement(this.db, 'SELECT * FROM bridge_devices WHERE project_id = ? AND name = ?').get(
        projectId,
        body.name,
      ) as Row | undefined;
      if (existing && existing.managed_by === 'api')
        throw new AppError('conflict', {
          detail: `Bridge device "${body.name}" in the config file already exists over REST: rename one of them.`,
        });
      const device = existing
        ? this.update(projectId, existing.id, { ...DEVICE_DEFAULTS, ...body }, 'config')
        : this.create(projectId, body, 'config');
      keep.add(device.id);
    }
    for (const row of statement(this.db, "SELECT * FROM bridge_devices WHERE managed_by = 'config'").all() as Row[]) {
      if (!keep.has(row.id)) this.delete(row.project_id, row.id, 'config');
    }
  }

  #check(projectId: number, deviceName: string, s: BridgeDeviceSettings, id: number | null): void {
    const pathProblem = s.path === null ? null : this.paths.problem(s.path, s.framing);
    if (pathProblem) throw validationError({ path: [`The path is ${pathProblem}.`] });
    const taken = statement(this.db, 'SELECT id FROM bridge_devices WHERE project_id = ? AND name = ?').get(
      projectId,
      deviceName,
    ) as { id: number } | undefined;
    if (taken && taken.id !== id) throw validationError({ name: ['The name has already been taken.'] });
    if (
      s.access_point_id !== null &&
      !statement(this.db, 'SELECT 1 FROM access_points WHERE project_id = ? AND id = ?').get(
        projectId,
        s.access_point_id,
      )
    ) {
      throw validationError({ access_point_id: ['The selected access point id is invalid.'] });
    }
    const problem = this.checkDecoder(s);
    if (problem) throw validationError({ keymap: [problem] });
    // Last, in a transaction of its own: a device refused above makes no reader.
    this.ensureReader(projectId, s.reader_identifier, s.access_point_id, s.framing);
  }
}

/** Path or USB ids, exactly one; a keyboard layout only means something for keyboard-mode scanners. */
function complete<T extends BridgeDeviceSettings>(s: T): T {
  if ((s.path === null) === (s.match === null)) {
    const message = 'Give the device either a path or USB ids to match (not both).';
    throw validationError({ path: [message], match: [message] });
  }
  return { ...s, feedback: { grant: s.feedback.grant ?? null, deny: s.feedback.deny ?? null } };
}

function configManaged(d: BridgeDevice): AppError {
  return new AppError('conflict', { detail: `Bridge device "${d.name}" comes from the config file: change it there.` });
}

function settingsOf(d: BridgeDevice): BridgeDeviceSettings {
  const { id: _id, projectId: _p, name: _n, managedBy: _m, createdAt: _c, updatedAt: _u, ...settings } = d;
  return settings;
}

function deviceOf(row: Row): BridgeDevice {
  const settings = JSON.parse(row.settings) as BridgeDeviceSettings;
  return {
    ...settings,
    id: row.id,
    projectId: row.project_id,
    name: row.name,
    managedBy: row.managed_by,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

function stripUndefined<T extends object>(o: T): { [K in keyof T]: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as {
    [K in keyof T]: Exclude<T[K], undefined>;
  };
}
