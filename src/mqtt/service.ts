import type { AedesPublishPacket, PublishPacket } from 'aedes';
import { Gauge, type Registry } from 'prom-client';
import type { EventBus } from '../events/bus.js';
import type { Gateways } from '../devices/gateways.js';
import { gatewayReportSchema } from '../devices/gateways.js';
import type { ReaderStates } from '../devices/reader-state.js';
import { JsonDepthError, parseJson } from '../json-depth.js';
import type { Logger } from '../logger.js';
import type { Parsed } from '../result.js';
import type { MqttReply, MqttBroker } from './broker.js';
import type { MqttIdentity } from './identities.js';
import { handleScan, type MalformedReason, type ScanHandlerDeps } from './scan-handler.js';
import { parseTopic, readerTopic } from './topics.js';

// What the box does with MQTT traffic (docs/mqtt.md): a scan on a reader's scans topic is
// decided and answered on its decisions topic (the broker acknowledges the scan with the
// answer, once its access event is durable: broker.ts); a gateway's status (retained, or its last will)
// updates the same gateway and reader state as the mqtt-gateway-status webhook; connections
// mark readers online and offline. Malformed traffic is counted by reason in /metrics and
// logged, never a crash and never an access event.

export type TrafficCounter =
  | MalformedReason
  | 'invalid_status'
  | 'refused_connect'
  | 'refused_publish'
  | 'refused_subscribe'
  | 'oversize_packet';

export class MqttService {
  readonly counts = new Map<TrafficCounter | 'scans' | 'decisions' | 'status_reports', number>();

  constructor(
    private readonly scanDeps: ScanHandlerDeps,
    private readonly gateways: Gateways,
    private readonly readerStates: ReaderStates,
    private readonly bus: EventBus,
    private readonly log: Logger,
  ) {}

  count(what: TrafficCounter | 'scans' | 'decisions' | 'status_reports'): void {
    this.counts.set(what, (this.counts.get(what) ?? 0) + 1);
  }

  /** Wires the broker's hooks and the bus events that disconnect devices. */
  attach(broker: MqttBroker): void {
    const disconnect = (kind: 'reader' | 'gateway', id: number) => broker.disconnect(kind, id);
    this.bus.on(this, 'device.credentials_revoked', (e) => disconnect(e.kind, e.deviceId));
    this.bus.on(this, 'reader.deleted', (e) => {
      disconnect('reader', e.id);
      this.readerStates.forget(e.id);
    });
    this.bus.on(this, 'gateway.deleted', (e) => disconnect('gateway', e.id));
    // A staff member's access changed: their connections are checked again now (docs/security.md, attack 1).
    this.bus.on(this, 'permissions.changed', (e) => broker.recheck(e.userId, e.reason));
  }

  detach(): void {
    this.bus.removeListeners(this);
  }

  connected(identity: MqttIdentity): void {
    if (identity.kind === 'reader') this.readerStates.connected(identity.projectId, identity.readerId);
  }

  disconnected(identity: MqttIdentity): void {
    if (identity.kind === 'reader') this.readerStates.disconnected(identity.projectId, identity.readerId);
  }

  /** A scan (on a reader's scans topic): its decision, or its error
   * when a request_id can be read; null for any other publish. */
  reply(identity: MqttIdentity, packet: PublishPacket, deadline = 0): Promise<MqttReply | null> | null {
    if (identity.kind === 'staff') return null; // the ACL lets staff publish nothing
    if (identity.kind === 'reader')
      return packet.topic === identity.scansTopic
        ? this.#scan(identity, identity.identifier, identity.decisionsTopic, packet.payload as Buffer, deadline)
        : null;
    const topic = parseTopic(packet.topic);
    if (topic?.kind !== 'readers' || topic.leaf !== 'scans') return null;
    return this.#scan(
      identity,
      topic.identifier,
      readerTopic(identity.prefix, topic.identifier, 'decisions'),
      packet.payload as Buffer,
      deadline,
    );
  }

  published(identity: MqttIdentity, packet: AedesPublishPacket): void {
    if (identity.kind !== 'gateway') return;
    const topic = parseTopic(packet.topic);
    if (topic?.kind === 'gateways') this.#status(identity, packet.payload as Buffer);
  }

  async #scan(
    identity: Exclude<MqttIdentity, { kind: 'staff' }>,
    identifier: string,
    topic: string,
    payload: Buffer,
    deadline: number,
  ): Promise<MqttReply | null> {
    this.count('scans');
    try {
      const result = await handleScan(this.scanDeps, identity.projectId, identifier, payload, deadline);
      if (result.ok) {
        this.count('decisions');
        return { topic, payload: result.decision };
      }
      this.count(result.reason);
      // Counted on the reader too, for staff (GET .../readers: status.errors); a gateway's scan for a reader the
      // project lacks has no reader to count on.
      const readerId =
        identity.kind === 'reader'
          ? identity.readerId
          : this.scanDeps.readerScans.find(identity.projectId, identifier)?.id;
      if (readerId !== undefined) this.readerStates.failed(identity.projectId, readerId, result.failure.error);
      this.log.warn(
        {
          reader: identifier,
          reason: result.reason,
          error: result.failure.message,
          requestId: result.failure.request_id,
        },
        'mqtt scan refused',
      );
      return result.failure.request_id === null ? null : { topic, payload: result.failure };
    } catch (err) {
      // The access event could not be written to the journal: nothing was decided. The broker
      // closes the connection without acknowledging the scan, so the reader sends it again.
      this.log.error({ err, reader: identifier }, 'mqtt scan failed, closing the connection unacknowledged');
      throw err;
    }
  }

  #status(identity: Extract<MqttIdentity, { kind: 'gateway' }>, payload: Buffer): void {
    if (payload.length === 0) return; // a retained status being cleared
    const gateway = this.gateways.byId(identity.gatewayId);
    if (!gateway) return;
    const report = parseStatus(payload, gateway.identifier);
    if (!report.ok) {
      this.count('invalid_status');
      this.log.warn({ gateway: gateway.identifier, error: report.message }, 'mqtt gateway status refused');
      return;
    }
    this.count('status_reports');
    try {
      this.gateways.report(gateway, report.value);
    } catch (err) {
      // Not stored (the store busy past store.busyTimeoutMs): a throw here would break aedes'
      // publish pipeline; the gateway reports again.
      this.log.error({ err, gateway: gateway.identifier }, 'mqtt gateway status not stored');
    }
  }
}

type StatusParse = Parsed<{
  value: {
    status: string;
    readers?: { reader_id: string; status: string; last_scan?: string | number | null | undefined }[];
    timestamp?: string | number;
  };
}>;

/** A status without readers, as a bare word (a last will's `offline`); anything else is the webhook's JSON. */
export const STATUS_WORD = /^[A-Za-z_-]{1,32}$/;

/** A status payload: the webhook's JSON, or a bare word such as the last will's `offline`. */
export function parseStatus(payload: Buffer, identifier: string): StatusParse {
  if (payload.length > 256 * 1024) return { ok: false, message: 'status payload too large' };
  const text = payload.toString('utf8').trim();
  if (STATUS_WORD.test(text)) return { ok: true, value: { status: text } };
  let json: unknown;
  try {
    json = parseJson(text);
  } catch (err) {
    return {
      ok: false,
      message: err instanceof JsonDepthError ? `JSON that ${err.message}` : 'neither JSON nor a status word',
    };
  }
  const parsed = gatewayReportSchema.safeParse(json);
  if (!parsed.success)
    return { ok: false, message: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') };
  if (parsed.data.gateway_id !== identifier)
    return { ok: false, message: `gateway_id ${parsed.data.gateway_id} is not this gateway (${identifier})` };
  return { ok: true, value: parsed.data };
}

/** /metrics: connected MQTT clients by kind and the traffic counters. */
export function registerMqttMetrics(registry: Registry, broker: MqttBroker, service: MqttService): void {
  new Gauge({
    name: 'gatehouse_mqtt_clients',
    help: 'Connected MQTT clients by kind (reader, gateway, staff)',
    labelNames: ['kind'],
    registers: [registry],
    collect() {
      const stats = broker.stats;
      this.set({ kind: 'reader' }, stats.readers);
      this.set({ kind: 'gateway' }, stats.gateways);
      this.set({ kind: 'staff' }, stats.staff);
    },
  });
  new Gauge({
    name: 'gatehouse_mqtt_messages_total',
    help: 'MQTT traffic by outcome: scans, decisions, status_reports, and refused or malformed traffic by reason',
    labelNames: ['what'],
    registers: [registry],
    collect() {
      for (const [what, n] of service.counts) this.set({ what }, n);
    },
  });
}
