import { z } from 'zod';
import { gatewayReportSchema } from '../devices/gateways.js';
import { decisionSchema, scanFailureSchema, scanSchema } from '../mqtt/scan-handler.js';
import { STATUS_WORD } from '../mqtt/service.js';
import { gatewayStatusTopic, projectPrefix, readerTopic } from '../mqtt/topics.js';
import { publishedName } from '../realtime/broadcaster.js';
import { PROJECT_TOPICS, projectChannels, type ProjectTopic } from '../realtime/channel-access.js';
import {
  BROADCAST_EVENTS,
  type BroadcastEvent,
  PRESENCE_EVENTS,
  sealedEventSchema,
} from '../realtime/event-schemas.js';

// GET /api/v1/asyncapi.json (docs/realtime.md, "The AsyncAPI description"): the WebSocket (Pusher protocol) channels
// and events and the MQTT topics, AsyncAPI 3.0.0. Payloads come from the zod schemas the code
// publishes or validates with (realtime/event-schemas.ts, mqtt/scan-handler.ts, the gateway
// report), channel names from the functions that build them (channel-access.ts, mqtt/topics.ts).
// AsyncAPI 3's default schema format is a superset of JSON Schema draft-07, so zod emits draft-07
// here (openapi.ts emits 2020-12, OpenAPI 3.1's dialect). Servers are where the caller reached
// the box, as GET /api/v1/broadcasting/config and OTP verify answer.

type JsonSchema = Record<string, unknown>;
const ref = (path: string) => ({ $ref: `#/${path}` });

function draft7(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, {
    io,
    unrepresentable: 'any',
    target: 'draft-7',
  }) as JsonSchema;
  return rest;
}

export interface AsyncApiContext {
  /** http.publicUrl, or the address the caller reached the box at: the WebSocket servers. */
  origin: URL;
  /** mqtt.publicHost, or the host name the caller used. */
  mqttHost: string;
  mqttPorts: { tcp: number; tls: number | null };
  /** pusher.eventNamespace: events are published as `<namespace>\<name>`. */
  eventNamespace: string | null;
}

export const asyncApiDocumentSchema = z.looseObject({
  asyncapi: z.literal('3.0.0'),
  info: z.looseObject({ title: z.string(), version: z.string() }),
  channels: z.record(z.string(), z.unknown()),
  operations: z.record(z.string(), z.unknown()),
});

/** The payloads as JSON Schema, converted once (they do not depend on the request). */
let payloads: Record<string, JsonSchema> | undefined;
function payloadsOf(): Record<string, JsonSchema> {
  if (payloads) return payloads;
  const out: Record<string, JsonSchema> = {};
  for (const [name, spec] of Object.entries(BROADCAST_EVENTS)) out[name] = draft7(spec.payload, 'output');
  for (const [name, spec] of Object.entries(PRESENCE_EVENTS)) out[name] = draft7(spec.payload, 'output');
  out.sealed = draft7(sealedEventSchema, 'output');
  out.scan = draft7(scanSchema, 'input');
  out.decision = draft7(decisionSchema, 'output');
  out.scanFailure = draft7(scanFailureSchema, 'output');
  out.gatewayReport = draft7(gatewayReportSchema, 'input');
  out.statusWord = draft7(z.string().regex(STATUS_WORD), 'input');
  return (payloads = out);
}

function messages(namespace: string | null) {
  const p = payloadsOf();
  const json = (name: string, title: string, summary: string, payload: JsonSchema) => ({
    name,
    title,
    summary,
    contentType: 'application/json',
    payload,
  });
  const out: Record<string, unknown> = {};
  for (const [event, spec] of Object.entries(BROADCAST_EVENTS)) {
    const name = publishedName(namespace, event);
    out[event] = json(name, event, spec.summary, p[event]!);
    out[`${event}Sealed`] = json(
      name,
      `${event} (sealed)`,
      `${spec.summary} Sealed: {nonce, ciphertext}, base64; the opened JSON is ${event}'s payload.`,
      p.sealed!,
    );
  }
  out.MemberAdded = json(
    'pusher_internal:member_added',
    'Member added',
    PRESENCE_EVENTS['pusher_internal:member_added'].summary,
    p['pusher_internal:member_added']!,
  );
  out.MemberRemoved = json(
    'pusher_internal:member_removed',
    'Member removed',
    PRESENCE_EVENTS['pusher_internal:member_removed'].summary,
    p['pusher_internal:member_removed']!,
  );
  out.ReaderScan = json(
    'scan',
    'Reader scan',
    'A credential presented at a reader; request_id is unique per reader (a retry with the same one gets the first decision).',
    p.scan!,
  );
  out.ScanDecision = json(
    'decision',
    'Scan decision',
    'The decision on a scan, once its access event is durable; event_id is the access event uuid.',
    p.decision!,
  );
  out.ScanFailure = json(
    'scan_failure',
    'Scan refused',
    'A scan refused before any decision (too large, not JSON, invalid, unknown or unassigned reader).',
    p.scanFailure!,
  );
  out.GatewayStatusReport = json(
    'gateway_status',
    'Gateway status report',
    "The gateway's status and its readers', retained; the payload of POST /webhook/v1/mqtt-gateway-status.",
    p.gatewayReport!,
  );
  out.GatewayStatusWord = {
    name: 'gateway_status_word',
    title: 'Gateway status word',
    summary: 'A status without readers, such as the last will `offline`.',
    contentType: 'text/plain',
    payload: p.statusWord,
  };
  return out;
}

const capitalized = (s: string) => s.replace(/(^|[-:])([a-z])/g, (_m, _sep, c: string) => c.toUpperCase());

/** The WebSocket channels: each project topic bare and team-qualified,
 * plain and encrypted, and the console presence channel. */
function pusherChannels() {
  const channels: Record<string, unknown> = {};
  const operations: Record<string, unknown> = {};
  const add = (
    id: string,
    address: string,
    params: Record<string, unknown>,
    events: Record<string, string>,
    description: string,
  ) => {
    channels[id] = {
      address,
      title: address,
      description,
      parameters: params,
      servers: [ref('servers/pusher')],
      messages: Object.fromEntries(
        Object.entries(events).map(([key, message]) => [key, ref(`components/messages/${message}`)]),
      ),
    };
    operations[`send${capitalized(id)}`] = {
      action: 'send',
      channel: ref(`channels/${id}`),
      title: `Publish on ${address}`,
      tags: [{ name: 'WebSocket' }],
      messages: Object.keys(events).map((key) => ref(`channels/${id}/messages/${key}`)),
    };
  };
  const bare = { slug: ref('components/parameters/slug') };
  const qualified = { team: ref('components/parameters/team'), project: ref('components/parameters/project') };
  for (const topic of Object.keys(PROJECT_TOPICS) as ProjectTopic[]) {
    const events = (Object.keys(BROADCAST_EVENTS) as BroadcastEvent[]).filter(
      (e) => BROADCAST_EVENTS[e].topic === topic,
    );
    const names = [
      ...projectChannels({ slug: '{slug}', team_slug: '{team}' }, topic).filter((n) => !n.includes('{team}')),
      ...projectChannels({ slug: '{project}', team_slug: '{team}' }, topic).filter((n) => n.includes('{team}')),
    ];
    for (const address of names) {
      const encrypted = address.startsWith('private-encrypted-');
      const byTeam = address.includes('{team}');
      const id = `${capitalized(topic).replace(/^./, (c) => c.toLowerCase())}${encrypted ? 'Encrypted' : ''}${byTeam ? 'ByTeam' : ''}`;
      const how = encrypted
        ? 'End-to-end encrypted: each event is sealed for this channel (its key is the shared_secret POST /broadcasting/auth answers).'
        : 'Private: join with the auth string POST /broadcasting/auth answers.';
      const which = byTeam
        ? 'Team-qualified name: always names one project.'
        : "Bare slug: refused once the slug names projects in several teams; a subscription carries only its project's events.";
      add(
        id,
        address,
        byTeam ? qualified : bare,
        Object.fromEntries(events.map((e) => [e, encrypted ? `${e}Sealed` : e])),
        `${how} ${which}`,
      );
    }
  }
  const presence = { 'pusher_internal:member_added': 'MemberAdded', 'pusher_internal:member_removed': 'MemberRemoved' };
  const staff =
    'Staff who have the console open; a member is a user, not a connection. Join with the auth string and channel_data POST /broadcasting/auth answers.';
  add('consolePresence', 'presence-console.project.{slug}', bare, presence, staff);
  add('consolePresenceByTeam', 'presence-console.project.{team}.{project}', qualified, presence, staff);
  return { channels, operations };
}

/** The MQTT topics (mqtt/topics.ts) on every MQTT listener. */
function mqttChannels(servers: string[]) {
  const on = servers.map((s) => ref(`servers/${s}`));
  const prefix = projectPrefix('{team}', '{project}');
  const params = (identifier: string) => ({
    team: ref('components/parameters/team'),
    project: ref('components/parameters/project'),
    identifier: ref(`components/parameters/${identifier}`),
  });
  const qos1 = (retain: boolean) => ({ mqtt: { qos: 1, retain, bindingVersion: '0.2.0' } });
  const decisions = [
    ref('channels/readerDecisions/messages/decision'),
    ref('channels/readerDecisions/messages/failure'),
  ];
  const channels = {
    readerScans: {
      address: readerTopic(prefix, '{identifier}', 'scans'),
      description: 'Published by the reader, or by the gateway that fronts it. Never readable.',
      parameters: params('readerIdentifier'),
      servers: on,
      messages: { scan: ref('components/messages/ReaderScan') },
    },
    readerDecisions: {
      address: readerTopic(prefix, '{identifier}', 'decisions'),
      description:
        "Read by the reader, its gateway (`readers/+/decisions`: only its readers') and staff with *, read or access:read on the project.",
      parameters: params('readerIdentifier'),
      servers: on,
      messages: { decision: ref('components/messages/ScanDecision'), failure: ref('components/messages/ScanFailure') },
    },
    gatewayStatus: {
      address: gatewayStatusTopic(prefix, '{identifier}'),
      description:
        'Published retained by the gateway on connect and whenever it changes, and as its last will. Readable by staff.',
      parameters: params('gatewayIdentifier'),
      servers: on,
      messages: {
        report: ref('components/messages/GatewayStatusReport'),
        word: ref('components/messages/GatewayStatusWord'),
      },
    },
  };
  const tags = [{ name: 'MQTT' }];
  const operations = {
    receiveReaderScan: {
      action: 'receive',
      channel: ref('channels/readerScans'),
      title: 'Decide a scan',
      summary: 'Acknowledged (PUBACK) only once its access event is durable, in one write with the decision.',
      tags,
      bindings: qos1(false),
      messages: [ref('channels/readerScans/messages/scan')],
      reply: { channel: ref('channels/readerDecisions'), messages: decisions },
    },
    sendReaderDecision: {
      action: 'send',
      channel: ref('channels/readerDecisions'),
      title: 'Answer a scan',
      summary: 'Every scan is answered within mqtt.answerTimeoutMs or its connection is closed unacknowledged.',
      tags,
      bindings: qos1(false),
      messages: decisions,
    },
    receiveGatewayStatus: {
      action: 'receive',
      channel: ref('channels/gatewayStatus'),
      title: 'Record a gateway status',
      tags,
      bindings: qos1(true),
      messages: [ref('channels/gatewayStatus/messages/report'), ref('channels/gatewayStatus/messages/word')],
    },
  };
  return { channels, operations };
}

function servers(ctx: AsyncApiContext) {
  const ws = ctx.origin.protocol === 'https:' ? 'wss' : 'ws';
  const credentials = [ref('components/securitySchemes/mqttCredentials')];
  const out: Record<string, unknown> = {
    pusher: {
      host: ctx.origin.host,
      protocol: ws,
      pathname: '/app/{key}',
      title: 'Pusher Channels server (protocol 7)',
      description:
        'Connect to /app/{key}?protocol=7 with pusher-js or laravel-echo. Every event arrives as {event, channel, data} with data a JSON-encoded string of the payload described here. Private, encrypted and presence channels are joined with POST /broadcasting/auth.',
      variables: { key: { description: 'pusher.key, as GET /api/v1/broadcasting/config answers it' } },
    },
    mqtt: {
      host: `${ctx.mqttHost}:${ctx.mqttPorts.tcp}`,
      protocol: 'mqtt',
      protocolVersion: '3.1.1',
      title: 'MQTT over TCP',
      security: credentials,
    },
    mqttWebSocket: {
      host: ctx.origin.host,
      protocol: ws,
      pathname: '/mqtt',
      protocolVersion: '3.1.1',
      title: 'MQTT over WebSocket',
      description: 'MQTT 3.1.1 over WebSocket (subprotocol mqtt) on the HTTP port: the same broker and credentials.',
      security: credentials,
    },
  };
  if (ctx.mqttPorts.tls !== null)
    out.mqttTls = {
      host: `${ctx.mqttHost}:${ctx.mqttPorts.tls}`,
      protocol: 'secure-mqtt',
      protocolVersion: '3.1.1',
      title: 'MQTT over TLS',
      security: credentials,
    };
  return out;
}

/** The document for a caller that reached the box at `ctx.origin`. */
export function buildAsyncApi(ctx: AsyncApiContext) {
  const served = servers(ctx);
  const pusher = pusherChannels();
  const mqtt = mqttChannels(Object.keys(served).filter((s) => s !== 'pusher'));
  return {
    asyncapi: '3.0.0' as const,
    info: {
      title: 'Gatehouse appliance real-time and device messages',
      version: '1.0.0',
      description:
        'What a Gatehouse appliance publishes on its Pusher-protocol WebSocket server (docs/realtime.md) and what it exchanges with readers and gateways on its MQTT broker (docs/mqtt.md). ' +
        'Event names are bare, or `<pusher.eventNamespace>\\<name>` when a namespace is configured. The REST API is /api/v1/openapi.json.',
    },
    defaultContentType: 'application/json',
    servers: served,
    channels: { ...pusher.channels, ...mqtt.channels },
    operations: { ...pusher.operations, ...mqtt.operations },
    components: {
      messages: messages(ctx.eventNamespace),
      parameters: {
        slug: { description: 'a project slug (the bare form)' },
        team: { description: 'the team slug' },
        project: { description: 'the project slug' },
        readerIdentifier: { description: "a reader's identifier" },
        gatewayIdentifier: { description: "a gateway's identifier" },
      },
      securitySchemes: {
        mqttCredentials: {
          type: 'userPassword',
          description:
            'Readers: identifier and reader token (OTP verify). Gateways: identifier and gateway token. Staff (read only): any user name and a personal access token.',
        },
      },
    },
  };
}

/** Where this caller reached the box, as broadcasting/config and OTP verify work it out. */
export function asyncApiContext(
  config: {
    http: { publicUrl: string | null };
    mqtt: { publicHost: string | null };
    pusher: { eventNamespace: string | null };
  },
  mqttPorts: AsyncApiContext['mqttPorts'],
  request: { protocol: string; host: string; hostname: string },
): AsyncApiContext {
  return {
    origin: new URL(config.http.publicUrl ?? `${request.protocol}://${request.host}`),
    mqttHost: config.mqtt.publicHost ?? (request.hostname || 'localhost'),
    mqttPorts,
    eventNamespace: config.pusher.eventNamespace,
  };
}
