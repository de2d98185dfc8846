import type { ProjectRepository } from '../accounts/projects.js';
import type { Occupancy } from '../access/occupancy.js';
import type { VenueIndex } from '../access/venue-index.js';
import type { EventBus } from '../events/bus.js';
import { projectChannels, type ProjectTopic } from './channel-access.js';
import { isEncryptedChannel, type ChannelCipher } from './encryption.js';
import type { BroadcastEvent, BroadcastPayload, BroadcastTopic } from './event-schemas.js';
import type { PusherServer } from './server.js';
import type { Module } from '../lifecycle.js';
import type { AccessPointView } from '../devices/reader-view.js';
import { KeyedThrottle } from './zone-throttle.js';
import type { AccessPointResource, ZoneResource } from '../resources/venue.js';

/** A zone's count goes out at once, then at most once per this interval while it keeps moving (docs/realtime.md). */
export const OCCUPANCY_INTERVAL_MS = 100;

// Domain events -> WebSocket channels (docs/realtime.md). The bus emits after
// commit, so nothing reaches a dashboard that is not stored. Each event goes to both names of
// its project's channel; an event for channels nobody is subscribed to costs a map lookup, so
// the scan path pays nothing for dashboards that are not open. On an encrypted name
// (`private-encrypted-…`) the event is sealed for that channel, as the official server
// libraries seal what they publish (docs/realtime.md, "Encrypted channels"). Each event's topic and payload are typed
// by event-schemas.ts, which /api/v1/asyncapi.json is generated from.

export interface BroadcasterOptions {
  /** `App\Events`: events are named `App\Events\AccessGranted` (Echo's `.listen('AccessGranted')`). */
  eventNamespace: string | null;
  /** Seals events for the encrypted names of the channels. */
  cipher: ChannelCipher;
  /** The access point as REST shows it (its readers' gateway and state), for AccessPointUpdated. */
  accessPointView(resource: AccessPointResource): AccessPointView;
}

export class Broadcaster implements Module {
  readonly name = 'broadcaster';
  /** Per project, the channel names of each topic (built once, not per scan); null: no such project. */
  readonly #channels = new Map<number, Map<ProjectTopic, readonly string[]> | null>();
  /** ZoneOccupancyChanged at most every OCCUPANCY_INTERVAL_MS per zone (zone-throttle.ts); what it last changed. */
  readonly #occupancy = new KeyedThrottle<number>(OCCUPANCY_INTERVAL_MS, (zoneId) => this.#publishOccupancy(zoneId));
  readonly #occupancyAt = new Map<number, { projectId: number; timestamp: string }>();

  constructor(
    private readonly server: PusherServer,
    private readonly bus: EventBus,
    private readonly projects: ProjectRepository,
    private readonly occupancy: Occupancy,
    private readonly index: VenueIndex,
    private readonly options: BroadcasterOptions,
  ) {}

  start(): void {
    const { bus } = this;
    bus.on(this, 'access.granted', (e) => this.publish(e.projectId, 'dashboard:access', 'AccessGranted', e.payload));
    bus.on(this, 'access.denied', (e) => this.publish(e.projectId, 'dashboard:access', 'AccessDenied', e.payload));
    // spec: AccessPointUpdated / AccessPointDeleted; a new access point is announced as updated
    // (a dashboard upserts by id either way), as REST shows it: a client that keeps the answer of
    // GET .../access-points and merges the event keeps its readers' gateway_id and status.
    bus.on(this, 'access_point.created', (e) => this.#publishAccessPoint(e.projectId, e.resource));
    bus.on(this, 'access_point.updated', (e) => this.#publishAccessPoint(e.projectId, e.resource));
    bus.on(this, 'access_point.deleted', (e) =>
      this.publish(e.projectId, 'dashboard:access-points', 'AccessPointDeleted', { id: e.id }),
    );
    // Zones on the occupancy channel, so a page of live counts learns of a new or renamed zone.
    bus.on(this, 'access_zone.created', (e) =>
      this.publish(e.projectId, 'console:occupancy', 'AccessZoneUpdated', this.#zoneNow(e.resource)),
    );
    bus.on(this, 'access_zone.updated', (e) =>
      this.publish(e.projectId, 'console:occupancy', 'AccessZoneUpdated', this.#zoneNow(e.resource)),
    );
    bus.on(this, 'access_zone.deleted', (e) =>
      this.publish(e.projectId, 'console:occupancy', 'AccessZoneDeleted', { id: e.id }),
    );
    bus.on(this, 'zone.occupancy_changed', (e) => {
      if (!this.#anySubscriber(e.projectId, 'console:occupancy')) return; // no payloads built for nobody
      for (const zoneId of e.zoneIds) {
        this.#occupancyAt.set(zoneId, { projectId: e.projectId, timestamp: e.timestamp });
        this.#occupancy.hit(zoneId);
      }
    });
    bus.on(this, 'gateway.online', (e) => this.publish(e.projectId, 'console:devices', 'GatewayOnline', e.gateway));
    bus.on(this, 'gateway.offline', (e) => this.publish(e.projectId, 'console:devices', 'GatewayOffline', e.gateway));
    bus.on(this, 'reader.status_changed', (e) =>
      this.publish(e.projectId, 'console:devices', 'ReaderStatusChanged', {
        reader_id: e.readerId,
        ...e.status,
        timestamp: e.timestamp,
      }),
    );
    // Never the OTP: a read-only account may join this channel (docs/security.md, attack 2).
    bus.on(this, 'reader.login_requested', (e) =>
      this.publish(e.projectId, 'console:devices', 'ReaderLoginRequested', {
        reader_id: e.readerId,
        reader_identifier: e.identifier,
        expires_at: e.expiresAt,
      }),
    );
    bus.on(this, 'reader.token_replaced', (e) =>
      this.publish(e.projectId, 'console:devices', 'ReaderTokenReplaced', {
        reader_id: e.readerId,
        reader_identifier: e.identifier,
        replaced_token_created_at: e.replacedTokenCreatedAt,
        requested_ip: e.ip,
        timestamp: e.timestamp,
      }),
    );
    // Readers plugged into the box (docs/bridge.md), on the devices channel.
    bus.on(this, 'bridge_device.connected', (e) =>
      this.publish(e.projectId, 'console:devices', 'BridgeDeviceConnected', e.device),
    );
    bus.on(this, 'bridge_device.disconnected', (e) =>
      this.publish(e.projectId, 'console:devices', 'BridgeDeviceDisconnected', e.device),
    );
    // Cloud sync (docs/sync.md): the link on the edge's console, conflicts on the cloud's.
    bus.on(this, 'sync.link_down', (e) =>
      this.publish(e.projectId, 'console:devices', 'SyncLinkDown', {
        edge_id: e.edgeId,
        reason: e.reason,
        since: e.since,
      }),
    );
    bus.on(this, 'sync.link_up', (e) =>
      this.publish(e.projectId, 'console:devices', 'SyncLinkUp', {
        edge_id: e.edgeId,
        down_since: e.downSince,
        at: e.at,
      }),
    );
    bus.on(this, 'sync.conflict', (e) => this.publish(e.projectId, 'console:devices', 'SyncConflict', e.conflict));
    bus.on(this, 'project.saved', (e) => this.#channels.delete(e.projectId));
  }

  stop(): void {
    this.bus.removeListeners(this);
    this.#occupancy.clear();
  }

  /** Built only when someone listens: the view reads each reader's gateway from the store. */
  #publishAccessPoint(projectId: number, resource: AccessPointResource): void {
    if (!this.#anySubscriber(projectId, 'dashboard:access-points')) return;
    this.publish(projectId, 'dashboard:access-points', 'AccessPointUpdated', this.options.accessPointView(resource));
  }

  /** The zone resource with its count as the occupancy tracker has it now. */
  #zoneNow(zone: ZoneResource): ZoneResource {
    const count = this.occupancy.count(zone.id);
    return {
      ...zone,
      current_count: count,
      available: zone.capacity === null ? null : Math.max(0, zone.capacity - count),
    };
  }

  /** One zone's count as it is now, with the time of the change that last moved it. */
  #publishOccupancy(zoneId: number): void {
    const changed = this.#occupancyAt.get(zoneId);
    if (!changed) return;
    const capacity = this.index.zones.get(zoneId)?.capacity ?? null;
    const count = this.occupancy.count(zoneId);
    this.publish(changed.projectId, 'console:occupancy', 'ZoneOccupancyChanged', {
      access_zone_id: zoneId,
      current_count: count,
      capacity,
      available: capacity === null ? null : Math.max(0, capacity - count),
      timestamp: changed.timestamp,
    });
  }

  /** The event name as published: bare, or under the configured namespace. */
  eventName(name: string): string {
    return publishedName(this.options.eventNamespace, name);
  }

  publish<N extends BroadcastEvent>(
    projectId: number,
    topic: BroadcastTopic<N>,
    name: N,
    payload: BroadcastPayload<N>,
  ): void {
    if (!this.#anySubscriber(projectId, topic)) return;
    const names = this.#channelsOf(projectId, topic)!;
    const event = this.eventName(name);
    const plain: string[] = [];
    let json: string | null = null;
    for (const channel of names) {
      // Only to channels bound to this project: a bare name authorized for a same-named project
      // of another team never carries this one's events (docs/security.md, attack 3).
      if (!this.server.occupied(channel, projectId)) continue;
      if (!isEncryptedChannel(channel)) {
        plain.push(channel);
        continue;
      }
      // Each encrypted channel has its own key, so its own ciphertext (and a fresh nonce).
      json ??= JSON.stringify(payload);
      this.server.publish([channel], event, this.options.cipher.seal(channel, json), undefined, projectId);
    }
    if (plain.length > 0) this.server.publish(plain, event, payload, undefined, projectId);
  }

  /** Whether anyone listens on the topic's channels (allocates nothing: it runs per scan). */
  #anySubscriber(projectId: number, topic: ProjectTopic): boolean {
    const names = this.#channelsOf(projectId, topic);
    if (!names) return false;
    for (const name of names) if (this.server.occupied(name)) return true;
    return false;
  }

  #channelsOf(projectId: number, topic: ProjectTopic): readonly string[] | null {
    if (!this.#channels.has(projectId)) {
      const project = this.projects.find(projectId);
      this.#channels.set(projectId, project ? new Map() : null);
    }
    const byTopic = this.#channels.get(projectId);
    if (!byTopic) return null;
    let names = byTopic.get(topic);
    if (!names) {
      const project = this.projects.find(projectId)!;
      byTopic.set(topic, (names = projectChannels(project, topic)));
    }
    return names;
  }
}

/** An event's name on the wire: bare, or under pusher.eventNamespace (`App\Events\AccessGranted`). */
export const publishedName = (namespace: string | null, name: string): string =>
  namespace ? `${namespace}\\${name}` : name;
