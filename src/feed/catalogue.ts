import type { DomainEvents, EventName } from '../events/types.js';

// The outgoing event catalogue (spec: Events, Outgoing webhooks; docs/webhooks-outgoing.md):
// the names subscribers choose from, and which domain event becomes which of them. Access
// events come from access_events (feed.ts); the rest are domain events kept in the outbox.

export const ACCESS_EVENTS = ['access.granted', 'access.denied'] as const;
export const OUTBOX_EVENTS = [
  'attendee.created',
  'attendee.updated',
  'attendee.deleted',
  'attendee.imported',
  'credential.created',
  'credential.revoked',
  'access_point.updated',
  'access_point.deleted',
  'zone.capacity_reached',
  'gateway.online',
  'gateway.offline',
  'reader.offline',
  'webhook.endpoint_disabled',
  'sync.link_down',
  'sync.link_up',
  'sync.conflict',
] as const;
/** Sent only by `POST .../webhook-subscriptions/{id}/test`, to that subscription. */
export const TEST_EVENT = 'webhook.test';

export const CATALOGUE = [...ACCESS_EVENTS, ...OUTBOX_EVENTS] as const;
export type CatalogueEvent = (typeof CATALOGUE)[number];
export type OutboxEvent = (typeof OUTBOX_EVENTS)[number];

/** A domain event as the outbox keeps it: the catalogue name, its project and its `data`. */
export interface OutboxEntry {
  event: OutboxEvent;
  projectId: number;
  data: Record<string, unknown>;
}

type Mapper<E extends EventName> = (payload: DomainEvents[E]) => OutboxEntry | null;

// A created access point is announced as access_point.updated, as the real-time channel does
// (AccessPointUpdated): subscribers keep one picture of each access point.
const MAPPERS: { [E in EventName]?: Mapper<E> } = {
  // spec: Outgoing webhooks, attendee.created data: attendee_id, first_name, last_name (and the rest of the attendee).
  'attendee.created': (e) => ({
    event: 'attendee.created',
    projectId: e.projectId,
    data: { attendee_id: e.resource.id, ...e.resource },
  }),
  // previous_attributes (as Stripe names it): the changed fields' values before the change.
  'attendee.updated': (e) => ({
    event: 'attendee.updated',
    projectId: e.projectId,
    data: { attendee_id: e.resource.id, ...e.resource, previous_attributes: e.previous ?? {} },
  }),
  'attendee.deleted': (e) => ({
    event: 'attendee.deleted',
    projectId: e.projectId,
    data: { attendee_id: e.id, id: e.id, ...(e.previous ? { previous_attributes: e.previous } : {}) },
  }),
  'attendee.imported': (e) => ({
    event: 'attendee.imported',
    projectId: e.projectId,
    data: {
      count: e.count,
      credentials: e.credentials,
      from_version: e.fromVersion,
      to_version: e.toVersion,
      changed: `attendees?changed_since=${e.fromVersion - 1}`,
    },
  }),
  'credential.created': (e) => ({ event: 'credential.created', projectId: e.projectId, data: { ...e.resource } }),
  'credential.revoked': (e) => ({ event: 'credential.revoked', projectId: e.projectId, data: { ...e.resource } }),
  'access_point.created': (e) => ({ event: 'access_point.updated', projectId: e.projectId, data: { ...e.resource } }),
  'access_point.updated': (e) => ({ event: 'access_point.updated', projectId: e.projectId, data: { ...e.resource } }),
  'access_point.deleted': (e) => ({ event: 'access_point.deleted', projectId: e.projectId, data: { id: e.id } }),
  'gateway.online': (e) => ({
    event: 'gateway.online',
    projectId: e.projectId,
    data: { ...e.gateway, timestamp: e.timestamp },
  }),
  'gateway.offline': (e) => ({
    event: 'gateway.offline',
    projectId: e.projectId,
    data: { ...e.gateway, timestamp: e.timestamp },
  }),
  'sync.link_down': (e) => ({
    event: 'sync.link_down',
    projectId: e.projectId,
    data: { edge_id: e.edgeId, reason: e.reason, since: e.since },
  }),
  'sync.link_up': (e) => ({
    event: 'sync.link_up',
    projectId: e.projectId,
    data: { edge_id: e.edgeId, down_since: e.downSince, at: e.at },
  }),
  'sync.conflict': (e) => ({ event: 'sync.conflict', projectId: e.projectId, data: { ...e.conflict } }),
  'webhook.endpoint_disabled': (e) => ({
    event: 'webhook.endpoint_disabled',
    projectId: e.projectId,
    data: { subscription_id: e.subscriptionId, url: e.url, reason: e.reason },
  }),
};

/** The outbox entry a domain event makes, or null when it is not in the catalogue. */
export function outboxEntryOf<E extends EventName>(event: E, payload: DomainEvents[E]): OutboxEntry | null {
  const mapper = MAPPERS[event] as Mapper<E> | undefined;
  return mapper ? mapper(payload) : null;
}
