import { A, type Case, type Send, type World } from './world.js';

// The venue the case tables act on, made over REST in the default project: a zone with an
// active and an inactive door, a reader at the door and one at none, an attendee type, an
// attendee with a credential, a blocked attendee, a time restriction, a form, a gateway, and a
// second project (for refusals that name another one).

export interface Venue {
  zone: number;
  door: number;
  closedDoor: number;
  reader: number;
  type: number;
  attendee: number;
  credential: number;
  restriction: number;
  blockEntry: number;
  form: number;
  gateway: number;
  adminId: number;
}

export async function makeVenue(w: World): Promise<Venue> {
  await w.api('POST', '/api/v1/projects', { name: 'Other', slug: 'other' });
  const zone = await w.create(`${A}/access-zones`, { name: 'Hall' });
  const door = await w.create(`${A}/access-points`, { name: 'Main door', access_zone_id: zone });
  const closedDoor = await w.create(`${A}/access-points`, {
    name: 'Closed door',
    access_zone_id: zone,
    is_active: false,
  });
  const reader = await w.create(`${A}/readers`, { identifier: 'R-1', access_point_id: door });
  await w.create(`${A}/readers`, { identifier: 'R-FREE' });
  const type = await w.create(`${A}/attendee-types`, { name: 'Guest', slug: 'guest', zone_ids: [zone] });
  const attendee = await w.create(`${A}/attendees`, {
    first_name: 'Ada',
    last_name: 'Lovelace',
    attendee_type: 'guest',
    external_id: 'EXT-1',
  });
  const credential = await w.create(`${A}/attendees/${attendee}/credentials`, { value: 'CRED-1' });
  const restriction = await w.create(`${A}/time-restrictions`, {
    access_zone_id: zone,
    days_of_week: [1, 2, 3, 4, 5, 6, 7],
    start_time: '00:00',
    end_time: '23:59',
  });
  const blocked = await w.create(`${A}/attendees`, { first_name: 'Bob' });
  const blockEntry = await w.create(`${A}/blocklist`, { attendee_id: blocked, reason: 'Ejected' });
  const form = await w.create(`${A}/forms`, {
    name: 'Survey',
    fields: [{ name: 'q', label: 'Question', type: 'text' }],
  });
  const gateway = await w.create(`${A}/gateways`, { identifier: 'GW-1', reader_ids: [reader] });
  const adminId = (await w.api('GET', '/api/v1/me')).body.data.id as number;
  return {
    zone,
    door,
    closedDoor,
    reader,
    type,
    attendee,
    credential,
    restriction,
    blockEntry,
    form,
    gateway,
    adminId,
  };
}

/** A case builder: `c(op, status, why, send)`, with what else the answer must show. */
export const c = (
  op: string,
  status: number,
  why: string,
  send: Send,
  more: Pick<Case, 'headers' | 'error'> = {},
): Case => ({ op, status, why, send, ...more });

let counter = 0;
/** A number no earlier call gave, for unique names, slugs and identifiers. */
export const unique = () => ++counter;
