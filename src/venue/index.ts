import type { Clock } from '../clock.js';
import type { EventBus } from '../events/bus.js';
import type { Database } from '../store/database.js';
import { AccessPoints } from './access-points.js';
import { AccessZones } from './access-zones.js';
import { Readers } from './readers.js';
import { AttendeeTypes } from './attendee-types.js';
import { Attendees } from './attendees.js';
import { Credentials } from './credentials.js';
import { CredentialKeys } from './credential-keys.js';
import { AttendeeImporter } from './attendee-import.js';
import { TimeRestrictions } from './time-restrictions.js';
import { Blocklist } from './blocklist.js';
import { Forms } from './forms.js';

/** The venue model's services, built together because they refer to each other. */
export interface Venue {
  zones: AccessZones;
  accessPoints: AccessPoints;
  readers: Readers;
  attendeeTypes: AttendeeTypes;
  attendees: Attendees;
  credentials: Credentials;
  credentialKeys: CredentialKeys;
  importer: AttendeeImporter;
  timeRestrictions: TimeRestrictions;
  blocklist: Blocklist;
  forms: Forms;
}

/** `canSign`: false on an edge, which holds public keys only (docs/credentials.md: the trust model). */
export function createVenue(db: Database, clock: Clock, bus: EventBus, canSign = true): Venue {
  const readers = new Readers(db, clock, bus);
  const attendeeTypes = new AttendeeTypes(db, clock, bus);
  const credentialKeys = new CredentialKeys(db, clock, bus, canSign);
  const credentials = new Credentials(db, clock, bus, credentialKeys);
  return {
    zones: new AccessZones(db, clock, bus, attendeeTypes),
    readers,
    accessPoints: new AccessPoints(db, clock, bus, readers),
    attendeeTypes,
    credentials,
    credentialKeys,
    attendees: new Attendees(db, clock, bus, attendeeTypes, credentials),
    importer: new AttendeeImporter(db, clock, bus),
    timeRestrictions: new TimeRestrictions(db, clock, bus),
    blocklist: new Blocklist(db, clock, bus),
    forms: new Forms(db, clock, bus),
  };
}
