import type { AttendeeEntry, CredentialEntry, VenueIndex, ZoneEntry } from './venue-index.js';
import type { Occupancy } from './occupancy.js';
import { localWeekdayAndMinute } from './local-time.js';
import type { DENIAL_REASONS, REASON_DETAILS } from '../resources/access-events.js';
import { isSignedValue } from '../credentials/signed-value.js';
import { SignedValues } from './signed-values.js';

// The decision (spec: What the service does, items 3-4; Events, denial reasons). Every scan at
// an access point of the project is decided, and every decision is an access event (item 3:
// "Each result produces an event"). Checks run in the contract's order and the first that fails
// names the reason; reason_detail says which cause of not_authorized it was:
//   0. the access point is active and leads into a zone
//      not_authorized (access_point_inactive / access_point_without_zone)
//   1. the credential exists, is assigned and active      invalid_credential / expired
//   2. the attendee type may enter the zone               not_authorized (type_not_permitted)
//      the zone's anti-passback, when it has it           not_authorized (already_inside)
//   3. the zone has room                                  capacity_exceeded
//   4. a time window allows it                            time_restricted
//   5. no blocklist entry applies                         blocklisted
// Checks 2-5 apply to an entry only: leaving is never refused once the credential is valid.
// A signed value the index does not hold (credentials/signed-value.ts) is checked at 1 by
// signed-values.ts (its key, its signature: invalid_credential with a reason_detail) and then
// decided from its claims as a stored credential of that holder would be; a value the index
// holds, or a credential id it holds (a revocation learned), is decided from the stored row.
// Everything is read from memory (VenueIndex); docs/engine.md has the rules in full.

/** The reasons a scan is denied (their list: resources/access-events.ts). */
export type DenialReason = (typeof DENIAL_REASONS)[number];
/** Which of not_authorized's causes refused a scan (their list: resources/access-events.ts). */
export type ReasonDetail = (typeof REASON_DETAILS)[number];

export interface ScanInput {
  projectId: number;
  accessPointId: number;
  credentialValue: string;
  /** When the scan happened (ms since the epoch). */
  at: number;
  /** The reader scanned at, when known: the budget of signature checks is per reader (signed-values.ts). */
  readerId?: number | null;
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
      /** The zone an entry moved its holder out of (counted there until now); null for an exit, or when they
       * were in no zone or already in this one. undo() counts them back in there. */
      fromZoneId: number | null;
      /** Decided from a signed value's verified claims, the credential not held here (signed-values.ts). */
      offlineVerified: boolean;
    }
  | {
      granted: false;
      /** null: the access point leads into no zone it could admit to (inactive, or without one). */
      zoneId: number | null;
      reason: DenialReason;
      detail: ReasonDetail | null;
      credential: CredentialEntry | null;
      attendee: AttendeeEntry | null;
      offlineVerified: boolean;
    };

/** A scan naming no access point of its project: nothing to decide at, so not a decision but an error. */
export class ScanError extends Error {
  constructor(readonly code: 'unknown_access_point') {
    super(code);
  }
}

export class AccessEngine {
  constructor(
    private readonly index: VenueIndex,
    readonly occupancy: Occupancy,
    /** Signed values the index does not hold (config credentials.verificationsPerSecond: the per-reader budget). */
    readonly signed: SignedValues = new SignedValues(index.keys, { verificationsPerSecond: 20 }),
  ) {}

  /** Decides and, on a grant, moves the holder (occupancy.ts#move: the one movement rule). */
  decide(scan: ScanInput): Decision {
    const point = this.index.accessPoints.get(scan.accessPointId);
    if (!point || point.projectId !== scan.projectId) throw new ScanError('unknown_access_point');

    let credential = this.index.credential(scan.projectId, scan.credentialValue) ?? null;
    let attendee = credential ? (this.index.attendees.get(credential.attendeeId) ?? null) : null;

    // 0. a door that cannot admit anyone: decided and recorded like any denial, with no zone (docs/engine.md)
    if (!point.isActive) return denied(null, 'not_authorized', 'access_point_inactive', credential, attendee);
    const zone = point.zoneId === null ? undefined : this.index.zones.get(point.zoneId);
    if (!zone) return denied(null, 'not_authorized', 'access_point_without_zone', credential, attendee);

    // 1. a signed value not held: its key and signature, then its claims (signed-values.ts)
    let offline = false;
    if (!credential && isSignedValue(scan.credentialValue)) {
      const check = this.signed.check(scan.projectId, scan.credentialValue, scan.readerId ?? -point.id);
      if (!check.ok) return denied(zone.id, 'invalid_credential', check.detail, null, null);
      const { claims } = check;
      const held = this.index.credentialsById.get(claims.credentialId);
      if (held && held.projectId === scan.projectId)
        credential = held; // the stored row wins (a revocation learned)
      else {
        offline = true;
        credential = {
          id: claims.credentialId,
          projectId: scan.projectId,
          attendeeId: claims.attendeeId,
          value: scan.credentialValue,
          status: 'active',
          validFrom: claims.validFrom,
          validUntil: claims.validUntil,
          revokedAt: null,
        };
      }
      const holder = this.index.attendees.get(credential.attendeeId);
      attendee =
        holder && holder.projectId === scan.projectId
          ? holder
          : {
              id: claims.attendeeId,
              projectId: scan.projectId,
              typeId: claims.attendeeTypeId,
              firstName: '',
              lastName: '',
              status: 'active',
            };
    }

    // 1. valid and assigned
    if (!credential || !attendee || attendee.status !== 'active')
      return denied(zone.id, 'invalid_credential', null, credential, attendee, offline);
    if (credential.validUntil !== null && scan.at > credential.validUntil)
      return denied(zone.id, 'expired', null, credential, attendee, offline);
    if (credential.status === 'revoked')
      return denied(zone.id, 'invalid_credential', null, credential, attendee, offline);
    if (credential.validFrom !== null && scan.at < credential.validFrom)
      return denied(zone.id, 'expired', null, credential, attendee, offline);

    const inside = this.occupancy.zoneOf(attendee.id) === zone.id;
    const movement: 'in' | 'out' = point.direction === 'out' || (point.direction === 'both' && inside) ? 'out' : 'in';
    if (movement === 'in') {
      // 2. permission, and the zone's anti-passback (a re-entry
      //    is let in, uncounted, where the zone does not ask for it)
      if (!this.mayEnter(attendee, zone))
        return denied(zone.id, 'not_authorized', 'type_not_permitted', credential, attendee, offline);
      if (zone.antiPassback && inside)
        return denied(zone.id, 'not_authorized', 'already_inside', credential, attendee, offline);
      // 3. capacity
      if (zone.capacity !== null && this.occupancy.count(zone.id) >= zone.capacity)
        return denied(zone.id, 'capacity_exceeded', null, credential, attendee, offline);
      // 4. time windows
      if (!this.withinWindows(attendee, zone, scan))
        return denied(zone.id, 'time_restricted', null, credential, attendee, offline);
    }
    // 5. blocklist (leaving is never refused for it: a blocked person should get out)
    if (movement === 'in' && this.blocked(attendee.id, credential.id, scan.at))
      return denied(zone.id, 'blocklisted', null, credential, attendee, offline);

    const { counted, fromZoneId } = this.occupancy.move(attendee.id, zone.id, movement);
    return {
      granted: true,
      zoneId: zone.id,
      credential,
      attendee,
      movement,
      counted,
      fromZoneId,
      offlineVerified: offline,
    };
  }

  /** Takes back the occupancy change of a grant whose access event could not be stored. */
  undo(decision: Decision): void {
    if (decision.granted) this.occupancy.unmove(decision.attendee.id, decision.zoneId, decision.movement, decision);
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

function denied(
  zoneId: number | null,
  reason: DenialReason,
  detail: ReasonDetail | null,
  credential: CredentialEntry | null,
  attendee: AttendeeEntry | null,
  offlineVerified = false,
): Decision {
  return { granted: false, zoneId, reason, detail, credential, attendee, offlineVerified };
}
