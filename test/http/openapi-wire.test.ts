import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { WEBHOOK_TEST_ENV } from '../helpers/webhooks.js';
import { accountCases } from './wire/cases-accounts.js';
import { deviceCases, inFlightCases } from './wire/cases-devices.js';
import { outgoingCases } from './wire/cases-outgoing.js';
import { syncCases } from './wire/cases-sync.js';
import { bridgeCases } from './wire/cases-bridge.js';
import { stalled } from './wire/pipelined.js';
import { venueCases } from './wire/cases-venue.js';
import { namesError, operationsOf, problemsWith, requestProblems, type Operation } from './wire/check.js';
import { c, makeVenue } from './wire/fixtures.js';
import { fill, genericCases } from './wire/generic.js';
import { A, PUSHER_ENV, World, type Case } from './wire/world.js';
import { underWriteLock, WriteLock } from './wire/write-lock.js';
import { cloudOwnedResource } from '../../src/http/cloud-owned.js';

// The served OpenAPI document against what the appliance really answers (docs/rest.md): every
// operation of the document is sent its happy path and every refusal it can give (the case tables
// in wire/, and the refusals its declaration implies, wire/generic.ts), each answer is judged
// against the document (wire/check.ts), and the last test fails when an operation was never
// exercised or one of its declared statuses was never answered — so a new route, or a new
// answer of an old one, must come with its cases. The happy requests are sent once more while
// another connection holds SQLite's write lock (wire/write-lock.ts: 503 store_busy exactly where
// the document declares it), and each webhook's accepted body twice at once (wire/pipelined.ts:
// 409 request_in_progress exactly where it is declared, the first answer again elsewhere).

const doc = async (gh: TestAppliance) => operationsOf((await gh.request('GET', '/api/v1/openapi.json')).body);

describe('the OpenAPI document, against the wire', () => {
  const answered = new Map<string, Set<number>>();
  let gh: TestAppliance;
  let w: World;
  let operations: Map<string, Operation>;

  /** Sends each case in order; answers what is wrong (the status it expects, anything the document
   * does not say, and a successful request the document would not let a client send). */
  async function run(cases: Case[], ops: Map<string, Operation>, world: World = w): Promise<string[]> {
    const problems: string[] = [];
    for (const k of cases) {
      const operation = ops.get(k.op);
      if (!operation) {
        problems.push(`${k.op}: the table names an operation the document does not have`);
        continue;
      }
      world.last = null;
      const res = await k.send();
      if (res.status < 300 && world.last)
        for (const problem of requestProblems(operation, world.last)) problems.push(`${k.op} (${k.why}): ${problem}`);
      if (res.status !== k.status)
        problems.push(
          `${k.op} (${k.why}): answered ${res.status}, the case expects ${k.status}: ${res.text.slice(0, 200)}`,
        );
      else if (k.error && !namesError(res, k.error))
        problems.push(`${k.op} (${k.why}): answered ${res.status} but not ${k.error}: ${res.text.slice(0, 200)}`);
      for (const name of k.headers ?? [])
        if (!res.headers.has(name)) problems.push(`${k.op} (${k.why}): answered ${res.status} without ${name}`);
      for (const problem of problemsWith(operation, res)) problems.push(`${k.op} (${k.why}): ${problem}`);
      if (!answered.has(k.op)) answered.set(k.op, new Set());
      answered.get(k.op)!.add(res.status);
    }
    return problems;
  }

  beforeAll(async () => {
    // Rate limits on but out of reach, so every limited answer carries its X-RateLimit-* headers.
    const limits = {
      GATEHOUSE_RATE_LIMIT_STANDARD: '1000000',
      GATEHOUSE_RATE_LIMIT_BULK: '1000000',
      GATEHOUSE_RATE_LIMIT_SEARCH: '1000000',
      GATEHOUSE_RATE_LIMIT_SYNC: '1000000',
      GATEHOUSE_READERS_VERIFY_PER_MINUTE: '1000',
    };
    gh = await startAppliance({ ...PUSHER_ENV, ...limits });
    w = await new World(gh).init();
    operations = await doc(gh);
  });
  afterAll(() => gh.destroy());

  it('answers every case of the table, and every refusal its declaration implies, as the document declares it', async () => {
    const venue = await makeVenue(w);
    const table = [
      ...accountCases(w, venue),
      ...venueCases(w, venue),
      ...deviceCases(w, venue),
      ...outgoingCases(w, venue),
      ...syncCases(w, venue),
      ...bridgeCases(w, venue),
    ];
    const generic = gh.app.routes.flatMap((route) =>
      genericCases(w, route, operations.get(route.operationId)!, gh.app.routes),
    );
    expect(await run([...table, ...generic], operations)).toEqual([]);
  }, 240_000);

  it('answers 500 in each error envelope when the store refuses a write under a route', async () => {
    const store = new BetterSqlite3(join(gh.dataDir, 'gatehouse.db'));
    store.pragma('busy_timeout = 10000');
    const triggers = ['teams', 'finalized_uploads'].map((table) => `wire_refuse_${table}`);
    try {
      for (const [i, table] of ['teams', 'finalized_uploads'].entries())
        store.exec(
          `CREATE TRIGGER ${triggers[i]} BEFORE INSERT ON ${table} BEGIN SELECT RAISE(ABORT, 'refused by the wire test'); END`,
        );
      const problems = await run(
        [
          c('teams.store', 500, 'a store that refuses the insert', () =>
            w.api('POST', '/api/v1/teams', { name: 'Refused' }),
          ),
          c(
            'webhooks.large-upload-finalized',
            500,
            'a store that refuses the insert',
            w.signed('upload-finalized', JSON.stringify({ name: 'refused.txt', bucket: 'uploads' })),
          ),
        ],
        operations,
      );
      expect(problems).toEqual([]);
    } finally {
      for (const name of triggers) store.exec(`DROP TRIGGER IF EXISTS ${name}`);
      store.close();
    }
  });

  it('answers 429 with Retry-After and the rate-limit headers on every limited operation, once its budget is spent', async () => {
    // A window of an hour: the budgets spent below stay spent however slow the machine is.
    const limits = {
      GATEHOUSE_RATE_LIMIT_STANDARD: '1',
      GATEHOUSE_RATE_LIMIT_BULK: '1',
      GATEHOUSE_RATE_LIMIT_SEARCH: '1',
      GATEHOUSE_RATE_LIMIT_WINDOW_SECONDS: '3600',
      GATEHOUSE_RATE_LIMIT_SYNC: '1',
      GATEHOUSE_RATE_LIMIT_SYNC_WINDOW_SECONDS: '3600',
      GATEHOUSE_READERS_VERIFY_PER_MINUTE: '1',
    };
    const tight = await startAppliance({ ...PUSHER_ENV, ...limits });
    try {
      const token = await tight.token(); // spends the client address's standard budget
      const ops = await doc(tight);
      // Spend the token's budget of each class (an edge issued with its standard one), the edge's, and the address's OTP attempts.
      const syncToken = (await tight.request('POST', `${A}/sync/edges`, { token, body: { name: 'tight edge' } })).body
        .data.token as string;
      const asEdge = { token: syncToken, headers: { 'Gatehouse-Sync-Protocol': '1' } };
      await tight.request('GET', '/api/v1/sync/hello', asEdge);
      await tight.request('GET', '/api/v1/me', { token });
      await tight.request('GET', `${A}/attendees?search=spent`, { token });
      await tight.request('POST', `${A}/attendees/import`, { token, body: [] });
      const attempt = () =>
        tight.request('POST', '/api/v1/reader-otp/verify', { body: { reader_identifier: 'R-1', otp: '123456' } });
      await attempt();
      const limited = tight.app.routes.filter((r) => r.rateClass !== 'none');
      const as = (r: (typeof limited)[number]) =>
        r.ability === 'public' ? {} : r.ability === 'sync' ? asEdge : { token };
      const cases = limited.map((r) =>
        c(r.operationId, 429, 'past its class budget', () => tight.request(r.method, fill(r.path), as(r))),
      );
      expect(await run([c('readers.verify-otp', 429, 'past readers.verifyPerMinute', attempt), ...cases], ops)).toEqual(
        [],
      );
    } finally {
      await tight.destroy();
    }
  }, 60_000);

  it('answers the conflicts only unsigned webhooks meet, and 503 while the access-event log is behind, on a development appliance', async () => {
    const dev = await startAppliance({ ...WEBHOOK_TEST_ENV, GATEHOUSE_STORE_READ_WAIT_MS: '300' });
    try {
      const d = await new World(dev).init();
      await d.api('POST', '/api/v1/projects', { name: 'Other', slug: 'other' });
      for (const project of [A, '/api/v1/projects/default/other'])
        await d.create(`${project}/gateways`, { identifier: 'GW-TWICE' });
      const zone = await d.create(`${A}/access-zones`, { name: 'Hall' });
      const door = await d.create(`${A}/access-points`, { name: 'Door', access_zone_id: zone });
      const ops = await doc(dev);
      const unsigned = (path: string, json: unknown) => () => d.send({ method: 'POST', path, json });
      const problems = await run(
        [
          c(
            'webhooks.mqtt-gateway-status',
            409,
            'an unsigned report of an identifier two projects use',
            unsigned('/webhook/v1/mqtt-gateway-status', { gateway_id: 'GW-TWICE', status: 'online' }),
          ),
          c(
            'webhooks.large-upload-finalized',
            409,
            'an unsigned notice while two projects exist',
            unsigned('/webhook/v1/large-upload-finalized', { name: 'x.csv', bucket: 'b' }),
          ),
        ],
        ops,
        d,
      );
      // Another connection holds SQLite's write lock: the journal's ingest cannot commit.
      await d.api('GET', '/api/v1/me'); // the token's last_used_at is written now, not while the lock is held
      const blocker = new BetterSqlite3(join(dev.dataDir, 'gatehouse.db'));
      blocker.pragma('busy_timeout = 0');
      blocker.prepare('BEGIN IMMEDIATE').run();
      try {
        const scanned = await d.api('POST', `${A}/access-points/${door}/scan`, { credential_value: 'BEHIND-1' });
        expect(scanned.status).toBe(200);
        const behind = [
          c('access-events.index', 503, 'the log behind an answered scan', () => d.api('GET', `${A}/access-events`)),
          c('analytics.metrics', 503, 'the log behind an answered scan', () =>
            d.api('POST', `${A}/analytics/metrics`, {
              metric: 'access_summary',
              start_date: '2026-01-01',
              end_date: '2030-01-01',
            }),
          ),
        ];
        problems.push(...(await run(behind, ops, d)));
      } finally {
        blocker.prepare('ROLLBACK').run();
        blocker.close();
      }
      expect(problems).toEqual([]);
    } finally {
      await dev.destroy();
    }
  }, 60_000);

  it('answers 503 store_busy with Retry-After on every operation that writes, while another connection holds the write lock, and every other as usual', async () => {
    // A short busy timeout: each write under the lock waits this long on the event loop first.
    const busy = await startAppliance({ ...PUSHER_ENV, GATEHOUSE_STORE_BUSY_TIMEOUT_MS: '100' });
    const lock = new WriteLock(busy);
    try {
      const b = await new World(busy).init();
      const venue = await makeVenue(b);
      const ops = await doc(busy);
      const table = [
        ...accountCases(b, venue),
        ...venueCases(b, venue),
        ...deviceCases(b, venue),
        ...outgoingCases(b, venue),
        ...syncCases(b, venue),
        ...bridgeCases(b, venue),
      ];
      const wrong: string[] = [];
      const problems = await run(underWriteLock(b, lock, ops, table, wrong), ops, b);
      expect([...wrong, ...problems]).toEqual([]);
    } finally {
      lock.close();
      await busy.destroy();
    }
  }, 240_000);

  it('answers 409 request_in_progress to a signed body sent again while its first request is still being handled, where a webhook can be', async () => {
    // A retry waits for the first's answer at most replayWaitMs; 0 answers it at once.
    const quick = await startAppliance({ GATEHOUSE_INCOMING_WEBHOOKS_REPLAY_WAIT_MS: '0' });
    try {
      const q = await new World(quick).init();
      await makeVenue(q);
      const ops = await doc(quick);
      expect(await run(inFlightCases(q, ops), ops, q)).toEqual([]);
    } finally {
      await quick.destroy();
    }
  }, 60_000);

  it('answers 503 scan_answer_timeout with Retry-After to a scan the journal does not complete in time', async () => {
    const held = await startAppliance({ ...PUSHER_ENV, GATEHOUSE_MQTT_ANSWER_TIMEOUT_MS: '300' });
    try {
      const h = await new World(held).init();
      const v = await makeVenue(h);
      const ops = await doc(held);
      const release = held.app.eventLog.hold(); // a stalled journal: writes neither done nor failed
      try {
        const cases = [
          c('access-points.scan', 503, 'a scan whose event the journal does not take in time', () =>
            h.api('POST', `${A}/access-points/${v.door}/scan`, { credential_value: 'CRED-1', request_id: 'held-rest' }),
          ),
          c(
            'webhooks.access-event',
            503,
            'a scan whose event the journal does not take in time',
            h.signed(
              'access-event',
              JSON.stringify({ reader_id: 'R-1', credential_value: 'CRED-1', request_id: 'held-hook' }),
            ),
          ),
        ];
        expect(await run(cases, ops, h)).toEqual([]);
      } finally {
        release();
      }
    } finally {
      await held.destroy();
    }
  }, 60_000);

  it('answers 408 to a body that stops halfway, on every operation that takes a body', async () => {
    const slow = await startAppliance({ ...PUSHER_ENV, GATEHOUSE_HTTP_BODY_TIMEOUT_MS: '300' });
    try {
      const v = await new World(slow).init();
      const ops = await doc(slow);
      const csrf = await v.csrf();
      const withBody = slow.app.routes.filter((r) => r.body);
      const sync = await v.syncToken();
      // All sent at once: each waits out the deadline on its own connection.
      const answers = withBody.map((r) =>
        stalled(slow.url, {
          method: r.method,
          path: fill(r.path),
          json: { filler: 'x'.repeat(64) },
          ...(r.ability === 'sync'
            ? { token: sync, headers: { 'Gatehouse-Sync-Protocol': '1' } }
            : r.ability !== 'public'
              ? { token: v.admin }
              : {}),
          ...(r.csrf ? { headers: csrf } : {}),
        }),
      );
      const cases = withBody.map((r, i) => c(r.operationId, 408, 'a body that stops halfway', () => answers[i]!));
      expect(await run(cases, ops, v)).toEqual([]);
    } finally {
      await slow.destroy();
    }
  }, 60_000);

  it('answers 409 edge_read_only on an edge to every write of the resources it takes from its cloud', async () => {
    // An edge of the wire appliance (a cloud), linked before the writes are sent.
    const edge = await startAppliance({
      GATEHOUSE_ROLE: 'edge',
      GATEHOUSE_CLOUD_URL: gh.url,
      GATEHOUSE_SYNC_TOKEN: await w.syncToken(),
    });
    try {
      const e = await new World(edge).init();
      const ops = await doc(edge);
      const deadline = Date.now() + 20_000;
      while ((await e.api('GET', `${A}/sync/status`)).body.data?.edge_id == null) {
        if (Date.now() > deadline) throw new Error('the edge did not link to the wire cloud');
        await new Promise((r) => setTimeout(r, 100));
      }
      // Valid bodies: the refusal comes after the body's validation, before the handler (pipeline.ts).
      const bodies: Record<string, unknown> = {
        'access-zones': { name: 'Local zone' },
        'access-points': { name: 'Local door', access_zone_id: 1, direction: 'in' },
        readers: { identifier: 'LOCAL-1', type: 'qr', access_point_id: 1 },
        'attendee-types': { name: 'Local type', slug: 'local-type', zone_ids: [1] },
        'time-restrictions': {
          access_zone_id: 1,
          attendee_type_id: 1,
          days_of_week: [1],
          start_time: '08:00',
          end_time: '20:00',
        },
        blocklist: { attendee_id: 1, reason: 'local' },
      };
      const writes = edge.app.routes.filter((r) => r.method !== 'GET' && r.project && cloudOwnedResource(r.path));
      expect(writes.length).toBeGreaterThanOrEqual(16);
      const cases = writes.map((r) => {
        const resource = /\/(access-zones|access-points|readers|attendee-types|time-restrictions|blocklist)/.exec(
          r.path,
        )![1]!;
        // A blocklist entry's update takes only its reason (its attendee or credential is fixed).
        const json =
          r.method === 'DELETE'
            ? undefined
            : r.operationId === 'blocklist.update'
              ? { reason: 'local' }
              : bodies[resource];
        return c(
          r.operationId,
          409,
          'on an edge, in the project it replicates',
          () => e.api(r.method, fill(r.path), json),
          { error: 'edge_read_only' },
        );
      });
      expect(await run(cases, ops, e)).toEqual([]);
    } finally {
      await edge.destroy();
    }
  }, 60_000);

  it('has answered every status the document declares, for every operation in it', () => {
    const missing: string[] = [];
    for (const operation of operations.values()) {
      const got = answered.get(operation.id);
      if (!got) {
        missing.push(`${operation.id}: never exercised; add its cases to test/http/wire/`);
        continue;
      }
      for (const status of Object.keys(operation.spec.responses).map(Number)) {
        // 500 is declared everywhere (the error middleware's answer to a bug) and answered once per envelope above;
        // /ready answers 503 only while the appliance starts or drains, which a request cannot be sure to meet.
        if (got.has(status) || status === 500 || (operation.id === 'ready.show' && status === 503)) continue;
        missing.push(`${operation.id}: declares ${status}, never answered`);
      }
    }
    expect(missing).toEqual([]);
    expect([...answered].filter(([, statuses]) => statuses.has(500)).map(([op]) => op)).toEqual([
      'teams.store',
      'webhooks.large-upload-finalized',
    ]);
  });
});
