import type { Clock } from '../clock.js';
import { iso } from '../clock.js';
import type { EventBus } from '../events/bus.js';
import type { ReaderHealth, ReaderStatus } from '../resources/devices.js';

// Where each reader stands (docs/mqtt.md: reader state): connected to the broker itself, or
// reported by the gateway that fronts it, when it was last seen and when it last scanned.
// Kept in memory: it changes on every scan and is true only of this run; after a restart a
// reader is `unknown` until it connects, a gateway reports it, or it scans.

interface Entry {
  projectId: number;
  mqttConnections: number;
  bridgeDevices: number;
  gatewayStatus: string | null;
  lastSeen: number | null;
  lastScan: number | null;
  errors: number;
  lastError: string | null;
  lastErrorAt: number | null;
}

const UNKNOWN: ReaderStatus = {
  status: 'unknown',
  connected_via: null,
  gateway_status: null,
  last_seen: null,
  last_scan: null,
};
const HEALTHY: ReaderHealth = { errors: 0, last_error: null, last_error_at: null };

export class ReaderStates {
  readonly #entries = new Map<number, Entry>();

  constructor(
    private readonly clock: Clock,
    private readonly bus: EventBus,
  ) {}

  of(readerId: number): ReaderStatus {
    const e = this.#entries.get(readerId);
    if (!e) return UNKNOWN;
    const online =
      e.mqttConnections > 0 || e.bridgeDevices > 0 || e.gatewayStatus === 'connected' || e.gatewayStatus === 'online';
    const known = online || e.gatewayStatus !== null || e.lastSeen !== null;
    return {
      status: online ? 'online' : known ? 'offline' : 'unknown',
      connected_via:
        e.mqttConnections > 0 ? 'mqtt' : e.bridgeDevices > 0 ? 'bridge' : e.gatewayStatus !== null ? 'gateway' : null,
      gateway_status: e.gatewayStatus,
      last_seen: e.lastSeen === null ? null : iso(e.lastSeen),
      last_scan: e.lastScan === null ? null : iso(e.lastScan),
    };
  }

  /** Its refused scans (REST only). */
  health(readerId: number): ReaderHealth {
    const e = this.#entries.get(readerId);
    if (!e || e.errors === 0) return HEALTHY;
    return {
      errors: e.errors,
      last_error: e.lastError,
      last_error_at: e.lastErrorAt === null ? null : iso(e.lastErrorAt),
    };
  }

  /** A scan of the reader refused before a decision (`error`:
   * the code answered on its decisions topic). Not announced. */
  failed(projectId: number, readerId: number, error: string): void {
    const e = this.#entry(projectId, readerId);
    e.errors++;
    e.lastError = error;
    e.lastErrorAt = this.clock.now();
  }

  connected(projectId: number, readerId: number): void {
    this.#change(projectId, readerId, (e) => {
      e.mqttConnections++;
      e.lastSeen = this.clock.now();
    });
  }

  disconnected(projectId: number, readerId: number): void {
    this.#change(projectId, readerId, (e) => {
      e.mqttConnections = Math.max(0, e.mqttConnections - 1);
      e.lastSeen = this.clock.now();
    });
  }

  /** A device plugged into the box that acts as the reader was opened, or went away (firmware-bridge/). */
  bridged(projectId: number, readerId: number, connected: boolean): void {
    this.#change(projectId, readerId, (e) => {
      e.bridgeDevices = Math.max(0, e.bridgeDevices + (connected ? 1 : -1));
      e.lastSeen = this.clock.now();
    });
  }

  /** A scan from the reader (any transport): seen now, scanned at `at`. Not announced (too frequent). */
  scanned(projectId: number, readerId: number, at: number): void {
    const e = this.#entry(projectId, readerId);
    e.lastSeen = this.clock.now();
    if (e.lastScan === null || at > e.lastScan) e.lastScan = at;
  }

  /** A gateway reported the reader; `lastScan` as the gateway saw it. */
  reported(projectId: number, readerId: number, status: string, lastScan: number | null): void {
    this.#change(projectId, readerId, (e) => {
      e.gatewayStatus = status;
      e.lastSeen = this.clock.now();
      if (lastScan !== null && (e.lastScan === null || lastScan > e.lastScan)) e.lastScan = lastScan;
    });
  }

  /** The gateway went offline: what it reported of its readers no longer holds. */
  gatewayLost(projectId: number, readerIds: readonly number[]): void {
    for (const id of readerIds) {
      const e = this.#entries.get(id);
      if (e && e.gatewayStatus !== null) this.#change(projectId, id, (x) => (x.gatewayStatus = 'offline'));
    }
  }

  forget(readerId: number): void {
    this.#entries.delete(readerId);
  }

  #entry(projectId: number, readerId: number): Entry {
    let e = this.#entries.get(readerId);
    if (!e)
      this.#entries.set(
        readerId,
        (e = {
          projectId,
          mqttConnections: 0,
          bridgeDevices: 0,
          gatewayStatus: null,
          lastSeen: null,
          lastScan: null,
          errors: 0,
          lastError: null,
          lastErrorAt: null,
        }),
      );
    return e;
  }

  /** Applies a change and announces the reader's state when its status or route changed. */
  #change(projectId: number, readerId: number, apply: (e: Entry) => void): void {
    const before = this.of(readerId);
    apply(this.#entry(projectId, readerId));
    const after = this.of(readerId);
    if (
      before.status !== after.status ||
      before.connected_via !== after.connected_via ||
      before.gateway_status !== after.gateway_status
    ) {
      this.bus.emit('reader.status_changed', {
        projectId,
        readerId,
        status: { ...after },
        timestamp: iso(this.clock.now()),
      });
    }
  }
}
