// bench:webhooks — outgoing webhook delivery (docs/performance.md, "Outgoing webhooks"). Each run:
//   webhooks.deliveries_per_s_1_sub:   events already in the feed, one subscription, to a local
//                                      receiver in its own process, until all are received;
//   webhooks.deliveries_per_s_50_subs: the same with 50 subscriptions (every one gets every event);
//   webhooks.p99_commit_to_receipt_ms: attendees created at 500/s (each a committed change and
//                                      its outbox row), from the commit's return to the receipt;
//   webhooks.mqtt_decisions_per_s_0_subs / _50_subs and their ratio: bench/mqtt.ts's closed-loop
//                                      throughput with none and with 50 subscriptions to access.*.
// The appliance runs in this process (Gatehouse), the receiver in another. BENCH_QUICK=1 is shorter.
import { type ChildProcess, fork, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Gatehouse } from '../src/app.js';
import { benchConfig } from './bench-config.js';

const quick = process.env.BENCH_QUICK === '1';
const line = (name: string, value: string | number, unit: string) => console.log(`${name}: ${value} ${unit}`);
const now = () => performance.timeOrigin + performance.now();

type Report = { count: number; arrivals: [string, number][] };
async function startReceiver(): Promise<{
  url: string;
  ask(): Promise<Report>;
  reset(): void;
  stop(): void;
  proc: ChildProcess;
}> {
  const proc = fork('bench/webhook-receiver.mjs', [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const port = await new Promise<number>((resolve) => proc.once('message', (m: { port: number }) => resolve(m.port)));
  return {
    url: `http://127.0.0.1:${port}/hook`,
    proc,
    ask: () =>
      new Promise<Report>((resolve) => {
        proc.once('message', (m: Report) => resolve(m));
        proc.send('report');
      }),
    reset: () => proc.send('reset'),
    stop: () => proc.send('stop'),
  };
}

const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-webhooks-'));
const config = benchConfig(dataDir, { GATEHOUSE_WEBHOOK_ALLOW_INSECURE: '1' });
const app = new Gatehouse(config, { log: pino({ level: 'warn' }) });
await app.start();
const receiver = await startReceiver();
try {
  const { outgoing, store, venue } = app.services;
  const projectId = store.db.prepare("SELECT id FROM projects WHERE slug = 'default'").pluck().get() as number;
  const subscribe = (n: number, events: string[]) =>
    Array.from(
      { length: n },
      () =>
        outgoing.subscriptions.create({ projectId, userId: null, url: receiver.url, events, scheme: 'sha256' }).row.id,
    );
  const dropAll = () => {
    for (const row of outgoing.subscriptions.all()) outgoing.subscriptions.delete(row.id);
  };
  /** `n` outbox rows at once, as n committed changes would leave them. */
  const fillOutbox = (n: number) => {
    const insert = store.db.prepare(
      "INSERT INTO domain_events (uuid, project_id, event, data, created_at) VALUES (?, ?, 'attendee.updated', ?, ?)",
    );
    store.db.transaction(() => {
      for (let i = 0; i < n; i++)
        insert.run(
          crypto.randomUUID(),
          projectId,
          JSON.stringify({ attendee_id: i, first_name: 'Bench', last_name: `No${i}` }),
          new Date().toISOString(),
        );
    })();
  };
  const throughput = async (subscriptions: number, events: number) => {
    dropAll();
    subscribe(subscriptions, ['attendee.updated']);
    receiver.reset();
    fillOutbox(events);
    const started = performance.now();
    outgoing.dispatcher.wake();
    const expected = subscriptions * events;
    for (;;) {
      await new Promise((r) => setTimeout(r, 50));
      if ((await receiver.ask()).count >= expected) break; // counts since the last report: keep a total
    }
    return expected / ((performance.now() - started) / 1000);
  };
  // The receiver's count is per report: wrap to keep a running total.
  let total = 0;
  const ask = receiver.ask;
  receiver.ask = async () => {
    const r = await ask();
    total += r.count;
    return { count: total, arrivals: r.arrivals };
  };
  const resetTotal = receiver.reset;
  receiver.reset = () => {
    total = 0;
    resetTotal();
  };

  const events = quick ? 2000 : 10_000;
  line('webhooks.deliveries_per_s_1_sub', Math.round(await throughput(1, events)), '/s');
  line('webhooks.deliveries_per_s_50_subs', Math.round(await throughput(50, quick ? 100 : 400)), '/s');

  // Commit to receipt at 500 events/s: attendees created through the venue service.
  dropAll();
  subscribe(1, ['attendee.created']);
  receiver.reset();
  const count = quick ? 1000 : 5000;
  const ids = new Map<number, number>(); // attendee id -> commit time
  const startedAt = performance.now();
  for (let i = 0; i < count; i++) {
    const due = startedAt + i * 2; // 500/s
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const row = venue.attendees.create(projectId, { first_name: 'Rate', last_name: `No${i}` } as never);
    ids.set(row.id, now());
  }
  const arrivals: [string, number][] = [];
  while (arrivals.length < count) {
    await new Promise((r) => setTimeout(r, 50));
    arrivals.push(...(await receiver.ask()).arrivals);
  }
  // Event id -> attendee id, from the outbox.
  const byEvent = new Map(
    (
      store.db.prepare("SELECT uuid, data FROM domain_events WHERE event = 'attendee.created'").all() as {
        uuid: string;
        data: string;
      }[]
    ).map((r) => [r.uuid, (JSON.parse(r.data) as { attendee_id: number }).attendee_id]),
  );
  const latencies = arrivals
    .map(([id, at]) => at - ids.get(byEvent.get(id)!)!)
    .filter((x) => Number.isFinite(x))
    .sort((a, b) => a - b);
  line('webhooks.p50_commit_to_receipt_ms', latencies[Math.floor(latencies.length * 0.5)]!.toFixed(2), 'ms');
  line('webhooks.p99_commit_to_receipt_ms', latencies[Math.floor(latencies.length * 0.99)]!.toFixed(2), 'ms');
} finally {
  receiver.stop();
  await app.stop();
  rmSync(dataDir, { recursive: true, force: true });
}

// MQTT throughput with and without 50 subscriptions to access.* (bench/mqtt.ts in its own processes).
const mqttRate = (subs: number) => {
  const out = spawnSync(process.execPath, ['bench/run-ts.mjs', 'bench/mqtt.ts'], {
    env: {
      ...process.env,
      BENCH_MQTT_WEBHOOK_SUBS: String(subs),
      BENCH_MQTT_SECONDS: quick ? '2' : '5',
      BENCH_MQTT_ONLY_APPLIANCE: '1',
    },
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  const m = /^mqtt\.decisions_per_s: (\d+)/m.exec(out.stdout);
  if (!m) throw new Error(`bench/mqtt.ts printed no decisions_per_s:\n${out.stdout}\n${out.stderr.slice(-2000)}`);
  return Number(m[1]);
};
const none = mqttRate(0);
const fifty = mqttRate(50);
line('webhooks.mqtt_decisions_per_s_0_subs', none, '/s');
line('webhooks.mqtt_decisions_per_s_50_subs', fifty, '/s');
line('webhooks.mqtt_ratio_50_subs_to_none', (fifty / none).toFixed(3), 'x');
