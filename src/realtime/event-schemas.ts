import { z } from 'zod';
import { accessDeniedSchema, accessGrantedSchema } from '../resources/access-events.js';
import { bridgeDeviceEventSchema } from '../resources/bridge-device.js';
import { gatewaySchema, readerStatusSchema } from '../resources/devices.js';
import { conflictSchema } from '../resources/sync-conflict.js';
import { zoneSchema } from '../resources/venue.js';
import { accessPointViewSchema } from '../devices/reader-view.js';
import type { ProjectTopic } from './channel-access.js';

// The payload of every event the broadcaster publishes (docs/realtime.md: Channels and events),
// one zod schema each (one schema per contract). Broadcaster.publish takes a payload of
// the event's inferred type on the event's topic, so what is sent cannot drift from what
// /api/v1/asyncapi.json (http/asyncapi.ts) says. Resources go out as REST shows them, so their
// schemas are the REST ones (src/resources/, where the bus's event types take them too).

const zoneOccupancySchema = z.object({
  access_zone_id: z.number().int(),
  current_count: z.number().int(),
  capacity: z.number().int().nullable(),
  available: z.number().int().nullable(),
  timestamp: z.string(),
});

const readerStatusChangedSchema = z.object({
  reader_id: z.number().int(),
  ...readerStatusSchema.shape,
  timestamp: z.string(),
});
const readerLoginRequestedSchema = z.object({
  reader_id: z.number().int(),
  reader_identifier: z.string(),
  expires_at: z.string(),
});
const readerTokenReplacedSchema = z.object({
  reader_id: z.number().int(),
  reader_identifier: z.string(),
  replaced_token_created_at: z.string(),
  requested_ip: z.string().nullable(),
  timestamp: z.string(),
});
const syncLinkDownSchema = z.object({ edge_id: z.number().int().nullable(), reason: z.string(), since: z.string() });
const syncLinkUpSchema = z.object({
  edge_id: z.number().int().nullable(),
  down_since: z.string().nullable(),
  at: z.string(),
});

interface BroadcastEventSpec {
  topic: ProjectTopic;
  payload: z.ZodType;
  summary: string;
}

/** Every event the broadcaster publishes: its channel topic, payload and when it is sent. */
export const BROADCAST_EVENTS = {
  AccessGranted: {
    topic: 'dashboard:access',
    payload: accessGrantedSchema,
    summary: 'A scan was granted (after its access event is stored).',
  },
  AccessDenied: {
    topic: 'dashboard:access',
    payload: accessDeniedSchema,
    summary: 'A scan was denied (after its access event is stored).',
  },
  AccessPointUpdated: {
    topic: 'dashboard:access-points',
    payload: accessPointViewSchema,
    summary:
      "An access point was created or changed: the resource as REST shows it, each reader with its gateway_id and its status as of the change (ReaderStatusChanged tells the status's later changes).",
  },
  AccessPointDeleted: {
    topic: 'dashboard:access-points',
    payload: z.object({ id: z.number().int() }),
    summary: 'An access point was deleted.',
  },
  AccessZoneUpdated: {
    topic: 'console:occupancy',
    payload: zoneSchema,
    summary:
      'An access zone was created or changed (name, capacity): the resource as REST shows it. Its count moves by ZoneOccupancyChanged.',
  },
  AccessZoneDeleted: {
    topic: 'console:occupancy',
    payload: z.object({ id: z.number().int() }),
    summary: 'An access zone was deleted.',
  },
  ZoneOccupancyChanged: {
    topic: 'console:occupancy',
    payload: zoneOccupancySchema,
    summary:
      "A grant changed a zone's count (both zones of a move): at once, then at most once per 100 ms per zone while it keeps moving, with the count then.",
  },
  GatewayOnline: {
    topic: 'console:devices',
    payload: gatewaySchema,
    summary: "A gateway's status changed to online: the gateway resource.",
  },
  GatewayOffline: {
    topic: 'console:devices',
    payload: gatewaySchema,
    summary: "A gateway's status changed to offline (its report, last will or the gateway-status webhook).",
  },
  ReaderStatusChanged: {
    topic: 'console:devices',
    payload: readerStatusChangedSchema,
    summary: 'A reader connected, disconnected or was reported by its gateway.',
  },
  ReaderLoginRequested: {
    topic: 'console:devices',
    payload: readerLoginRequestedSchema,
    summary: 'A reader asked for a login. Never the OTP: staff with access:write read it from GET .../readers/logins.',
  },
  ReaderTokenReplaced: {
    topic: 'console:devices',
    payload: readerTokenReplacedSchema,
    summary: 'A reader was provisioned while it had a live token, which stopped working: a possible takeover.',
  },
  BridgeDeviceConnected: {
    topic: 'console:devices',
    payload: bridgeDeviceEventSchema,
    summary: 'A device plugged into the box was opened.',
  },
  BridgeDeviceDisconnected: {
    topic: 'console:devices',
    payload: bridgeDeviceEventSchema,
    summary: 'A device plugged into the box went away (unplugged, a read error).',
  },
  SyncLinkDown: {
    topic: 'console:devices',
    payload: syncLinkDownSchema,
    summary: "The edge's link to its cloud went down (on the edge).",
  },
  SyncLinkUp: {
    topic: 'console:devices',
    payload: syncLinkUpSchema,
    summary: "The edge's link to its cloud is up again (on the edge).",
  },
  SyncConflict: {
    topic: 'console:devices',
    payload: conflictSchema,
    summary: 'Sync flagged an uploaded access event or recorded a field conflict (on the cloud).',
  },
} as const satisfies Record<string, BroadcastEventSpec>;

export type BroadcastEvent = keyof typeof BROADCAST_EVENTS;
export type BroadcastTopic<N extends BroadcastEvent> = (typeof BROADCAST_EVENTS)[N]['topic'];
export type BroadcastPayload<N extends BroadcastEvent> = z.output<(typeof BROADCAST_EVENTS)[N]['payload']>;

/** Pusher protocol: what the presence channel's members see of each other (channel_data). */
const userId = z.union([z.number(), z.string()]);
export const PRESENCE_EVENTS = {
  'pusher_internal:member_added': {
    payload: z.object({ user_id: userId, user_info: z.unknown().optional() }),
    summary: "A user's first connection joined (the appliance's channel_data: {user_id, user_info: {name}}).",
  },
  'pusher_internal:member_removed': {
    payload: z.object({ user_id: userId }),
    summary: "A user's last connection left.",
  },
} as const;

/** An event's data on a `private-encrypted-` channel: base64 of a 24-byte nonce and of NaCl secretbox
 * over the event's JSON under the channel's key (encryption.ts seals it; pusher-js opens it). */
export const sealedEventSchema = z.object({ nonce: z.string(), ciphertext: z.string() });
