import type { SyncConflictResource } from '../../sync/conflicts.js';
import type { GatewayResource } from '../devices/gateways.js';
import type { ReaderStatus } from '../devices/reader-state.js';
import type { AccessDeniedPayload, AccessGrantedPayload, BridgeDeviceEvent } from '../realtime/event-schemas.js';
import type { Logger } from '../logger.js';
import type { AccessPointResource } from '../venue/access-points.js';
import type { ZoneResource } from '../venue/access-zones.js';
import type { AttendeeTypeResource } from '../venue/attendee-types.js';
import type { AttendeeResource } from '../venue/attendees.js';
import type { BlocklistResource } from '../venue/blocklist.js';
import type { CredentialResource } from '../venue/credentials.js';
import type { FormResource, SubmissionResource } from '../venue/forms.js';
import type { ReaderResource } from '../venue/readers.js';
import type { TimeRestrictionResource } from '../venue/time-restrictions.js';

// The typed domain event bus (after Zigbee2MQTT's eventBus). Events are emitted only after
// the transaction that made them has committed (see unit-of-work.ts). Each handler is wrapped
// so one failing listener cannot break the others; an owner's handlers go on its stop().

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

/** A device plugged into the box, as the console's devices channel
 * shows it (docs/bridge.md; its schema: realtime/event-schemas.ts). */
export type { BridgeDeviceEvent };

export interface GatewayEvent {
  projectId: number;
  gateway: GatewayResource;
  timestamp: string;
}

export type AccessChangeReason =
  | 'user_deactivated'
  | 'user_demoted'
  | 'user_deleted'
  | 'membership_removed'
  | 'token_revoked'
  | 'session_ended'
  | 'token_expiry_changed';

/** Fields of an access event uploaded from an edge, as the cloud announces it (docs/sync.md). */
export interface Uploaded {
  uuid: string;
  edge_id: number;
  uploaded_at: string;
  duplicate_of: string | null;
  review: string | null;
  deleted_reference: string | null;
}

/** Every domain event and its payload. Subscribers: the venue index, the WebSocket broadcaster, MQTT's and
 * WebSocket's access re-checks, the bridge, sync; the outbox is written by commit() (unit-of-work.ts). */
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
  /** `previous`: the attendee as this box held it (absent when another process
   * deleted it): sync's base for a deletion (docs/sync.md: conflicts). */
  'attendee.deleted': DeletionEvent & { previous?: AttendeeResource };
  'credential.created': ChangeEvent<CredentialResource>;
  'credential.revoked': ChangeEvent<CredentialResource>;
  'credential.deleted': DeletionEvent;
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
   * realtime/event-schemas.ts (with the Uploaded fields when the event came from an edge). */
  AccessGranted: { projectId: number; payload: AccessGrantedPayload };
  AccessDenied: { projectId: number; payload: AccessDeniedPayload };
  /** The cloud's link to an edge (on the edge): down after failed requests, up again (docs/sync.md). */
  'sync.link_down': { projectId: number; edgeId: number | null; reason: string; since: string };
  'sync.link_up': { projectId: number; edgeId: number | null; downSince: string | null; at: string };
  /** The cloud flagged an uploaded access event or recorded a field conflict (docs/sync.md: conflicts). */
  'sync.conflict': { projectId: number; conflict: SyncConflictResource };
  /** The cloud refuses an edge from now on: revoked, or suspended because
   * its issuer lost access (docs/sync.md). Its open long polls end. */
  'sync.edge_refused': { projectId: number; edgeId: number; refusal: 'revoked' | 'suspended' };
  /** A counted grant changed these zones' occupancy (after commit). */
  'zone.occupancy_changed': { projectId: number; zoneIds: number[]; timestamp: string };
  /** A project was created or changed (its time zone drives time windows). */
  'project.saved': { projectId: number; timezone: string };
  /** A device plugged into the box was created or changed, or deleted (firmware-bridge/ reopens or closes it). */
  'bridge.device_saved': { projectId: number; id: number };
  'bridge.device_deleted': { projectId: number; id: number };
  /** A device plugged into the box was opened, or went away (unplugged, a read error) (console devices channel). */
  'bridge.device_connected': { projectId: number; device: BridgeDeviceEvent };
  'bridge.device_disconnected': { projectId: number; device: BridgeDeviceEvent };
  /** A gateway's report changed its status to online / offline (MQTT
   * status topic, last will or the mqtt-gateway-status webhook). */
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
  'access.changed': { userId: number | null; reason: AccessChangeReason };
  /** An outgoing webhook subscription was disabled: its receiver answered 410 Gone, it failed for
   * outgoingWebhooks.disableAfterHours, or its owner lost access to its project. */
  'webhook.endpoint_disabled': {
    projectId: number;
    subscriptionId: number;
    url: string;
    reason: 'gone' | 'failing' | 'owner_lost_access';
  };
  /** A state observed (not committed) was written to the outbox: its consumers may read it. */
  'feed.appended': { event: string };
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
type Handler<E extends EventName> = (payload: DomainEvents[E]) => void;

export class EventBus {
  readonly #handlers = new Map<EventName, { owner: object; handler: Handler<EventName> }[]>();

  constructor(private readonly log: Logger) {}

  on<E extends EventName>(owner: object, event: E, handler: Handler<E>): void {
    const list = this.#handlers.get(event) ?? [];
    list.push({ owner, handler: handler as Handler<EventName> });
    this.#handlers.set(event, list);
  }

  /** How many handlers are registered (0 once every module stopped). */
  get listenerCount(): number {
    let n = 0;
    for (const list of this.#handlers.values()) n += list.length;
    return n;
  }

  removeListeners(owner: object): void {
    for (const [event, list] of this.#handlers)
      this.#handlers.set(
        event,
        list.filter((h) => h.owner !== owner),
      );
  }

  emit<E extends EventName>(event: E, payload: DomainEvents[E]): void {
    for (const { handler } of this.#handlers.get(event) ?? []) {
      try {
        handler(payload);
      } catch (err) {
        this.log.error({ err, event }, 'event handler failed');
      }
    }
  }
}
