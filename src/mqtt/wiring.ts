import { readerKey } from '../access/venue-index.js';
import type { Module } from '../lifecycle.js';
import type { Services } from '../service-map.js';
import { MqttBroker } from './broker.js';
import { MqttService, registerMqttMetrics } from './service.js';

// The embedded broker wired to the domain services (docs/mqtt.md): who may connect
// and publish where (identities, ACL), what a publish means (scans, gateway status:
// service.ts). One module for the lifecycle: the service follows the bus while the broker runs.

export interface Mqtt extends Module {
  broker: MqttBroker;
  service: MqttService;
}

export function createMqtt(s: Services): Mqtt {
  const { config, devices, access, accounts } = s;
  const log = s.log.child({ module: 'mqtt' });
  const service = new MqttService(
    { scans: access.scans, readerScans: access.readerScans, maxPayloadBytes: config.mqtt.maxPayloadBytes },
    devices.gateways,
    devices.readerStates,
    s.bus,
    log,
  );
  const gatewayOfReader = (projectId: number, identifier: string) => {
    const reader = access.index.readers.get(readerKey(projectId, identifier));
    return reader ? s.venue.readers.gatewayOf(reader.id) : null;
  };
  const broker = new MqttBroker(
    { host: config.http.host, ...config.mqtt },
    {
      deviceTokens: devices.tokens,
      tokens: accounts.tokens,
      users: accounts.users,
      projects: accounts.projects,
      gateways: devices.gateways,
      index: access.index,
      gatewayOfReader,
    },
    {
      reply: (identity, packet, deadline) => service.reply(identity, packet, deadline),
      published: (identity, packet) => service.published(identity, packet),
      connected: (identity) => service.connected(identity),
      disconnected: (identity) => service.disconnected(identity),
      refused: (kind) => service.count(kind === 'oversize' ? 'oversize_packet' : `refused_${kind}`),
    },
    log,
    access.deadlines,
  );
  registerMqttMetrics(s.metrics.registry, broker, service);
  return {
    name: 'mqtt',
    broker,
    service,
    async start() {
      service.attach(broker);
      try {
        await broker.start();
      } catch (err) {
        service.detach();
        throw err;
      }
    },
    async stop() {
      await broker.stop();
      service.detach();
    },
  };
}
