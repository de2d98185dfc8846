// Which channel each socket event arrives on, and so which channels a plugin's dependencies need
// (events.ts subscribes them). The server's list (src/realtime/event-schemas.ts BROADCAST_EVENTS,
// channel-access.ts PROJECT_TOPICS) imports server modules and cannot be bundled for a browser,
// so this is a copy of the names only; test/plugins/events-channels.test.ts fails when the two
// disagree.

import type { PluginDependency } from './types.js';

/** Socket event (bare name) to its project channel's topic, `<area>:<suffix>` as PROJECT_TOPICS names it. */
export const EVENT_TOPICS = {
  AccessGranted: 'dashboard:access',
  AccessDenied: 'dashboard:access',
  AccessPointUpdated: 'dashboard:access-points',
  AccessPointDeleted: 'dashboard:access-points',
  AccessZoneUpdated: 'console:occupancy',
  AccessZoneDeleted: 'console:occupancy',
  ZoneOccupancyChanged: 'console:occupancy',
  GatewayOnline: 'console:devices',
  GatewayOffline: 'console:devices',
  ReaderStatusChanged: 'console:devices',
  ReaderLoginRequested: 'console:devices',
  ReaderTokenReplaced: 'console:devices',
  BridgeDeviceConnected: 'console:devices',
  BridgeDeviceDisconnected: 'console:devices',
  SyncLinkDown: 'console:devices',
  SyncLinkUp: 'console:devices',
  SyncConflict: 'console:devices',
} as const satisfies Record<string, `${'dashboard' | 'console'}:${string}`>;

export type SocketEventName = keyof typeof EVENT_TOPICS;
export type EventTopic = (typeof EVENT_TOPICS)[SocketEventName];

/**
 * An event's name without the namespace the appliance may publish it under
 * (`pusher.eventNamespace`: `App\Events\AccessGranted` → `AccessGranted`; docs/realtime.md "Event names").
 */
export function bareEventName(name: string): string {
  return name.slice(name.lastIndexOf('\\') + 1);
}

/** The topic of a socket event, bare or namespaced; null for an event the appliance does not publish. */
export function topicOf(event: string): EventTopic | null {
  const bare = bareEventName(event);
  return Object.hasOwn(EVENT_TOPICS, bare) ? EVENT_TOPICS[bare as SocketEventName] : null;
}

/**
 * The team-qualified private channel of a project's topic: `private-dashboard.project.{team}.{project}.access`.
 * The qualified name always names one project; the bare-slug one is refused once the slug is ambiguous
 * (docs/realtime.md "Channels and events").
 */
export function projectChannel(topic: EventTopic, teamSlug: string, projectSlug: string): string {
  const [area, suffix] = topic.split(':') as [string, string];
  return `private-${area}.project.${teamSlug}.${projectSlug}.${suffix}`;
}

/** Channel → bare socket event → each name the plugin receives it under, with the dependencies that list it so. */
export type Plan = Map<string, Map<string, { name: string; dependencies: string[] }[]>>;

/**
 * The channels the dependencies' events need, each once, and what was skipped and why: an event the
 * appliance does not publish. Whether the token may join a channel is the appliance's to answer
 * (channel authorization, 403): the manifest's `permissions` are device capabilities, not abilities.
 */
export function planSubscriptions(
  dependencies: readonly PluginDependency[],
  teamSlug: string,
  projectSlug: string,
): { plan: Plan; skipped: string[] } {
  const plan: Plan = new Map();
  const skipped: string[] = [];
  for (const dependency of dependencies) {
    for (const [socketEvent, name] of Object.entries(dependency.events)) {
      const topic = topicOf(socketEvent);
      if (!topic) {
        skipped.push(`${dependency.identifier}: "${socketEvent}" is not an event the appliance publishes`);
        continue;
      }
      const channel = projectChannel(topic, teamSlug, projectSlug);
      if (!plan.has(channel)) plan.set(channel, new Map());
      const events = plan.get(channel)!;
      const bare = bareEventName(socketEvent);
      if (!events.has(bare)) events.set(bare, []);
      const routes = events.get(bare)!;
      const route = routes.find((r) => r.name === name);
      if (route) route.dependencies.push(dependency.identifier);
      else routes.push({ name, dependencies: [dependency.identifier] });
    }
  }
  return { plan, skipped };
}
