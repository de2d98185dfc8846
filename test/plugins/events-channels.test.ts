import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import {
  bareEventName,
  EVENT_TOPICS,
  planSubscriptions,
  projectChannel,
  topicOf,
} from '../../src/plugins/toolkit/event-channels.js';
import { type BroadcastingConfig, socketOptions } from '../../src/plugins/toolkit/events.js';
import { parseChannel, PROJECT_TOPICS, projectChannels } from '../../src/realtime/channel-access.js';
import { BROADCAST_EVENTS } from '../../src/realtime/event-schemas.js';
import { accessPointsDependency } from './fixtures.js';

// The toolkit's browser-safe copy of which channel carries which event (event-channels.ts) against
// the server's own lists, the channels a manifest's dependencies need, the socket's address, and
// that the toolkit's socket bundles for a browser without the server's modules.

describe('event channels', () => {
  it("names every event the broadcaster publishes, on the broadcaster's topic", () => {
    const server = Object.fromEntries(Object.entries(BROADCAST_EVENTS).map(([name, spec]) => [name, spec.topic]));
    expect(EVENT_TOPICS).toEqual(server);
    for (const topic of Object.values(EVENT_TOPICS)) expect(Object.keys(PROJECT_TOPICS)).toContain(topic);
  });

  it("names each topic's channel as the server does (team-qualified, not encrypted)", () => {
    for (const topic of Object.keys(PROJECT_TOPICS) as (keyof typeof PROJECT_TOPICS)[]) {
      const name = projectChannel(topic, 'main-team', 'main-stage');
      expect(projectChannels({ slug: 'main-stage', team_slug: 'main-team' }, topic)).toContain(name);
      expect(parseChannel(name)).toMatchObject({
        kind: 'private',
        encrypted: false,
        teamSlug: 'main-team',
        projectSlug: 'main-stage',
        topic,
      });
    }
  });

  it('reads an event name with or without pusher.eventNamespace', () => {
    expect(bareEventName('App\\Events\\AccessGranted')).toBe('AccessGranted');
    expect(bareEventName('AccessGranted')).toBe('AccessGranted');
    expect(topicOf('App\\Events\\AccessPointDeleted')).toBe('dashboard:access-points');
    expect(topicOf('constructor')).toBeNull();
  });
});

describe('planSubscriptions', () => {
  it('needs each channel once, with each name an event is handed over under and the dependencies listing it so', () => {
    const doors = {
      ...accessPointsDependency,
      identifier: 'doors',
      events: { 'App\\Events\\AccessPointUpdated': 'doorChanged', AccessGranted: 'AccessGranted' },
    };
    const { plan, skipped } = planSubscriptions([accessPointsDependency, doors], 'default', 'hall');
    expect([...plan.keys()]).toEqual([
      'private-dashboard.project.default.hall.access-points',
      'private-dashboard.project.default.hall.access',
    ]);
    expect(Object.fromEntries(plan.get('private-dashboard.project.default.hall.access-points')!)).toEqual({
      AccessPointUpdated: [
        { name: 'AccessPointUpdated', dependencies: ['access_points'] },
        { name: 'doorChanged', dependencies: ['doors'] },
      ],
      AccessPointDeleted: [{ name: 'AccessPointDeleted', dependencies: ['access_points'] }],
    });
    expect(skipped).toEqual([]);
  });

  it('skips, saying why, an event the appliance does not publish; the permissions a dependency lists skip nothing (the appliance authorizes the channel)', () => {
    const gates = {
      ...accessPointsDependency,
      identifier: 'gates',
      permissions: ['view_gates'],
      events: { AccessPointUpdated: 'gateChanged' },
    };
    const odd = {
      ...accessPointsDependency,
      identifier: 'odd',
      permissions: [],
      events: { GateOpened: 'GateOpened', AccessDenied: 'denied' },
    };
    const { plan, skipped } = planSubscriptions([gates, odd], 'default', 'hall');
    expect([...plan.keys()]).toEqual([
      'private-dashboard.project.default.hall.access-points',
      'private-dashboard.project.default.hall.access',
    ]);
    expect(skipped).toEqual(['odd: "GateOpened" is not an event the appliance publishes']);
  });
});

describe('socketOptions', () => {
  const config: BroadcastingConfig = {
    key: 'k',
    ws_host: 'box.example',
    ws_port: 8080,
    ws_path: '',
    force_tls: false,
    auth_endpoint: 'http://box.example:8080/broadcasting/auth',
  };
  const context = { baseUrl: 'http://box.example:8080', teamSlug: 'default', projectSlug: 'default', token: 't' };

  it('connects where the broadcasting config says when the plugin has a base URL', () => {
    expect(socketOptions(config, context, { protocol: 'http:', hostname: 'localhost', port: '5173' })).toMatchObject({
      wsHost: 'box.example',
      wsPort: 8080,
      forceTLS: false,
      wsPath: '',
    });
    expect(socketOptions({ ...config, ws_port: 443, force_tls: true }, context, null)).toMatchObject({
      wsHost: 'box.example',
      wssPort: 443,
      forceTLS: true,
    });
  });

  it("connects to the page's host and port on the page's origin (baseUrl '')", () => {
    const same = { ...context, baseUrl: '' };
    expect(socketOptions(config, same, { protocol: 'http:', hostname: 'localhost', port: '5173' })).toMatchObject({
      wsHost: 'localhost',
      wsPort: 5173,
      forceTLS: false,
    });
    expect(socketOptions(config, same, { protocol: 'https:', hostname: 'kiosk.example', port: '' })).toMatchObject({
      wsHost: 'kiosk.example',
      wssPort: 443,
      forceTLS: true,
    });
    expect(() => socketOptions(config, same, null)).toThrow(/needs the page's location/);
  });
});

describe('the toolkit in a browser bundle', () => {
  it("bundles the store and its socket for a browser with pusher-js's web build and none of the server's modules", async () => {
    const result = await build({
      entryPoints: ['src/plugins/toolkit/store.ts'],
      bundle: true,
      platform: 'browser',
      format: 'esm',
      write: false,
      metafile: true,
      logLevel: 'silent',
    });
    const inputs = Object.keys(result.metafile.inputs);
    expect(inputs).toContain('node_modules/pusher-js/dist/web/pusher.js');
    expect(inputs.filter((i) => i.startsWith('src/') && !i.startsWith('src/plugins/toolkit/'))).toEqual([]);
    expect(inputs.filter((i) => i.includes('pusher-js/dist/node'))).toEqual([]);
  });
});
