import type { Occupancy } from '../access/occupancy.js';
import type { VenueIndex } from '../access/venue-index.js';
import type { EventBus } from '../events/bus.js';
import { commit } from '../events/unit-of-work.js';
import type { Module } from '../lifecycle.js';
import type { Logger } from '../logger.js';
import type { Database } from '../store/database.js';

// States the box observes rather than commits (docs/webhooks-outgoing.md): a zone reaching its
// capacity (after the scan that filled it is journaled) and a reader going offline. Each is
// written to the outbox when observed, in a transaction of its own: a crash in the instant
// between the observation and that write loses the notice, not the state (the zone's count and
// the reader's status are still right, and the next change is noticed).

/** A full zone is told full again only after emptying to this share of its capacity. */
const REARM = 0.9;

export class ObservedEvents implements Module {
  readonly name = 'observed events';
  /** Zones at capacity, so each reaching it is told once until it has emptied to REARM of it. */
  readonly #full = new Set<number>();

  constructor(
    private readonly db: Database,
    private readonly bus: EventBus,
    private readonly index: VenueIndex,
    private readonly occupancy: Occupancy,
    private readonly log: Logger,
  ) {}

  start(): void {
    this.bus.on(this, 'zone.occupancy_changed', (e) => {
      for (const zoneId of e.zoneIds) {
        const zone = this.index.zones.get(zoneId);
        if (!zone || zone.capacity === null) continue;
        const count = this.occupancy.count(zoneId);
        if (count < zone.capacity) {
          // A zone kept full by a door (one out, one in) must not make an event per pair of scans.
          if (count <= Math.floor(zone.capacity * REARM)) this.#full.delete(zoneId);
          continue;
        }
        if (this.#full.has(zoneId)) continue;
        this.#full.add(zoneId);
        this.#record('zone.capacity_reached', e.projectId, {
          zone_id: zoneId,
          capacity: zone.capacity,
          current_count: count,
          timestamp: e.timestamp,
        });
      }
    });
    this.bus.on(this, 'reader.status_changed', (e) => {
      if (e.status.status !== 'offline') return;
      this.#record('reader.offline', e.projectId, { reader_id: e.readerId, ...e.status, timestamp: e.timestamp });
    });
  }

  stop(): void {
    this.bus.removeListeners(this);
  }

  #record(event: 'zone.capacity_reached' | 'reader.offline', projectId: number, data: Record<string, unknown>): void {
    try {
      commit(this.db, this.bus, (work) => work.record({ event, projectId, data }));
    } catch (err) {
      this.log.warn({ err, event }, 'observed event not recorded (the store was busy)');
    }
  }
}
