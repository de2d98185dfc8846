import type { AttendeeEntry, CredentialEntry, VenueIndex, ZoneEntry } from './venue-index.js';
import type { Occupancy } from './occupancy.js';
import { localWeekdayAndMinute } from './local-time.js';

// The decision (spec: What the service does, items 3-4; Events, denial reasons). Checks run
// in the spec's order and the first that fails names the reason:
//   1. the credential exists, is assigned and active     invalid_credential / expired
//   2. the attendee type may enter the zone               not_authorized (also anti-passback)
//   3. the zone has room                                  capacity_exceeded
//   4. a time window allows it                            time_restricted
//   5. no blocklist entry applies                         blocklisted
// Everything is read from memory (VenueIndex); docs/engine.md has the rules in full.

export const DENIAL_REASONS = ['invalid_credential', 'not_authorized', 'expired', 'capacity_exceeded', 'time_restricted', 'blocklisted'] as const;
export type DenialReason = (typeof DENIAL_REASONS)[number];

export interface ScanInput {
  projectId: number;
  accessPointId: number;
  credentialValue: string;
  /** When the scan happened (ms since the epoch). */
  at: number;
}

export type Decision =
  | {
      granted: true;
      zoneId: number;
      credential: CredentialEntry;
      attendee: AttendeeEntry;
      movement: 'in' | 'out';
      /** The grant changed the zone's occupancy (false: re-entry without anti-passback, or leaving uncounted). */
      counted: boolean;
      /** The zone an entry moved its holder out of. */
      fromZoneId: number | null;
    }
  | { granted: false; zoneId: number; reason: DenialReason; credential: CredentialEntry | null; attendee: AttendeeEntry | null };

/** A scan the engine cannot judge at all: not a seventh denial reason, an error. */
export class ScanError extends Error {
  constructor(readonly code: 'unknown_access_point' | 'access_point_inactive' | 'access_point_without_zone') {
    super(code);
  }
}

export interface EngineOptions {
  /** Deny re-entry to a zone the credential's holder is already in (docs/engine.md). */
  antiPassback: boolean;
}

export class AccessEngine {
  constructor(
    private readonly index: VenueIndex,
    readonly occupancy: Occupancy,
    private readonly options: EngineOptions,
  ) {}

  /** Decides and, on a grant, moves the holder (occupancy changes here and nowhere else). */
  decide(scan: ScanInput): Decision {
    const point = this.index.accessPoints.get(scan.accessPointId);
    if (!point || point.projectId !== scan.projectId) throw new ScanError('unknown_access_point');
    if (!point.isActive) throw new ScanError('access_point_inactive');
    const zone = point.zoneId === null ? undefined : this.index.zones.get(point.zoneId);
    if (!zone) throw new ScanError('access_point_without_zone');

    const credential = this.index.credential(scan.projectId, scan.credentialValue) ?? null;
    const attendee = credential ? (this.index.attendees.get(credential.attendeeId) ?? null) : null;

    // 1. valid and assigned
    if (!credential || !attendee || attendee.status !== 'active') return denied(zone.id, 'invalid_credential', credential, attendee);
    if (credential.validUntil !== null && scan.at > credential.validUntil) return denied(zone.id, 'expired', credential, attendee);
    if (credential.status === 'revoked') return denied(zone.id, 'invalid_credential', credential, attendee);
    if (credential.validFrom !== null && scan.at < credential.validFrom) return denied(zone.id, 'expired', credential, attendee);

    const inside = this.occupancy.zoneOf(attendee.id) === zone.id;
    const movement: 'in' | 'out' = point.direction === 'out' || (point.direction === 'both' && inside) ? 'out' : 'in';
    if (movement === 'in') {
      // 2. permission, and anti-passback
      if (!this.mayEnter(attendee, zone)) return denied(zone.id, 'not_authorized', credential, attendee);
      if (this.options.antiPassback && inside) return denied(zone.id, 'not_authorized', credential, attendee);
      // 3. capacity
      if (zone.capacity !== null && this.occupancy.count(zone.id) >= zone.capacity) return denied(zone.id, 'capacity_exceeded', credential, attendee);
      // 4. time windows
      if (!this.withinWindows(attendee, zone, scan)) return denied(zone.id, 'time_restricted', credential, attendee);
    }
    // 5. blocklist (leaving is never refused for it: a blocked person should get out)
    if (movement === 'in' && this.blocked(attendee.id, credential.id, scan.at)) return denied(zone.id, 'blocklisted', credential, attendee);

    if (movement === 'in') {
      const counted = !inside;
      const fromZoneId = this.occupancy.enter(attendee.id, zone.id);
      return { granted: true, zoneId: zone.id, credential, attendee, movement, counted, fromZoneId };
    }
    const counted = this.occupancy.leave(attendee.id, zone.id);
    return { granted: true, zoneId: zone.id, credential, attendee, movement, counted, fromZoneId: null };
  }

  /** Takes back the occupancy change of a grant whose access event could not be stored. */
  undo(decision: Decision): void {
    if (!decision.granted || !decision.counted) return;
    if (decision.movement === 'out') {
      this.occupancy.enter(decision.attendee.id, decision.zoneId);
      return;
    }
    this.occupancy.leave(decision.attendee.id, decision.zoneId);
    if (decision.fromZoneId !== null) this.occupancy.enter(decision.attendee.id, decision.fromZoneId);
  }

  private mayEnter(attendee: AttendeeEntry, zone: ZoneEntry): boolean {
    if (!zone.requiresTicket) return true;
    return attendee.typeId !== null && (this.index.typeZones.get(attendee.typeId)?.has(zone.id) ?? false);
  }

  /** A plain loop, no filtered copies: this runs for every entry scan at a door with windows. */
  private withinWindows(attendee: AttendeeEntry, zone: ZoneEntry, scan: ScanInput): boolean {
    const windows = this.index.windows.get(zone.id);
    if (windows === undefined) return true;
    let applies = false;
    let local: { weekday: number; minute: number } | null = null;
    for (const w of windows) {
      if (w.typeId !== null && w.typeId !== attendee.typeId) continue;
      applies = true;
      local ??= localWeekdayAndMinute(scan.at, this.index.timezones.get(scan.projectId) ?? 'UTC');
      const { weekday, minute } = local;
      const yesterday = weekday === 1 ? 7 : weekday - 1;
      const open =
        w.start < w.end
          ? w.days.has(weekday) && minute >= w.start && minute < w.end
          : // past midnight: the evening part on the listed day, the early part on the day after
            (w.days.has(weekday) && minute >= w.start) || (w.days.has(yesterday) && minute < w.end);
      if (open) return true;
    }
    return !applies;
  }

  private blocked(attendeeId: number, credentialId: number, at: number): boolean {
    return this.index.isBlocked(attendeeId, credentialId, at);
  }
}

function denied(zoneId: number, reason: DenialReason, credential: CredentialEntry | null, attendee: AttendeeEntry | null): Decision {
  return { granted: false, zoneId, reason, credential, attendee };
}
