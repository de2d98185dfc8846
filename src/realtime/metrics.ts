import type { Registry } from 'prom-client';
import { gaugesIn } from '../metrics.js';
import type { PusherServer } from './server.js';

/** /metrics: WebSocket connections, channels, subscriptions and frames in/out (docs/realtime.md). */
export function registerRealtimeMetrics(registry: Registry, server: PusherServer): void {
  const gauge = gaugesIn(registry);
  gauge('gatehouse_ws_connections', 'Open WebSocket (Pusher protocol) connections', () => server.stats.connections);
  gauge('gatehouse_ws_channels', 'Channels with at least one subscriber', () => server.stats.channels);
  gauge('gatehouse_ws_subscriptions', 'Channel subscriptions over all connections', () => server.stats.subscriptions);
  gauge('gatehouse_ws_messages_in_total', 'Frames received from clients', () => server.stats.messagesIn);
  gauge('gatehouse_ws_messages_out_total', 'Frames sent to clients', () => server.stats.messagesOut);
}
