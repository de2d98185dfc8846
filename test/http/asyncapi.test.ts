import { readFileSync } from 'node:fs';
import { DiagnosticSeverity, Parser } from '@asyncapi/parser';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scanSchema } from '../../src/mqtt/scan-handler.js';
import { parseTopic } from '../../src/mqtt/topics.js';
import { parseChannel } from '../../src/realtime/channel-access.js';
import { BROADCAST_EVENTS } from '../../src/realtime/event-schemas.js';
import { startAppliance, type TestAppliance } from '../helpers/appliance.js';

// GET /api/v1/asyncapi.json (docs/realtime.md, "The AsyncAPI description") from a running appliance, checked with the official
// AsyncAPI parser and against the code: the events the broadcaster's source publishes, the channel
// names channel-access.ts accepts, the topics mqtt/topics.ts parses, the scan schema's verdicts.

/** Every (topic, event) the broadcaster publishes, read from its source: a new publish call shows up here. */
function publishedBySource(): [topic: string, event: string][] {
  const source = readFileSync('src/realtime/broadcaster.ts', 'utf8');
  return [...source.matchAll(/this\.publish\(\s*[\w.]+,\s*'([\w:-]+)',\s*'(\w+)'/g)].map((m) => [m[1]!, m[2]!]);
}

/** An address with its parameters filled in with sample values. */
const filled = (address: string) =>
  address
    .replace('{slug}', 'main-stage')
    .replace('{team}', 'acme')
    .replace('{project}', 'main-stage')
    .replace('{identifier}', 'GATE-1');

describe('the AsyncAPI description', () => {
  let gh: TestAppliance;
  let doc: any;
  beforeAll(async () => {
    gh = await startAppliance();
    const res = await gh.request('GET', '/api/v1/asyncapi.json');
    expect(res.status).toBe(200);
    doc = res.body;
  });
  afterAll(() => gh.destroy());

  it('is a valid AsyncAPI 3.0.0 document according to the official parser, without a token', async () => {
    const { document, diagnostics } = await new Parser().parse(structuredClone(doc));
    expect(
      diagnostics
        .filter((d) => d.severity === DiagnosticSeverity.Error)
        .map((d) => `${d.path.join('.')}: ${d.message}`),
    ).toEqual([]);
    expect(document?.version()).toBe('3.0.0');
    expect(document?.servers().get('pusher')?.pathname()).toBe('/app/{key}');
    expect(document?.servers().get('mqtt')?.protocol()).toBe('mqtt');
    expect(doc.servers.mqtt.host).toBe(`127.0.0.1:${gh.app.mqtt.ports.tcp}`);
  });

  it('describes every event the broadcaster publishes, on the channels of its topic, and no other', () => {
    const published = publishedBySource();
    expect(published.length).toBeGreaterThanOrEqual(15);
    expect(new Set(published.map(([, event]) => event))).toEqual(new Set(Object.keys(BROADCAST_EVENTS)));
    const channels = Object.values<any>(doc.channels);
    for (const [topic, event] of published) {
      const target = channels.filter((ch) => parseChannel(filled(ch.address))?.topic === topic);
      expect(target.length, topic).toBe(4); // bare and team-qualified, plain and encrypted
      for (const ch of target) {
        const message = doc.components.messages[ch.messages[event].$ref.split('/').pop()];
        expect(message.name, `${event} on ${ch.address}`).toBe(event);
      }
      expect(doc.components.messages[event].payload.type).toBe('object');
    }
    const named = new Set(Object.values<any>(doc.components.messages).map((m) => m.name));
    for (const [event] of Object.entries(BROADCAST_EVENTS)) expect(named.has(event), event).toBe(true);
  });

  it('names channels the WebSocket server accepts and topics the broker parses, each send or receive', () => {
    for (const [id, ch] of Object.entries<any>(doc.channels)) {
      const address = filled(ch.address);
      if (ch.address.startsWith('gatehouse/')) expect(parseTopic(address), id).not.toBeNull();
      else expect(parseChannel(address), id).not.toBeNull();
      for (const name of ch.address.match(/\{(\w+)\}/g) ?? [])
        expect(ch.parameters[name.slice(1, -1)], `${id} ${name}`).toBeDefined();
    }
    const actions = Object.values<any>(doc.operations).map((op) => `${op.action} ${op.channel.$ref.split('/').pop()}`);
    expect(actions).toContain('receive readerScans');
    expect(actions).toContain('send readerDecisions');
    expect(actions).toContain('receive gatewayStatus');
    expect(actions).toContain('send dashboardAccess');
    expect(actions).toContain('send consolePresenceByTeam');
    expect(Object.values<any>(doc.operations).filter((op) => op.action === 'receive').length).toBe(2);
  });

  it('gives the MQTT scan the schema that validates it: request_id and credential_value required', () => {
    const scan = doc.components.messages.ReaderScan.payload;
    expect([...scan.required].sort()).toEqual(['credential_value', 'request_id']);
    expect(doc.components.messages.GatewayStatusReport.payload.required).toContain('gateway_id');
  });

  it('refuses in its JSON Schema what the scan schema refuses, and accepts what it accepts', () => {
    // Ajv's draft-07 class: AsyncAPI 3's default schema format is a superset of draft-07, which the document uses.
    const ajv = new Ajv({ strict: true, allErrors: true });
    addFormats.default(ajv);
    const validate = ajv.compile(doc.components.messages.ReaderScan.payload);
    const refused = [
      { request_id: 'r-1' },
      { request_id: '', credential_value: 'CRED' },
      { request_id: 'r-1', credential_value: 'CRED', timestamp: -5 },
      { request_id: 'r-1', credential_value: 'x'.repeat(5000) },
    ];
    for (const payload of refused) {
      expect(scanSchema.safeParse(payload).success, JSON.stringify(payload)).toBe(false);
      expect(validate(payload), JSON.stringify(payload)).toBe(false);
    }
    const accepted = {
      request_id: 'r-1',
      credential_value: 'CRED',
      scan_type: 'qr',
      timestamp: '2026-11-23T12:00:00+01:00',
    };
    expect(scanSchema.safeParse(accepted).success).toBe(true);
    expect(validate(accepted)).toBe(true);
  });

  it("lists AccessDenied's reason as the spec's six denial reasons, and reason_detail as its four values or null, which live payloads meet", () => {
    const denied = doc.components.messages.AccessDenied.payload;
    expect(denied.properties.reason.enum).toEqual([
      'invalid_credential',
      'not_authorized',
      'expired',
      'capacity_exceeded',
      'time_restricted',
      'blocklisted',
    ]);
    expect([...denied.required].sort()).toEqual([
      'access_point_id',
      'credential_value',
      'reason',
      'reason_detail',
      'timestamp',
    ]);
    const ajv = new Ajv({ strict: false, allErrors: true });
    const validate = ajv.compile(denied);
    const base = { credential_value: 'X', access_point_id: 1, timestamp: '2026-11-23T12:00:00.000Z' };
    for (const detail of [
      'type_not_permitted',
      'already_inside',
      'access_point_inactive',
      'access_point_without_zone',
      null,
    ]) {
      expect(validate({ ...base, reason: 'not_authorized', reason_detail: detail }), String(detail)).toBe(true);
    }
    expect(validate({ ...base, reason: 'anti_passback', reason_detail: null })).toBe(false);
    expect(validate({ ...base, reason: 'not_authorized', reason_detail: 'because' })).toBe(false);
    expect(validate({ ...base, reason: 'not_authorized' })).toBe(false);
  });

  it('names the messages as they are published under pusher.eventNamespace, and shows the configured public hosts', async () => {
    const namespaced = await startAppliance({
      GATEHOUSE_PUSHER_EVENT_NAMESPACE: 'App\\Events',
      GATEHOUSE_HTTP_PUBLIC_URL: 'https://doors.example.test',
      GATEHOUSE_MQTT_PUBLIC_HOST: 'mqtt.example.test',
    });
    try {
      const other = (await namespaced.request('GET', '/api/v1/asyncapi.json')).body;
      expect(other.components.messages.AccessGranted.name).toBe('App\\Events\\AccessGranted');
      expect(other.components.messages.AccessGrantedSealed.name).toBe('App\\Events\\AccessGranted');
      expect(other.components.messages.AccessGranted.title).toBe('AccessGranted');
      expect(other.servers.pusher).toMatchObject({ host: 'doors.example.test', protocol: 'wss' });
      expect(other.servers.mqtt.host).toBe(`mqtt.example.test:${namespaced.app.mqtt.ports.tcp}`);
    } finally {
      await namespaced.destroy();
    }
  });
});
