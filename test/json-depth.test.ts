import { randomUUID } from 'node:crypto';
import { sign } from '@octokit/webhooks-methods';
import { WebSocket } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JsonDepthError, MAX_JSON_DEPTH, nestsDeeperThan, parseJson } from '../src/json-depth.js';
import { blockOfEdge } from '../src/venue/row-ids.js';
import type { TestAppliance } from './helpers/appliance.js';
import { connect, connectReader, readerLogin } from './helpers/mqtt.js';
import { type ProcessAppliance, startProcessAppliance } from './helpers/process-appliance.js';

// JSON nested 100,000 levels and more (docs/rest.md: Bodies; docs/security.md: Local and device
// inputs). V8 parses it, but what walks it afterwards recursively — JSON.stringify to store an
// attendee's `extra`, to broadcast, to log — ran out of stack: a RangeError and a 500. Every JSON
// an outside party sends is checked for depth before it is parsed (src/json-depth.ts): REST and
// webhook bodies, the sync protocol, MQTT scan and gateway status payloads, WebSocket messages.
// Each is sent to a real appliance process over its own wire: a clear refusal, the process alive,
// the next request answered as usual.

const A = '/api/v1/projects/default/default';
const T = 'gatehouse/default/default';
const DEEP = 150_000;
const arrays = (depth: number, inner = '1') => `${'['.repeat(depth)}${inner}${']'.repeat(depth)}`;
const objects = (depth: number, inner = '1') => `${'{"a":'.repeat(depth)}${inner}${'}'.repeat(depth)}`;
const DEPTH_MESSAGE = /nests arrays and objects deeper than 64 levels/;
const PUSHER = {
  GATEHOUSE_PUSHER_APP_ID: 'depth',
  GATEHOUSE_PUSHER_KEY: 'depth-key',
  GATEHOUSE_PUSHER_SECRET: 'depth-secret',
};

describe('nestsDeeperThan', () => {
  it('counts arrays and objects inside one another, not brackets in strings or escaped quotes', () => {
    expect(nestsDeeperThan(arrays(64), 64)).toBe(false);
    expect(nestsDeeperThan(arrays(65), 64)).toBe(true);
    expect(nestsDeeperThan(objects(65), 64)).toBe(true);
    expect(nestsDeeperThan(`[${'[]'.repeat(1000)}]`, 2)).toBe(false); // siblings, not nesting
    expect(nestsDeeperThan(JSON.stringify({ a: '['.repeat(1000) }), 64)).toBe(false);
    expect(nestsDeeperThan(JSON.stringify({ a: `"${'['.repeat(100)}` }), 64)).toBe(false); // an escaped quote does not end the string
    expect(nestsDeeperThan(`["\\\\", ${arrays(65)}]`, 64)).toBe(true); // an escaped backslash does not escape the closing quote
  });

  it('parses what is shallow enough and refuses the rest with a SyntaxError naming the limit', () => {
    expect(parseJson(arrays(MAX_JSON_DEPTH))).toHaveLength(1);
    expect(() => parseJson(arrays(200_000))).toThrow(JsonDepthError);
    expect(() => parseJson(arrays(200_000))).toThrow(SyntaxError);
    expect(() => parseJson(arrays(65))).toThrow('it nests arrays and objects deeper than 64 levels');
    expect(parseJson(arrays(100), 128)).toHaveLength(1);
    expect(() => parseJson('{"a":')).toThrow(SyntaxError);
  });
});

describe('deeply nested JSON', () => {
  let gh: ProcessAppliance;
  let token: string;
  const raw = (method: string, path: string, body: string, headers: Record<string, string> = {}) =>
    gh.request(method, path, { token, rawBody: body, headers: { 'content-type': 'application/json', ...headers } });
  const alive = async () => {
    expect(gh.proc.proc.exitCode).toBeNull();
    expect((await gh.request('GET', '/health')).status).toBe(200);
  };

  beforeAll(async () => {
    gh = await startProcessAppliance({
      GATEHOUSE_ROLE: 'cloud',
      GATEHOUSE_MQTT_MAX_PAYLOAD_BYTES: '1048576',
      GATEHOUSE_MQTT_MAX_PACKET_BYTES: '4194304',
      GATEHOUSE_PUSHER_MAX_MESSAGE_BYTES: '4194304',
      ...PUSHER,
    });
    token = await gh.token();
    const zone = (await gh.request('POST', `${A}/access-zones`, { token, body: { name: 'Hall' } })).body.data.id;
    const door = (
      await gh.request('POST', `${A}/access-points`, {
        token,
        body: { name: 'Door', access_zone_id: zone, direction: 'both' },
      })
    ).body.data.id;
    expect(
      (await gh.request('POST', `${A}/readers`, { token, body: { identifier: 'DEEP-R', access_point_id: door } }))
        .status,
    ).toBe(201);
    expect(
      (
        await gh.request('POST', `${A}/attendees/import`, {
          token,
          body: [{ first_name: 'Ada', last_name: 'Deep', credential_value: 'TICKET-1' }],
        })
      ).status,
    ).toBeLessThan(300);
  }, 90_000);
  afterAll(() => gh?.destroy());

  it('answers a REST body nested too deep 400 in the documented envelope, and takes one 64 levels deep', async () => {
    for (const [what, body] of [
      ['arrays in extra', `{"first_name":"A","last_name":"B","extra":{"x":${arrays(DEEP)}}}`],
      ['objects in extra', `{"first_name":"A","last_name":"B","extra":${objects(DEEP)}}`],
      ['65 levels', `{"first_name":"A","last_name":"B","extra":{"x":${arrays(63)}}}`],
    ] as const) {
      const res = await raw('POST', `${A}/attendees`, body);
      expect(res.status, what).toBe(400);
      expect(res.body, what).toEqual({
        message: 'The request body is not valid JSON: it nests arrays and objects deeper than 64 levels.',
      });
    }
    const imported = await raw(
      'POST',
      `${A}/attendees/import`,
      `[{"first_name":"A","last_name":"B","extra_field":${arrays(DEEP)}}]`,
    );
    expect(imported.status).toBe(400);
    expect(imported.body.message).toMatch(DEPTH_MESSAGE);
    // Brackets inside strings are text, not nesting.
    const text = `${'['.repeat(DEEP / 10)}`;
    const inString = await gh.request('POST', `${A}/attendees`, {
      token,
      body: { first_name: 'Text', last_name: 'Brackets', extra: { note: text } },
    });
    expect(inString.status, inString.text).toBe(201);
    await alive();
    // 64 levels: the body, extra and 62 arrays inside it, stored and read back.
    const sixtyFour = await raw(
      'POST',
      `${A}/attendees`,
      `{"first_name":"Deep","last_name":"Enough","extra":{"x":${arrays(62)}}}`,
    );
    expect(sixtyFour.status, sixtyFour.text).toBe(201);
    const stored = (await gh.request('GET', `${A}/attendees/${sixtyFour.body.data.id}`, { token })).body.data.extra.x;
    expect(JSON.stringify(stored)).toBe(arrays(62));
  });

  it('answers a signed webhook nested too deep 400 {error, message}, then applies the next one', async () => {
    const source = await gh.request('POST', `${A}/integrations/webhooks`, {
      token,
      body: { kind: 'attendee-sync', name: 'Partner' },
    });
    const secret = source.body.secret as string;
    const post = async (body: string) =>
      gh.request('POST', '/webhook/v1/attendee-sync', {
        rawBody: body,
        headers: { 'content-type': 'application/json', 'X-Svc-Signature': await sign(secret, body) },
      });
    const deep = await post(
      `{"project_slug":"default","team_slug":"default","sync_mode":"upsert","attendees":[{"external_id":"E1","first_name":${arrays(DEEP)}}]}`,
    );
    expect(deep.status).toBe(400);
    expect(deep.body).toEqual({
      error: 'malformed_json',
      message: 'The request body is not valid JSON: it nests arrays and objects deeper than 64 levels.',
    });
    await alive();
    const good = await post(
      JSON.stringify({
        project_slug: 'default',
        team_slug: 'default',
        sync_mode: 'upsert',
        attendees: [{ external_id: 'E1', first_name: 'Eve' }],
      }),
    );
    expect(good.status, good.text).toBe(200);
  });

  it("refuses a sync upload nested too deep with 400, and takes an edge's upload carrying the deepest extra REST stores", async () => {
    const issued = await gh.request('POST', `${A}/sync/edges`, { token, body: { name: 'depth edge' } });
    const edgeToken = issued.body.data.token as string;
    const base = blockOfEdge(issued.body.data.id as number);
    const upload = (extra: string, id: number) =>
      gh.request('POST', `${A}/sync/upload`, {
        token: edgeToken,
        headers: { 'content-type': 'application/json', 'gatehouse-sync-protocol': '1' },
        rawBody: `{"clock":{"offset_ms":0,"synchronised":true},"backlog":0,"items":[{"kind":"change","uuid":"${randomUUID()}","event":"attendee.created","created_at":"${new Date().toISOString()}","data":{"id":${id},"first_name":"Edgy","last_name":"Deep","email":null,"attendee_type_id":null,"external_id":null,"status":"active","extra":${extra}}}]}`,
      });
    const deep = await upload(`{"x":${arrays(DEEP)}}`, base + 1);
    expect(deep.status).toBe(400);
    expect(deep.body.message).toMatch(
      /^The request body is not valid JSON: it nests arrays and objects deeper than 128 levels\.$/,
    );
    await alive();
    // An extra 63 levels deep (the most a 64-level REST body holds), inside the protocol's envelope.
    const held = await upload(`{"x":${arrays(62)}}`, base + 2);
    expect(held.status, held.text).toBe(200);
    expect(held.body.data).toMatchObject({ accepted: 1, refused: 0 });
    expect(JSON.stringify((await gh.request('GET', `${A}/attendees/${base + 2}`, { token })).body.data.extra.x)).toBe(
      arrays(62),
    );
  });

  it('answers an MQTT scan nested too deep on the decisions topic, and decides the next one', async () => {
    const creds = await readerLogin(gh as unknown as TestAppliance, token, A, 'DEEP-R');
    const { client: reader, inbox: box } = await connectReader(null, creds, {}, `mqtt://127.0.0.1:${creds.mqtt.port}`);
    try {
      await reader.publishAsync(
        creds.mqtt.scans_topic,
        `{"request_id":"deep-1","credential_value":${arrays(DEEP, '"TICKET-1"')}}`,
        { qos: 1 },
      );
      expect((await box.next((m) => m.payload.request_id === 'deep-1', 10_000)).payload).toEqual({
        request_id: 'deep-1',
        error: 'malformed_json',
        message: 'The scan is not valid JSON: it nests arrays and objects deeper than 64 levels.',
      });
      await alive();
      await reader.publishAsync(
        creds.mqtt.scans_topic,
        JSON.stringify({ request_id: 'deep-2', credential_value: 'TICKET-1' }),
        { qos: 1 },
      );
      expect((await box.next((m) => m.payload.request_id === 'deep-2', 10_000)).payload).toMatchObject({
        request_id: 'deep-2',
        access_granted: true,
      });
    } finally {
      await reader.endAsync();
    }

    // A gateway's status report, the other JSON the broker reads.
    const gw = await gh.request('POST', `${A}/gateways`, {
      token,
      body: { identifier: 'GW-DEEP', name: 'Deep gateway', reader_ids: [] },
    });
    const gateway = await connect(`mqtt://127.0.0.1:${creds.mqtt.port}`, {
      username: 'GW-DEEP',
      password: gw.body.token,
    });
    try {
      await gateway.publishAsync(
        `${T}/gateways/GW-DEEP/status`,
        `{"gateway_id":"GW-DEEP","status":"online","readers":${arrays(DEEP)}}`,
        { qos: 1 },
      );
      await alive();
      await gateway.publishAsync(
        `${T}/gateways/GW-DEEP/status`,
        JSON.stringify({ gateway_id: 'GW-DEEP', status: 'online' }),
        { qos: 1 },
      );
      await expect
        .poll(async () => (await gh.request('GET', `${A}/gateways/${gw.body.data.id}`, { token })).body.data.status, {
          timeout: 10_000,
        })
        .toBe('online');
      expect(
        (await gh.request('GET', `${A}/gateways/${gw.body.data.id}`, { token })).body.data.last_report,
      ).toMatchObject({ gateway_id: 'GW-DEEP', status: 'online' });
    } finally {
      await gateway.endAsync();
    }
  });

  it('answers a WebSocket message nested too deep with pusher:error and keeps the connection', async () => {
    const ws = new WebSocket(
      `${gh.url.replace('http', 'ws')}/app/${PUSHER.GATEHOUSE_PUSHER_KEY}?protocol=7&client=js&version=8.4.0`,
    );
    const frames: { event: string; data: unknown }[] = [];
    const next = async (event: string) => {
      const deadline = Date.now() + 10_000;
      for (;;) {
        const i = frames.findIndex((f) => f.event === event);
        if (i >= 0) return frames.splice(i, 1)[0]!;
        if (Date.now() > deadline) throw new Error(`no ${event}; got ${JSON.stringify(frames)}`);
        await new Promise((r) => setTimeout(r, 10));
      }
    };
    ws.on('message', (m) => frames.push(JSON.parse(String(m))));
    await next('pusher:connection_established');
    try {
      ws.send(`{"event":"pusher:ping","data":${arrays(DEEP)}}`);
      expect((await next('pusher:error')).data).toEqual({
        code: null,
        message: 'Messages must not nest arrays and objects deeper than 64 levels',
      });
      // JSON inside the data string, as pusher-js sends a subscription's data.
      ws.send(
        JSON.stringify({ event: 'pusher:subscribe', data: `{"channel":"public-x","auth":${arrays(DEEP, '""')}}` }),
      );
      expect((await next('pusher:error')).data).toEqual({
        code: null,
        message: 'Messages must not nest arrays and objects deeper than 64 levels',
      });
      await alive();
      ws.send(JSON.stringify({ event: 'pusher:ping', data: {} }));
      await next('pusher:pong');
      expect(ws.readyState).toBe(WebSocket.OPEN);
    } finally {
      ws.close();
    }
  });
});
