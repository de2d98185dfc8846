import type { AccessDeniedPayload, AccessGrantedPayload } from '../resources/access-events.js';
import type { BridgeDeviceEvent } from '../resources/bridge-device.js';
import type { GatewayResource, ReaderStatus } from '../resources/devices.js';
import type { FormResource, SubmissionResource } from '../resources/forms.js';
import type { SyncConflictResource } from '../resources/sync-conflict.js';
import type {
  AccessPointResource,
  AttendeeResource,
  AttendeeTypeResource,
  BlocklistResource,
  CredentialKeyResource,
  CredentialResource,
  ReaderResource,
  TimeRestrictionResource,
  ZoneResource,
} from '../resources/venue.js';

// Every event on the in-process bus (events/bus.ts) and its payload, declared once here, in a
// file that imports only the resources' schemas (src/resources/, leaves): the modules that emit
// or listen import this file, never the other way round (.dependency-cruiser.cjs).
//
// Names: `<subject>.<what happened>`, lower snake_case on both sides of the dot. The subject is
// the resource or part the event is about (access_zone, attendee, reader, bridge_device, sync,
// feed, ...); what happened is a past participle (created, updated, deleted, revoked, saved,
// changed, requested) or the state reached (online, offline, link_down). One word, one meaning:
// `access` is a scan's decision (access.granted, access.denied: the Pusher events AccessGranted
// and AccessDenied, the webhooks' access.granted / access.denied), what a user may reach is
// `permissions` (permissions.changed). These names are internal: the public ones (Pusher events:
// realtime/event-schemas.ts; webhook events: feed/catalogue.ts) are mapped from them, so renaming
// a bus event changes no contract.

export interface ChangeEvent<R> {
  projectId: number;
  resource: R;
  version: number;
}

export interface DeletionEvent {
  projectId: number;
  id: number;
  version: number;
}

export interface GatewayEvent {
  projectId: number;
  gateway: GatewayResource;
  timestamp: string;
}

/** Why a user's permissions changed ('permissions.changed'). */
export type PermissionsChangeReason =
  | 'user_deactivated'
  | 'user_demoted'
  | 'user_deleted'
  | 'membership_removed'
  | 'token_revoked'
  | 'session_ended'
  | 'token_expiry_changed';

/** Every domain event and its payload. Later modules (WebSocket, webhooks, sync) subscribe. */
export interface DomainEvents {
  'access_zone.created': ChangeEvent<ZoneResource>;
  'access_zone.updated': ChangeEvent<ZoneResource>;
  'access_zone.deleted': DeletionEvent;
  'access_point.created': ChangeEvent<AccessPointResource>;
  'access_point.updated': ChangeEvent<AccessPointResource>;
  'access_point.deleted': DeletionEvent;
  'reader.created': ChangeEvent<ReaderResource>;
  'reader.updated': ChangeEvent<ReaderResource>;
  'reader.deleted': DeletionEvent;
  'attendee_type.created': ChangeEvent<AttendeeTypeResource>;
  'attendee_type.updated': ChangeEvent<AttendeeTypeResource>;
  'attendee_type.deleted': DeletionEvent;
  'attendee.created': ChangeEvent<AttendeeResource>;
  /** previous: the changed fields' values before the change (Stripe's previous_attributes; sync merges by them). */
  'attendee.updated': ChangeEvent<AttendeeResource> & { previous?: Partial<AttendeeResource> };
  /**
   * `previous`: the attendee as this box held it (absent when another process deleted it): sync's base for a deletion
   * (docs/sync.md: conflicts).
   */
  'attendee.deleted': DeletionEvent & { previous?: AttendeeResource };
  'credential.created': ChangeEvent<CredentialResource>;
  'credential.revoked': ChangeEvent<CredentialResource>;
  'credential.deleted': DeletionEvent;
  /** A project's signing key was made, or changed status (docs/credentials.md); public part only. */
  'credential_key.created': ChangeEvent<CredentialKeyResource>;
  'credential_key.updated': ChangeEvent<CredentialKeyResource>;
  'time_restriction.created': ChangeEvent<TimeRestrictionResource>;
  'time_restriction.updated': ChangeEvent<TimeRestrictionResource>;
  'time_restriction.deleted': DeletionEvent;
  'blocklist_entry.created': ChangeEvent<BlocklistResource>;
  'blocklist_entry.updated': ChangeEvent<BlocklistResource>;
  'blocklist_entry.deleted': DeletionEvent;
  'form.created': ChangeEvent<FormResource>;
  'form.updated': ChangeEvent<FormResource>;
  'form.deleted': DeletionEvent;
  'form_submission.created': ChangeEvent<SubmissionResource>;
  /** spec: Events, Real-time events. Announced once the access event is durable (journaled). Payloads:
   * resources/access-events.ts (with the Uploaded fields when the event came from an edge). */
  'access.granted': { projectId: number; payload: AccessGrantedPayload };
  'access.denied': { projectId: number; payload: AccessDeniedPayload };
  /** The cloud's link to an edge (on the edge): down after failed requests, up again (docs/sync.md). */
  'sync.link_down': { projectId: number; edgeId: number | null; reason: string; since: string };
  'sync.link_up': { projectId: number; edgeId: number | null; downSince: string | null; at: string };
  /** The cloud flagged an uploaded access event or recorded a field conflict (docs/sync.md: conflicts). */
  'sync.conflict': { projectId: number; conflict: SyncConflictResource };
  /**
   * The cloud refuses an edge from now on: revoked, or suspended because its issuer lost access (docs/sync.md). Its
   * open long polls end.
   */
  'sync.edge_refused': { projectId: number; edgeId: number; refusal: 'revoked' | 'suspended' };
  /** A counted grant changed these zones' occupancy (after commit). */
  'zone.occupancy_changed': { projectId: number; zoneIds: number[]; timestamp: string };
  /** A project was created or changed (its time zone drives time windows). */
  'project.saved': { projectId: number; timezone: string };
  /** A device plugged into the box was created or changed, or deleted (firmware-bridge/ reopens or closes it). */
  'bridge_device.saved': { projectId: number; id: number };
  'bridge_device.deleted': { projectId: number; id: number };
  /** A device plugged into the box was opened, or went away (unplugged, a read error) (console devices channel). */
  'bridge_device.connected': { projectId: number; device: BridgeDeviceEvent };
  'bridge_device.disconnected': { projectId: number; device: BridgeDeviceEvent };
  /**
   * A gateway's report changed its status to online / offline (MQTT status topic, last will or the mqtt-gateway-status
   * webhook).
   */
  'gateway.online': GatewayEvent;
  'gateway.offline': GatewayEvent;
  /** Every gateway report, changed or not (console channel). */
  'gateway.reported': GatewayEvent;
  'gateway.deleted': { projectId: number; id: number };
  /** A reader's connection state changed (MQTT connect/disconnect, a gateway's report). */
  'reader.status_changed': { projectId: number; readerId: number; status: ReaderStatus; timestamp: string };
  /** A reader asked for a login (console devices channel). The OTP is not in the event: it is shown
   * only over REST with access:write, so no listener can pass it on (docs/security.md, attack 2). */
  'reader.login_requested': { projectId: number; readerId: number; identifier: string; expiresAt: string };
  /** A reader was provisioned (OTP verify) while it had a live token, which the new one replaced:
   * a takeover for staff to notice (docs/security.md, attack 2). */
  'reader.token_replaced': {
    projectId: number;
    readerId: number;
    identifier: string;
    replacedTokenCreatedAt: string;
    ip: string | null;
    timestamp: string;
  };
  /** A reader's or gateway's MQTT credentials were revoked or replaced: whoever used them is disconnected. */
  'device.credentials_revoked': { kind: 'reader' | 'gateway'; deviceId: number };
  /** What a user may reach or act with has changed, or a credential of theirs ended
   * (docs/security.md, attack 1): connections that rely on it (WebSocket subscriptions, MQTT sessions) are checked
   * again at once. userId null: anyone's (the token expiry setting changed). */
  'permissions.changed': { userId: number | null; reason: PermissionsChangeReason };
  /**
   * An outgoing webhook subscription was disabled: its receiver answered 410 Gone, it failed for
   * outgoingWebhooks.disableAfterHours, or its owner lost access to its project.
   */
  'webhook.endpoint_disabled': {
    projectId: number;
    subscriptionId: number;
    url: string;
    reason: 'gone' | 'failing' | 'owner_lost_access';
  };
  /** Something was appended to the durable feed (docs/architecture.md: the durable feed), once it
   * is committed: the one signal its consumers (the webhook dispatcher, edge sync) wake on. `by`:
   * commit() writing a change's outbox entries (events/unit-of-work.ts), the observed-state writer
   * (feed/observed.ts), the journal's ingest putting access events in access_events (wired in
   * services.ts), the cloud applying an edge's upload (sync/upload-apply.ts). */
  'feed.appended': { by: 'commit' | 'ingest' | 'upload' };
  /** A subscription was created, changed or deleted (for the console). */
  'webhook_subscription.changed': { projectId: number; id: number; deleted: boolean };
  /** A delivery was attempted (for the console). */
  'webhook_delivery.attempted': {
    projectId: number;
    id: number;
    subscriptionId: number;
    status: 'pending' | 'delivered' | 'failed';
  };
  /** One bulk import: attendees and credentials written with versions fromVersion..toVersion. */
  'attendee.imported': {
    projectId: number;
    count: number;
    credentials: number;
    fromVersion: number;
    toVersion: number;
  };
}

export type EventName = keyof DomainEvents;
