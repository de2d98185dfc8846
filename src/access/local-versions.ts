import type { EventBus } from '../events/bus.js';
import type { EventName } from '../events/types.js';

// The change versions this process wrote itself (docs/engine.md, "Changes by another process"). Every write to a venue
// table takes the next store-wide change version (venue/versioned-table.ts), whichever process
// makes it; the appliance's own writes reach its decision index through the bus as they commit
// (access/index-sync.ts). What the bus announced is recorded here, so the poll of the change
// sequence (external-changes.ts) reads back only the versions nobody announced: those another
// process wrote. A local version missing here (a write that announces none) is merely read
// again, which changes nothing; a version recorded here is always this process's, since the bus
// hears a write only after it committed.

/** Every domain event that carries the change version of the write it announces. */
export const VERSIONED = [
  'access_zone.created',
  'access_zone.updated',
  'access_zone.deleted',
  'access_point.created',
  'access_point.updated',
  'access_point.deleted',
  'reader.created',
  'reader.updated',
  'reader.deleted',
  'attendee_type.created',
  'attendee_type.updated',
  'attendee_type.deleted',
  'attendee.created',
  'attendee.updated',
  'attendee.deleted',
  'credential.created',
  'credential.revoked',
  'credential.deleted',
  'time_restriction.created',
  'time_restriction.updated',
  'time_restriction.deleted',
  'blocklist_entry.created',
  'blocklist_entry.updated',
  'blocklist_entry.deleted',
  'form.created',
  'form.updated',
  'form.deleted',
  'form_submission.created',
  'credential_key.created',
  'credential_key.updated',
] as const satisfies readonly EventName[];

/** Local versions between two unread ranges fewer than this are read with them (one query, not two). */
const MERGE_BELOW = 1000;

export type VersionRange = readonly [from: number, to: number];

export class LocalVersions {
  /** Ranges in the order they were announced (nearly ascending); forgotten once the poll is past them. */
  #ranges: VersionRange[] = [];

  track(bus: EventBus, owner: object): void {
    for (const name of VERSIONED) bus.on(owner, name, (e) => this.add(e.version));
    // One bulk import or attendee sync: one block of versions taken in one transaction.
    bus.on(owner, 'attendee.imported', (e) => this.add(e.fromVersion, e.toVersion));
  }

  add(from: number, to = from): void {
    const last = this.#ranges[this.#ranges.length - 1];
    if (last && from === last[1] + 1) this.#ranges[this.#ranges.length - 1] = [last[0], to];
    else this.#ranges.push([from, to]);
  }

  /**
   * The versions in (after, upTo] this process did not announce, as ascending ranges. Ranges
   * separated by a few local versions are joined: reading a local row again costs less than
   * another query, while a big local import between two is still skipped.
   */
  unannounced(after: number, upTo: number): VersionRange[] {
    const mine = this.#ranges.filter(([from, to]) => to > after && from <= upTo).sort((a, b) => a[0] - b[0]);
    const gaps: [number, number][] = [];
    let next = after + 1;
    for (const [from, to] of mine) {
      if (from > next) gaps.push([next, from - 1]);
      next = Math.max(next, to + 1);
    }
    if (next <= upTo) gaps.push([next, upTo]);
    const joined: [number, number][] = [];
    for (const gap of gaps) {
      const last = joined[joined.length - 1];
      if (last && gap[0] - last[1] - 1 < MERGE_BELOW) last[1] = gap[1];
      else joined.push(gap);
    }
    return joined;
  }

  /** Forgets the versions up to `upTo` (the poll has dealt with them). */
  forget(upTo: number): void {
    this.#ranges = this.#ranges.filter(([, to]) => to > upTo);
  }

  get size(): number {
    return this.#ranges.length;
  }
}
